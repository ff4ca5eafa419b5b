"""Never silently wrong (issue 12): non-finite fits and decisions raise with the cause."""

import numpy as np
import pytest

from svmgpu import LSSVC, ReducedSVC, UniSVC, UniSVR
from svmgpu.backend import to_device
from svmgpu.datasets import make_checkerboard


def test_nan_coefficients_raise_at_fit(device):
    """LSSVC with a degree-7 polynomial kernel on float32 inputs of size 1e3: the kernel
    overflows float32 and every decision value would be NaN (predict: one class)."""
    X, y = make_checkerboard(300, random_state=0)
    Xd = to_device((X * 1e3).astype(np.float32), device)
    with pytest.raises(FloatingPointError, match="NaN or infinite.*StandardScaler"):
        LSSVC(kernel="poly", degree=7, gamma=1.0).fit(Xd, to_device(y, device))
    # the same data, scaled: a finite model
    LSSVC(kernel="poly", degree=7, gamma=1.0).fit(to_device(X.astype(np.float32), device),
                                                  to_device(y, device))


@pytest.mark.parametrize("make", [
    lambda: LSSVC(kernel="poly", degree=7, gamma=1.0, dtype="float32"),
    lambda: UniSVC(kernel="poly", degree=7, gamma=1.0, rank=40, random_state=0,
                   dtype="float32"),
    lambda: ReducedSVC(kernel="poly", degree=7, gamma=1.0, rank=40, random_state=0,
                       dtype="float32"),
])
def test_non_finite_decisions_raise_instead_of_predicting(make, device):
    X, y = make_checkerboard(300, random_state=1)
    clf = make().fit(to_device(X.astype(np.float32), device), to_device(y, device))
    huge = to_device((X[:20] * 1e7).astype(np.float32), device)
    for call in (clf.predict, clf.decision_function):
        with pytest.raises(FloatingPointError, match="decision values are NaN or infinite"):
            call(huge)
    clf.predict(to_device(X[:20].astype(np.float32), device))  # finite inputs still predict


def test_regressor_non_finite_predictions_raise():
    x = np.linspace(-1, 1, 200)[:, None]
    reg = UniSVR(kernel="poly", degree=7, gamma=1.0, rank=30, random_state=0,
                 dtype="float32").fit(x.astype(np.float32), np.sin(3 * x[:, 0]))
    with pytest.raises(FloatingPointError, match="NaN or infinite"):
        reg.predict((x * 1e7).astype(np.float32))


def test_overflowing_features_raise_for_every_feature_builder(device):
    """Nyström, pivoted-Cholesky and reduced-kernel features check their values once."""
    from svmgpu.kernels import Polynomial, kernel_columns
    from svmgpu.lowrank import nystrom, pivoted_cholesky

    X, _ = make_checkerboard(200, random_state=2)
    big = to_device((X * 1e3).astype(np.float32), device)
    kern = Polynomial(gamma=1.0, degree=7, coef0=0.0)
    for build in (lambda: nystrom(big, kern, 20, random_state=0),
                  lambda: pivoted_cholesky(big, kern, 20),
                  lambda: kernel_columns(kern, big, big[:10, ...])):
        with pytest.raises(FloatingPointError, match="kernel values are NaN or infinite"):
            build()
