"""Issue 27: ``svmgpu.SVC()`` / ``SVR()`` against ``sklearn.svm.SVC()`` / ``SVR()``, both with all
defaults, features standardized, on the data most users have, in the same run.

Small sets (the exact path's domain): iris, wine, breast cancer, digits (75 % / 25 % split, seed
0); medium: ``make_classification(25000, n_features=20, n_informative=10)`` at 5,000, 10,000
and 20,000 training rows (5,000 test rows), and LIBSVM's ijcnn1 (49,990 / 91,701, as shipped;
``--ijcnn1 DIR``, default ../shared/data; ``--ijcnn1 ''`` leaves it out), also with LIBSVM's tuned
``C=32, gamma=2`` for both; Covtype's 7 classes on ``--covtype-rows`` (50,000) training rows of
DC-SVM's split (features in [0, 1]), 50,000 test rows (``--covtype ''`` leaves it out); with
``--digits28 ROWS`` an image-like 10-class stand-in for a 60,000 × 784 image set
(``_cases.digits28_split``, 10,000 test images; pixels in [0, 1] as they are), and with
``--digits28-hard ROWS`` its harder variant (``hard=True``); with ``--noisy ROWS,...`` noisy
sets at C = 10 (:data:`NOISY_PARAMS`; ``--small ''`` leaves the small sets out). Regression:
``make_friedman1(noise=1)`` at 2,000 and 20,000 training rows, ``make_friedman2`` and
``make_friedman3`` (noise 0, targets standardized) at 20,000 (5,000 test rows), R². Each fit is timed
``--repeats`` times after one warm-up fit on fewer than ``WARMUP_BELOW`` (50,000) rows: the first
fit of a process pays its imports and BLAS start-up, and on this VM the first touch of memory
the process has not used yet, about 2 s/GB (ijcnn1: svmgpu's first fit 0.96 s, later ones 0.54 s;
scikit-learn's kernel cache of 200 MB is such memory too); Covtype's 50,000 rows, where
scikit-learn takes minutes, get none. A method's repeats end once its timed fits reach
``REPEAT_SECONDS`` (2 s) in all (at least one fit; the median is recorded). The test accuracy,
the agreement of the predictions and the number of support vectors are recorded. Each method
starts after a pause of ``PAUSE`` seconds: after a multi-threaded BLAS call the library's idle
threads keep spinning for a while, and on this 2-core VM they slowed the next method's first
millisecond fits 2× (breast cancer right after the Nystroem peer's wine fits: 7.7–7.9 ms for
three repeats, then 3.5 ms). On sets of fewer than ``ROUNDS_BELOW`` (25,000) rows the methods
fit in ``ROUNDS`` (5) alternating rounds (each its repeats, within ``REPEAT_SECONDS``): the
fit time is the median of all their fits, ``fit_seconds_rounds`` each round's median, and the
ratio to scikit-learn's the median of the rounds' ratios (``fit_ratio_rounds``), each taken
within a few seconds of the VM's speed, which drifts by up to 2× over longer spans.

Other peers (``--peers``, default both; ``--peers ''`` none), after scikit-learn and svmgpu on
every set: ThunderSVM's CPU package (``pip install thundersvm-cpu``) with its own defaults (its
``gamma`` default is ``1 / n_features``), and scikit-learn's ``Nystroem`` with
``NYSTROEM_COMPONENTS`` (1,000, svmgpu's ``rank="auto"``'s first stage) and ``SVC``'s
``gamma="scale"`` + ``LinearSVC()`` / ``LinearSVR()`` (the tuned ijcnn1 set passes its ``C``
and ``gamma`` to every method). A peer that cannot run here is recorded with its reason.

``--device cuda`` fits svmgpu on the GPU (every set then gets a warm-up fit: the first compiles
CuPy's kernels) while the peers stay on the host's CPU; ``--sklearn-max-rows N`` leaves
scikit-learn out on sets of more rows (no ratio there); ``--rounds`` sets the rounds. The
results file is written after each set, and a fit that raises is recorded as ``failed: ...``
(the run goes on, and ends with a non-zero status).

``--C 0.1,1,10,...`` fits every set at each of these C (a tuned C instead of the default:
``bench/results/svc_c_sweep_cpu.json``).

Usage: python bench/bench_svc.py [--repeats 9] [--medium 5000,10000,20000] [--ijcnn1 DIR]
       [--peers thundersvm,nystroem] [--C 1,10,100] [--device cuda] [--rounds 5]
       [--sklearn-max-rows N] [--small iris,...] [--noisy 4000,8000] [--out NAME]
"""

from __future__ import annotations

import argparse
import time
import traceback

import numpy as np
from _cases import (
    COVTYPE_DEFAULT_PATH,
    IJCNN1_DEFAULT_DIR,
    covtype_dcsvm_split,
    digits28_split,
    ijcnn1_split,
)
from _common import (
    Unavailable,
    default_name,
    machine_info,
    print_table,
    repeat_timed,
    thundersvm_class,
    timing_fields,
    timing_stats,
    write_results,
)


def _sets(medium, ijcnn1, covtype=None, covtype_rows=0, digits28_rows=0, hard_rows=0,
          small=None, noisy=()):
    from sklearn.datasets import (
        load_breast_cancer,
        load_digits,
        load_iris,
        load_wine,
        make_classification,
    )
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    loaders = {"iris": load_iris, "wine": load_wine, "breast_cancer": load_breast_cancer,
               "digits": load_digits}
    for name in SMALL_SETS if small is None else small:
        X, y = loaders[name](return_X_y=True)
        X = StandardScaler().fit_transform(X)
        yield (name, *train_test_split(X, y, test_size=0.25, random_state=0), {})
    X, y = make_classification(25000, n_features=20, n_informative=10, random_state=0)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=5000, random_state=0)
    for m in medium:
        yield f"make_classification_{m}", Xtr[:m], Xte, ytr[:m], yte, {}
    if ijcnn1:
        X, y, Xt, yt = ijcnn1_split(ijcnn1)
        yield "ijcnn1", X, Xt, y, yt, {}
        yield "ijcnn1_tuned", X, Xt, y, yt, TUNED_IJCNN1
    if covtype and covtype_rows:  # Covtype's 7 classes, DC-SVM's split and [0, 1] scaling
        X, y, Xt, yt = covtype_dcsvm_split(covtype, binary=False)
        yield (f"covtype7_{covtype_rows}", X[:covtype_rows], Xt[:50000], y[:covtype_rows],
               yt[:50000], {})
    for m in noisy:  # (most rows free support vectors on the margin: the corner start)
        X, y = make_classification(m + NOISY_TEST_ROWS, n_features=50, n_informative=8,
                                   n_redundant=2, flip_y=0.3, random_state=1)
        X = StandardScaler().fit_transform(X)
        yield f"noisy_{m}", X[:m], X[m:], y[:m], y[m:], dict(NOISY_PARAMS)
    for rows, hard in ((digits28_rows, False), (hard_rows, True)):
        if rows:  # the image-like stand-ins (pixels in [0, 1], not standardized)
            X, y, Xt, yt = digits28_split(rows, hard=hard)
            yield f"digits28{'_hard' if hard else ''}_{rows}", X, Xt, y, yt, {}


BENCHMARK = "svmgpu.SVC()/SVR() vs sklearn.svm.SVC()/SVR(), defaults"

#: The small sets (``--small``; '' leaves them out).
SMALL_SETS = ("iris", "wine", "breast_cancer", "digits")

#: The noisy sets (``--noisy ROWS,...``): ``make_classification`` with 50 features (8
#: informative, 2 redundant), 30 % of the labels flipped, standardized, this many test rows,
#: both estimators at C = 10: a model that interpolates most rows on its margin (session 32).
NOISY_TEST_ROWS = 2000
NOISY_PARAMS = {"C": 10.0}

#: Peers beside scikit-learn's SVC/SVR and svmgpu's (``--peers``).
PEERS = ("thundersvm", "nystroem")


def _methods(task, peers, device="cpu"):
    """``(name, make)`` of each method on a set, in the order they run: ``make(X, **params)``
    builds the estimator (X: the training rows, for Nystroem's ``gamma="scale"``); svmgpu's on
    ``device``."""
    from sklearn.svm import SVC as SklearnSVC
    from sklearn.svm import SVR as SklearnSVR

    from svmgpu import SVC, SVR

    cls = task == "classification"
    kind = "SVC" if cls else "SVR"
    out = [(f"sklearn {kind}()", lambda X, **p: (SklearnSVC if cls else SklearnSVR)(**p)),
           (f"svmgpu {kind}()", lambda X, **p: (SVC if cls else SVR)(device=device, **p))]
    if "thundersvm" in peers:
        out.append((f"ThunderSVM {kind}()", lambda X, **p: thundersvm_class(kind)(**p)))
    if "nystroem" in peers:
        out.append((f"sklearn Nystroem + Linear{kind}", lambda X, **p: _nystroem(X, cls, **p)))
    return out


def _nystroem(X, cls, C=1.0, gamma="scale"):
    """``Nystroem(NYSTROEM_COMPONENTS components, SVC's gamma) + LinearSVC(C)``
    (``LinearSVR``)."""
    from sklearn.kernel_approximation import Nystroem
    from sklearn.pipeline import make_pipeline
    from sklearn.svm import LinearSVC, LinearSVR

    if gamma == "scale":
        gamma = 1.0 / (X.shape[1] * float(np.var(X)))
    return make_pipeline(Nystroem(gamma=gamma, n_components=min(NYSTROEM_COMPONENTS, X.shape[0]),
                                  random_state=0),
                         LinearSVC(C=C) if cls else LinearSVR(C=C))


#: The Nystroem peer's components: the first stage of svmgpu's ``rank="auto"``
#: (svmgpu.estimators.svc.AUTO_RANK_START), a fixed number so that runs compare.
NYSTROEM_COMPONENTS = 1000

#: Seconds of pause before each method's fits (see the module notes).
PAUSE = 0.5

#: Training rows below which each method's fits follow a warm-up fit (see the module notes).
WARMUP_BELOW = 50_000

#: Seconds of timed fits after which a method's repeats end (at least one; see the module
#: notes): a fit of 50 ms on 20,000 rows timed once varied 0.06–0.09 s from run to run.
REPEAT_SECONDS = 2.0

#: Rounds of alternating fits for sets of fewer training rows than ROUNDS_BELOW (see the module
#: notes): this VM's speed changes by up to 2× for seconds at a time (session 26: iris's
#: ratio 2.3×, 2.8× and 7.6× in three runs of minutes apart, scikit-learn's fit 1.4–2.4 ms,
#: svmgpu's 5.6–10.4 ms), longer than one method's repeats. Up to 5,000 rows until session
#: 28; the 20,000-row sets too since (make_classification: scikit-learn's fit 5.6 s in one
#: run and 8.2 s ten minutes later, svmgpu's 1.4–1.9 s, one fit of scikit-learn's against
#: two of svmgpu's a round).
ROUNDS = 5
ROUNDS_BELOW = 25_000

#: LIBSVM's tuned parameters for ijcnn1 (issue 27's target: >= 98.6 %), both estimators.
TUNED_IJCNN1 = {"C": 32.0, "gamma": 2.0}


def _regression_sets(sizes, smooth):
    """friedman1 (noise 1) at each of ``sizes`` training rows, and friedman2 / friedman3
    (noise 0, targets standardized: a smooth target fitted within about ε, few support
    vectors) at ``smooth`` rows; 5,000 test rows each."""
    from sklearn.datasets import make_friedman1, make_friedman2, make_friedman3
    from sklearn.preprocessing import StandardScaler

    X, y = make_friedman1(25000, noise=1.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    for m in sizes:
        yield f"friedman1_{m}", X[:m], X[20000:], y[:m], y[20000:], {}
    for name, make in (("friedman2", make_friedman2), ("friedman3", make_friedman3)):
        X, y = make(25000, noise=0.0, random_state=0)
        X, y = StandardScaler().fit_transform(X), (y - y.mean()) / y.std()
        for m in smooth:
            yield f"{name}_{m}", X[:m], X[20000:], y[:m], y[20000:], {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--small", default=",".join(SMALL_SETS),
                    help="small sets, comma-separated ('' leaves them out)")
    ap.add_argument("--medium", default="5000,10000,20000")
    ap.add_argument("--noisy", default="",
                    help="training rows of the noisy sets (make_classification, 30 %% of the "
                         "labels flipped, C = 10; '', the default, leaves them out)")
    ap.add_argument("--ijcnn1", default=str(IJCNN1_DEFAULT_DIR))
    ap.add_argument("--regression", default="2000,20000")
    ap.add_argument("--smooth-regression", default="20000",
                    help="training rows of friedman2 and friedman3 ('' leaves them out)")
    ap.add_argument("--covtype", default=str(COVTYPE_DEFAULT_PATH))
    ap.add_argument("--covtype-rows", type=int, default=50000,
                    help="training rows of Covtype's 7 classes (0 leaves it out)")
    ap.add_argument("--digits28", type=int, default=0,
                    help="training rows of the image-like 10-class stand-in (0, the default, "
                         "leaves it out; scikit-learn takes minutes on 60,000)")
    ap.add_argument("--digits28-hard", type=int, default=0,
                    help="training rows of its harder variant (0, the default, leaves it out; "
                         "scikit-learn takes 7 minutes on 60,000)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help=f"other peers, comma-separated (of {', '.join(PEERS)}; '' none)")
    ap.add_argument("--C", default="",
                    help="C values, comma-separated: every set fitted at each by every method "
                         "(the set's name gets ' C=<value>'); '' (default): each set's own C")
    ap.add_argument("--device", default="cpu",
                    help="svmgpu's device ('cuda': the peers stay on the host's CPU)")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help=f"alternating rounds on sets of fewer than {ROUNDS_BELOW:,} rows")
    ap.add_argument("--sklearn-max-rows", type=int, default=0,
                    help="sets of more training rows fit no scikit-learn reference and get no "
                         "ratio (0, the default: every set)")
    ap.add_argument("--out", default=None, help="results name (default svc_cpu / svc_cuda)")
    args = ap.parse_args()
    device = args.device
    out = args.out or default_name("svc", device, gpu="cuda")
    machine = machine_info(device)  # (its load average is the start's)
    from sklearn.metrics import r2_score

    peers = [p for p in args.peers.split(",") if p]
    unknown = sorted(set(peers) - set(PEERS))
    if unknown:
        ap.error(f"unknown peers {unknown}; valid: {', '.join(PEERS)}")
    medium = [int(m) for m in args.medium.split(",") if m]
    rows = []
    regression = [int(m) for m in args.regression.split(",") if m]
    small = [s for s in args.small.split(",") if s]
    if set(small) - set(SMALL_SETS):
        ap.error(f"unknown small sets {sorted(set(small) - set(SMALL_SETS))}; valid: "
                 f"{', '.join(SMALL_SETS)}")
    cases = [(*case, "classification") for case in _sets(
        medium, args.ijcnn1, args.covtype, args.covtype_rows, args.digits28,
        args.digits28_hard, small, [int(m) for m in args.noisy.split(",") if m])] + \
        [(*case, "regression") for case in _regression_sets(
            regression, [int(m) for m in args.smooth_regression.split(",") if m])]
    Cs = [float(c) for c in args.C.split(",") if c]
    if Cs:  # (a sweep: each set at each C)
        cases = [(f"{name} C={c:g}", Xtr, Xte, ytr, yte, {**params, "C": c}, task)
                 for name, Xtr, Xte, ytr, yte, params, task in cases for c in Cs]
    failed = []
    for name, Xtr, Xte, ytr, yte, params, task in cases:
        preds, done, methods = {}, {}, []
        for method, make in _methods(task, peers, device):
            row = {"data": name, "m": int(Xtr.shape[0]), "method": method, "params": params}
            if method.startswith("sklearn") and "Nystroem" not in method \
                    and 0 < args.sklearn_max_rows < Xtr.shape[0]:
                rows.append({**row, "status": f"skipped: more than --sklearn-max-rows "
                                              f"{args.sklearn_max_rows} rows"})
                continue
            try:
                make(Xtr, **params)
            except Unavailable as exc:
                rows.append({**row, "status": f"unavailable: {exc}"})
                print(rows[-1], flush=True)
                continue
            methods.append((method, make, row))
        # (small sets: the methods' fits in alternating rounds, each round's ratio to
        # scikit-learn's fit in the same round; see the module notes)
        n_rounds = args.rounds if Xtr.shape[0] < ROUNDS_BELOW else 1
        seconds = {method: [] for method, _, _ in methods}
        system = {method: [] for method, _, _ in methods}
        faults = {method: [] for method, _, _ in methods}
        medians = {method: [] for method, _, _ in methods}
        ests = {}
        for k in range(n_rounds):
            for method, make, row in methods:
                if "status" in row:
                    continue
                on_gpu = method.startswith("svmgpu") and device.startswith("cuda")
                time.sleep(PAUSE)  # (the last method's idle BLAS threads stop spinning)
                try:
                    # (on a GPU every set gets a warm-up: the first fit compiles CuPy's kernels)
                    ests[method], fit = repeat_timed(
                        lambda make=make, X=Xtr, y=ytr, p=params: make(X, **p).fit(X, y),
                        args.repeats, device=device if on_gpu else "cpu",
                        warmup=1 if k == 0 and (Xtr.shape[0] < WARMUP_BELOW or on_gpu) else 0,
                        max_seconds=REPEAT_SECONDS)
                except Exception as exc:  # (recorded; the other sets still run)
                    traceback.print_exc()
                    row["status"] = f"failed: {type(exc).__name__}: {exc}"
                    failed.append(f"{name} {method}")
                    rows.append(row)
                    continue
                seconds[method] += fit["seconds"]
                system[method] += fit["system_seconds"]
                faults[method] += fit["minor_faults"]
                medians[method].append(fit["median"])
        for method, _, row in methods:
            if "status" in row:
                continue
            est = ests[method]
            pred, predict = repeat_timed(lambda est=est, X=Xte: est.predict(X))
            pred = np.asarray(pred).reshape(-1)
            preds[method] = pred
            n_support = getattr(est, "n_support_", None)
            row.update(**timing_fields("fit_seconds", timing_stats(
                seconds[method], system[method], faults[method])),
                       **timing_fields("predict_seconds", predict),
                       test_accuracy=float(np.mean(pred == yte)) if task == "classification"
                       else None,
                       test_r2=float(r2_score(yte, pred)) if task == "regression" else None,
                       n_support=None if n_support is None else int(np.sum(n_support)),
                       status="ok")
            if n_rounds > 1:
                row["fit_seconds_rounds"] = medians[method]
            if method.startswith("svmgpu"):
                row["solver"] = est.solver_
                row["rank"] = est.rank_
                row["newton_steps"] = int(np.sum(est.n_iter_))
            rows.append(row)
            done[method] = row
            print(row, flush=True)
        kind = "SVC" if task == "classification" else "SVR"
        ref = done.get(f"sklearn {kind}()")
        for method, row in done.items():
            if ref is None or method == ref["method"]:
                continue
            # (the median of the rounds' ratios: both methods of a round ran in the same few
            # seconds of the machine's speed)
            ratios = [a / b for a, b in zip(medians[method], medians[ref["method"]],
                                            strict=True)]
            row["fit_ratio_to_sklearn"] = float(np.median(ratios))
            if n_rounds > 1:
                row["fit_ratio_rounds"] = ratios
            if task == "classification":
                row["accuracy_minus_sklearn"] = row["test_accuracy"] - ref["test_accuracy"]
                row["agreement_with_sklearn"] = float(np.mean(preds[method]
                                                              == preds[ref["method"]]))
            else:
                row["r2_minus_sklearn"] = row["test_r2"] - ref["test_r2"]
        path = write_results(out, {"benchmark": BENCHMARK, "machine": machine, "device": device,
                                   "repeats": args.repeats, "results": rows})  # (each set's)
    print_table(rows, ["data", "m", "method", "fit_seconds", "predict_seconds", "test_accuracy",
                       "test_r2", "n_support", "fit_ratio_to_sklearn", "agreement_with_sklearn"])
    print(f"wrote {path}")
    if failed:
        raise SystemExit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
