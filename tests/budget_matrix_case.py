"""The memory-budget matrix of one estimator (tests/test_robustness.py; issue 26, item 3):
every option of the estimator (default, float32, sample weights, sparse input, three classes,
probability=True, the pivoted-Cholesky factor or reduced set, SVC's exact path) fitted with
``memory_budget=BUDGET`` on M rows, in one process, one JSON line per case with the peak
resident memory above the RSS just before the case (VmHWM reset per case; run with
``MALLOC_MMAP_THRESHOLD_=131072`` so that freed arrays leave the RSS) and the outcome
("fitted", or the MemoryError that refused the case).

    python tests/budget_matrix_case.py NAME BUDGET M
"""
import json
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier

from svmgpu.estimators import estimator_classes

name, budget, m = sys.argv[1], sys.argv[2], int(sys.argv[3])
cls = estimator_classes()[name]
params = cls().get_params()
rng = np.random.default_rng(0)
d = 20
X = rng.standard_normal((m, d))
y2 = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.5).astype(int)
y3 = np.digitize(X[:, 0], [-0.4, 0.4])
t = np.sin(X[:, 0]) + X[:, 1]
w = rng.uniform(0.5, 2.0, m)
ms = m // 2  # (sparse rows: GS-SVM's sparse kernel columns are slow)
Xs = sp.random(ms, 200, density=0.05, format="csr", random_state=1, dtype=np.float64)
Xs.data[:] = 1.0
ys = (np.asarray(Xs[:, :20].sum(axis=1)).ravel() > 1).astype(int)
clf = is_classifier(cls())
base_kw = {}
if "rank" in params:
    base_kw["rank"] = 200
if "random_state" in params:
    base_kw["random_state"] = 0
if name in ("SVC", "SVR"):
    base_kw["solver"] = "lowrank"
cases = {"default": (X, y2 if clf else t, {}, None),  # (name: X, y, parameters, weights)
         "float32": (X.astype(np.float32), y2 if clf else t, {}, None),
         "weights": (X, y2 if clf else t, {}, w),
         "sparse": (Xs, ys if clf else np.asarray(Xs[:, 0].todense()).ravel(), {}, None)}
if clf:
    cases["multiclass"] = (X, y3, {}, None)
    if "probability" in params:
        cases["probability"] = (X, y2, {"probability": True}, None)
if "lowrank" in params:
    cases["pivoted_cholesky"] = (X, y2 if clf else t, {"lowrank": "pivoted_cholesky"}, None)
if "reduced_set" in params:
    cases["pivoted_cholesky"] = (X, y2, {"reduced_set": "pivoted_cholesky"}, None)
if name in ("SVC", "SVR"):
    cases["exact"] = (X[:5000], (y2 if clf else t)[:5000], {"solver": "exact", "rank": "auto"}, None)
# imports and BLAS start-up first
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    cls(**base_kw).fit(X[:500], (y2 if clf else t)[:500])

def status(key):
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(key))

for case, (Xc, yc, kw, sw) in cases.items():
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    base = status("VmRSS:")
    t0 = time.perf_counter()
    est = cls(**{**base_kw, **kw}, memory_budget=budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xc, yc, **({} if sw is None else {"sample_weight": sw}))
        out = "fitted"
    except MemoryError as exc:
        out = "MemoryError: " + str(exc)[:150]
    except Exception as exc:  # noqa: BLE001 - reported: the test fails on it
        out = f"{type(exc).__name__}: {str(exc)[:150]}"
    peak = status("VmHWM:") - base
    print(json.dumps({"estimator": name, "case": case, "peak": peak, "outcome": out,
                      "seconds": round(time.perf_counter() - t0, 2)}), flush=True)
    del est
