"""``svmgpu.SVC`` and ``svmgpu.SVR``: scikit-learn's ``SVC`` and ``SVR`` under their own names
and parameters, solved by svmgpu.

SVR's loss is LIBSVM's ε-insensitive loss with Huber corners of the same half-width (at most
:data:`SVR_CORNER` · ε; :class:`svmgpu.losses.HuberEpsilonInsensitive`; ``epsilon=0``: the Huber
loss, a smoothed absolute value), with an unpenalized intercept, on the same paths.

SVC's loss is the hinge of LIBSVM's C-SVC, approximated for Newton by the Huber hinge of
half-width :data:`HINGE_SMOOTHING` (``ψ(u) = (u + δ)²/(4δ)`` for ``|u| < δ``, the hinge
``u`` beyond; :class:`svmgpu.losses.HuberHinge`), with an unpenalized intercept, and the classes
split one-vs-one as LIBSVM does. The solver is chosen per fit (``solver_``):

``"exact"``
    The full kernel matrix in the kernel's own coordinates, primal Newton over the rows near
    the margin only (Chapelle 2007; :func:`svmgpu.solvers.exact.exact_newton`), one kernel
    matrix shared by every pair of classes.
``"lowrank"``
    ``f = K(·, X_J) z + b`` over ``rank`` landmark rows J (drawn with ``random_state``, 0 when
    None, so the fit is deterministic) with the RKHS penalty ``½ zᵀ K_JJ z`` (the SVM's own
    norm restricted to the landmarks' span) and a nearly unpenalized intercept, solved by the
    reduced Newton method of Zhou 2013 (:func:`svmgpu.solvers.reduced.newton_reduced`, whose
    Huber-hinge continuation ends at the same smoothing). A one-vs-one pair expands over the
    landmarks of its own two classes only, as LIBSVM's pair models over their own rows, each
    class drawing a quota of landmarks first (:data:`PAIR_MIN_LANDMARKS`;
    :meth:`_FrontDoor._pair_runs`). Where ``rank="auto"``'s growth has not settled by
    :data:`REFINE_MIN_RANK` landmarks, SVC solves each problem's exact problem on the rows the
    low-rank model puts near or beyond its margin (:meth:`_FrontDoor._refine`) and keeps that
    model, a kernel expansion over those rows.

``"partition"``
    The rows split into k-means regions of about ``region_rows`` rows
    (:func:`svmgpu.solvers.partition.bounded_regions`), the exact path in each region, and each
    new point predicted by the model of the region of its nearest centre (DC-SVM's early
    prediction, Hsieh, Si and Dhillon 2014; docs/partition.md): for a local kernel, where rows
    of different regions barely interact.

``solver="auto"`` takes the low-rank path when ``rank`` is an int, or for a kernel of finite rank
(``"linear"``, ``"poly"``) on at least :data:`FINITE_RANK_ROWS` rows a dimension of its feature
space (:class:`SVR`'s linear kernel: :data:`SVR_LINEAR_FINITE_RANK_ROWS`); with ``rank="auto"``
the exact path up to :data:`EXACT_MAX_ROWS` rows when the kernel matrix fits the memory budget,
else the partitioned one when the kernel is local (the median kernel value between random rows
below :data:`LOCAL_KERNEL_LEVEL`; SVC's above :data:`LOCAL_REFINE_MAX_ROWS` rows only), else the
low-rank one, whose rank ``"auto"`` grows with the data: from :data:`AUTO_RANK_START` landmarks
by :data:`AUTO_RANK_GROWTH` a stage, each stage started from the last one's solution, while more
than :data:`AUTO_RANK_CHANGE` of the training predictions change, up to :data:`AUTO_RANK_MAX` or
the memory budget (``rank_path_``). The choices and their reasons are logged at ``verbose=1``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings
from numbers import Integral, Real

from sklearn.base import clone
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from svmgpu._log import caller_stacklevel
from svmgpu.backend import (
    LinAlgError,
    asarray,
    astype_rows,
    check_fits,
    compute_context,
    concat_rows,
    dense_rows,
    fetch_scalars,
    format_bytes,
    get_namespace,
    host_array,
    is_numpy,
    is_sparse,
    jittered_cholesky,
    keeps_sparse,
    map_threads,
    model_rows,
    numpy_dtype,
    random_subset,
    range_block,
    range_indices,
    row_extent,
    seed_from,
    set_rows,
    solve_triangular,
    sorted_unique,
    take_block,
    take_rows,
    widen_rows,
)
from svmgpu.distributed import _data as dask_data
from svmgpu.distributed import is_dask_collection
from svmgpu.estimators._base import SVCBase, SVRBase, store_parameters
from svmgpu.estimators._input import check_X
from svmgpu.estimators._multiclass import class_pairs, ovo_vote_counts
from svmgpu.estimators._params import POSITIVE_INT, constraints
from svmgpu.estimators.reduced import (
    check_two_classes,
    has_two_classes,
    positive_rows,
    rkhs_matrix,
)
from svmgpu.kernels import (
    RBF,
    KernelRows,
    Linear,
    distance_range_problem,
    kernel_matvec,
    negligible_level,
)
from svmgpu.losses import get_loss
from svmgpu.lowrank import independent_landmarks, reduced_kernel_features, select_reduced_set
from svmgpu.solvers._result import SolverResult
from svmgpu.solvers.exact import (
    CG_MAX_DOMINANCE,
    DAMPED_SYSTEM_ROWS,
    HARD_MARGIN_FIRST_C,
    PRESOLVE_MIN_ROWS,
    exact_newton,
    kernel_dominance,
    max_diagonal,
    newton_space,
)
from svmgpu.solvers.newton import NewtonOptions, semismooth_newton
from svmgpu.solvers.partition import (
    KMEANS_SAMPLE,
    assign,
    bounded_regions,
    group_rows,
    kmeans,
)
from svmgpu.solvers.reduced import newton_reduced
from svmgpu.solvers.smo import SMO_LOSSES, smo

#: The half-width δ of the Huber hinge that stands in for the hinge: the widest that gave
#: scikit-learn's SVC test accuracy on digits, breast cancer and make_classification (a wider
#: corner lost accuracy, a narrower one only added Newton steps; docs/svc.md).
HINGE_SMOOTHING = 0.1

#: SVR's Huber corners are at most this fraction of ε wide (half-width ``min(HINGE_SMOOTHING,
#: SVR_CORNER · ε)``): rows whose residual is in a corner form the exact path's Newton system,
#: and a smooth target fitted within about ε puts many there. SVR's defaults on 20,000 rows
#: (solve time, with the presolve; R² against scikit-learn's): ε/2 friedman1 2.1 s, friedman2
#: (noise 0, y standardized) 1.0 s, friedman3 20.2 s (9,725 support vectors against
#: scikit-learn's 3,743); ε/5 1.8 / 0.5 / 4.2 s; ε/10 2.2 / 0.8 / 2.4 s; ε/20 2.3 / 0.8 / 6.5 s;
#: R² 0.9451 / 0.9981 / 0.9608 at ε/5 against scikit-learn's 0.9451 / 0.9972 / 0.9606.
SVR_CORNER = 0.2

#: SVR's exact path narrows its corners to a tenth (from the last solution, at most
#: SVR_NARROWINGS times) while the rows in them could move the objective F by more than this
#: share: ``C δ/4 Σ_corners s > SVR_CORNER_GAP · F`` (δ/4: the most a corner adds to a row's
#: loss). The corners reach ε − δ inside the tube, and at a large C the fit keeps its rows out of
#: them: the tube it fits is ε − δ wide. Targets of spread 0.5 with ε = 0.5 and C = 100 or 1,000
#: (150 rows): an ε-insensitive objective 2.0–3.8 times scikit-learn's (tol 1e-8) and
#: predictions 0.1 apart, against 1.001–1.002 times and 0.001 apart after one or two narrowings
#: (their rows in corners could move F by 40–360 %). friedman1 (2,000 rows, C = 0.1–100), whose
#: F is the loss of thousands of rows outside the tube, does not narrow: at C = 100 its corners
#: could move F by 2.1 %, and narrowing them took 199 Newton steps instead of 117 (6.0 s
#: against 3.4 s) for the same R², the predictions 0.13 % of the targets' spread from
#: scikit-learn's instead of 1.2 %. A float32 kernel matrix (the partitioned path's regions) is
#: replaced by the float64 one up to EXACT_FALLBACK_ROWS rows, and not narrowed above (from
#: EXACT_FLOAT32_ROWS rows on the exact path). SVC's symmetric corner at a large C fits a
#: margin 1 + δ instead of 1, as a C smaller by (1 + δ)² would: narrowing it (iris, wine,
#: digits at C = 10–1,000) took 2–4 times the Newton steps for the same predictions, so SVC
#: keeps its corner.
SVR_CORNER_GAP = 0.05
SVR_NARROWINGS = 3

#: Huber stages at most before the corners in SVR's continuation (:meth:`SVR._losses`).
SVR_WIDE_STAGES = 6
#: Newton steps in a row shorter than 2⁻¹⁰ after which SVR's low-rank solve starts again from
#: its continuation (:meth:`SVR._losses`, Huber losses as wide as the targets' spread first),
#: from where it crawled (``NewtonOptions.crawl_steps``). Targets of spread 100 at C = 0.05, ε
#: = 0.01, put every row on a linear piece of the corners: the intercept's only curvature is
#: its small penalty, and its Newton steps cross a knot after 10⁻⁸ of their length. Mixed fuzz
#: seed 3333's trial 12 (6,000 rows of one feature, the 'poly' kernel, whose feature space
#: has one dimension) took its 1,000 steps of 10⁻⁸ (18.8 s, unconverged, R² −0.003 against
#: scikit-learn's 0.356 in 0.6 s).
SVR_CRAWL_STEPS = 10
SVR_CRAWL_STEP = 2.0 ** -10
#: SVR's low-rank Newton ends a growth stage only where its gradient's two parts also balance
#: to this share (``NewtonOptions.balance_tol``: ``‖∇F‖ <= 0.1 · max(‖Bz‖, ‖C Pᵀu‖)``) besides
#: the gradient test relative to ``‖∇F(0)‖``, which counts every row outside the tube at the
#: constant model. Where ε is as wide as the targets' spread, few rows leave the tube at the
#: optimum: mixed fuzz seed 6161's trial 44 (12,000 rows of one feature, targets 50 ± 1 without
#: noise, ε = 1, C = 100) passed the gradient test at twice its problem's minimum F with the
#: parts unbalanced (the measure 1.0), R² 0.384 against scikit-learn's 0.569 and the exact
#: path's 0.625; with the balance 0.651–0.653 for every perturbation of its targets (without,
#: targets moved by 10⁻¹² gave 0.37–0.80), seed 606's trial 7 (12,000 rows, C = 100, ε = 0.01,
#: weights, 2,000 landmarks) 9.98 → 11.38 s at the same R², friedman1 at 20,000 rows 1.52 →
#: 1.54 s, friedman2 0.113 → 0.137 s. UniSVM's ``stop="kkt"`` alone instead cost more: at a
#: tolerance of 0.1 / 0.03 / 0.01, trial 7 11.0 / 15.6 / 25.5 s and friedman1 1.65 / 1.70 /
#: 1.97 s; at 10⁻³ seed 5353's trial 15 took 14 times as long.
SVR_BALANCE_TOL = 0.1

#: The smoothings of the continuation that a stalled Newton iteration falls back on (a corner
#: of half-width 1 holds every row the LS-SVM start leaves near the margin; each stage starts
#: from the last stage's solution and ends at HINGE_SMOOTHING).
_CONTINUATION = (1.0, 0.3, HINGE_SMOOTHING)

#: Rows from which the exact path holds the kernel matrix in float32 when ``dtype=None``: the
#: products of a Newton step read all of it, and beyond the caches float32 halves that
#: traffic. make_classification 20,000 rows (one process, alternating): kernel 1.8–4.6 s →
#: 0.65 s, solve 3.5 → 1.9 s, the same test accuracy and objective (to 2e-7); at 5,000 rows
#: no difference. The partitioned path's regions always (32 Covtype regions, C = 32, γ = 32,
#: one thread: solves 3.2 → 2.1 s, kernels 0.65 → 0.33 s, objectives equal to 3e-8). The
#: low-rank path's features from the same number of rows (its memory halved; ijcnn1 3.7 →
#: 3.1 s, Covtype's 7 classes on 50,000 rows 25.0 → 21.6 s, the same test accuracy). It was
#: 10,000 until session 55 (SVR's still is: :data:`SVR_FLOAT32_ROWS`). SVC's exact fits of
#: 2,500–6,000 rows in 24 fuzz trials (mixed seeds 3030–4242, each fit in a fresh process
#: after a 3 s pause, as a user's one fit) took 0.25–0.83 times as long in float32 in 22 of
#: them (6,000 × 200 at C = 10: 5.6 → 3.0 s; 2,500 × 200: 0.86 → 0.23 s), the same test
#: accuracy: this VM backs memory written for the first time at up to 6 ms/MB after a pause,
#: and a float64 kernel matrix of 6,000 rows is 288 MB. ``make_classification`` at 5,000 rows
#: 0.92× → 0.66× scikit-learn's time. One whose float32 Newton steps stalled took 3 times as
#: long (SMO on the float32 matrix), hence the float64 redo (:meth:`_FrontDoor._exact_solve`).
EXACT_FLOAT32_ROWS = 2_500
#: ``SVR``'s :data:`EXACT_FLOAT32_ROWS`: its narrowed corners (:data:`SVR_NARROWINGS`) need
#: the float64 kernel matrix, which a float32 fit of more than :data:`EXACT_FALLBACK_ROWS`
#: rows does not narrow (session 55: fuzz SVR trials of 6,000 rows at C = 100 ended 0.001–
#: 0.003 in R² from the float64 fit's and scikit-learn's model). In float32 with its stalls
#: and narrowings solved on the float64 matrix (the float64 redo), the same models,
#: 16 fuzz SVR trials of 2,500–6,000 rows took 26.2 s against 25.7 s in all: 10 faster (1.26
#: → 0.38 s), 5 slower (6.5 → 9.1 s, 1.47 → 2.55 s).
SVR_FLOAT32_ROWS = 10_000

#: The largest rounding of an RBF exponent ``γ‖x − z‖²`` that float32 kernel values may carry:
#: float32's eps times ``γ · max ‖x − c‖²`` over the rows shifted by their mean c (the squared
#: distances are ``‖x‖² + ‖z‖² − 2xᵀz``, rounded relative to the squared norms). Beyond it, or
#: where the shifted rows' squared distances would overflow or underflow float32, a fit with
#: ``dtype=None`` computes its kernel values in float64 instead (features 10⁶ from their mean
#: at γ = 1/d: 1.45 % of float32's signs differed from float64's; X · 10²⁰: chance accuracy).
#: Standardized features reach 1e-6 (ijcnn1, Covtype: 1e-6 to 1e-5).
FLOAT32_RBF_ROUNDING = 1e-4

#: Rows up to which ``solver="auto"`` takes the exact path (when the kernel matrix fits the
#: budget): its cost grows as m² kernel entries plus |Q|³ factorizations. Above it the
#: low-rank path grows its rank and, where the predictions have not settled by
#: :data:`REFINE_MIN_RANK` landmarks, refines into the exact problem on the candidate support
#: vectors, which reached the exact path's accuracy sooner (session 23, second fits in one
#: process, exact against low-rank): make_classification at 12,000 / 15,000 / 20,000 rows
#: 1.60 / 1.78 / 3.12 s against 0.88 / 0.83 / 1.12 s (refined, the same accuracy to 0.02
#: points), the ten-class image-like stand-in at 10,000 / 15,000 / 20,000 rows 1.62 / 3.89 /
#: 7.83 s against 1.59 / 2.16 / 2.81 s (the same accuracy); where the growth settles first,
#: Covtype's 7 classes at 20,000 rows 12.1 s against 1.46 s (73.38 against 73.25 %), ijcnn1's
#: first 20,000 rows 4.17 s against 0.14 s (95.37 against 95.27 %). It was 20,000 until then.
EXACT_MAX_ROWS = 10_000
#: ``solver="auto"`` takes the low-rank path from this many rows for a kernel whose feature
#: space has finite dimension D (``Kernel.feature_dimension``: ``kernel="linear"``'s d
#: features, ``"poly"``'s monomials, C(d + 2, 3) at degree 3 and coef0 = 0) where the rows are
#: at least :data:`FINITE_RANK_ROWS` per dimension: every kernel matrix has rank at most D, so
#: ``rank="auto"``'s landmarks (from 125) span it where D is below that, and the growth ends a
#: stage later with the predictions unchanged (else it grows as for any kernel). The low-rank
#: Newton steps cost m r² where the exact path's cost m |Q|, and the exact path crawls where
#: most rows sit on the hinge's linear piece (a low-rank kernel moves them together). Session
#: 42 (2-core CPU, default ``tol``; the same test accuracy / R² to 0.001):
#:
#: - linear, classification, 6,000 rows of 40 features: 2.39 → 0.023 s at C = 1, 1.28 →
#:   0.021 s at C = 100; 2,500 rows of 3 features at C = 100: 0.28 → 0.011 s; regression at
#:   6,000 rows 0.10–0.48 → 0.03–0.24 s; a fuzz SVR (6,000 rows, 40 features, targets of
#:   spread 100) 3.9 → 0.2 s;
#: - poly, degree 3 (five fuzz sets of 2,500–6,000 rows of 1–3 features, C = 0.05–10,
#:   ``gamma`` 3 or "scale"): 0.55–2.4 s → 0.05–0.13 s (scikit-learn 0.02–15 s);
#: - at 25–40 rows a dimension (classification and regression at C = 1 and 100): linear
#:   4,000 × 100 0.45–0.87 → 0.03–0.54 s, 8,000 × 200 2.6–6.2 → 0.55–2.3 s; poly 2,000 × 6,
#:   3,000 × 8, 6,000 × 10 and 8,000 × 10 (56–220 dimensions) 0.28–9.0 → 0.04–1.7 s.
#:
#: Below: at 600 rows both take milliseconds (the exact path 2–3× fewer); at 20 rows a
#: dimension SVR's low-rank path was slower (linear, 4,000 × 200 at C = 100: 1.16 → 3.1 s),
#: at 3–12 up to 10× (600 × 200).
FINITE_RANK_MIN_ROWS = 2000
#: Rows a dimension of the kernel's feature space from which ``solver="auto"`` takes the
#: low-rank path (:data:`FINITE_RANK_MIN_ROWS`).
FINITE_RANK_ROWS = 25
#: :data:`FINITE_RANK_ROWS` for :class:`SVR` with ``kernel="linear"``. Where the targets are
#: nearly a linear function of the rows, most residuals sit near the tube's edges, and the
#: exact path's Newton steps in kernel coordinates (K of rank d: at most about d + 1 rows
#: free) crawl a row at a time, then SMO's iterations run out: mixed fuzz seed 4343's trial
#: 31 (2,500 × 200, C = 100) 3.2 s exact against 0.11 s low-rank (scikit-learn 0.10 s),
#: seed 202's trial 15 (C = 10) 3.9 against 0.97 s (scikit-learn 58 s), seed 1212's trial 33
#: 0.85 against 0.40 s; ``make_regression`` sets of 3,000 × 200 (15 rows a dimension;
#: noise 10 / 100, friedman1 with 195 noise features, a low-rank design with an offset; C =
#: 0.1, 1, 100) 0.38–5.5 s against 0.12–0.85 s, every R² the same to 0.002, none slower by
#: more than 0.03 s; 2,000 × 100 likewise. At 4–8 rows a dimension neither path wins (800 ×
#: 200: friedman1 0.03–0.09 s exact against 0.45–0.81 s low-rank, the noise-10 set at C = 100
#: 1.4 against 0.18 s). The polynomial kernel keeps :data:`FINITE_RANK_ROWS`: its landmarks'
#: factor of a kernel matrix of far lower rank than its order (the spectrum spans many
#: orders of magnitude at ``gamma=3``) drops directions the exact problem uses (seed 1818's
#: trial 3, 2,500 × 10 at degree 3, 220 dimensions: R² 0.715 low-rank, 0.697 at 400
#: landmarks, against 0.7335 exact and scikit-learn's 0.7334).
SVR_LINEAR_FINITE_RANK_ROWS = 10
#: The partitioned path's largest region (an exact problem): a region of more rows, or whose
#: kernel matrix would pass the memory budget, is split by 2-means.
REGION_MAX_ROWS = 20_000

#: SVR's :data:`EXACT_MAX_ROWS`: the low-rank path, its rank grown from 1,000 landmarks, fits
#: regression within its accuracy target (R² within 0.01 of the exact SVR's) from here on (SVR
#: is not refined, but solved exactly on every row where its growth ends far from settled:
#: :data:`AUTO_RANK_WARN_FACTOR`).
#: Fit seconds, exact against low-rank (1,414 landmarks), second fits in one process, R²
#: equal to 0.001 but friedman1 (−0.003 to −0.004): at 10,000 rows friedman1 0.68 / 0.98,
#: friedman2 0.38 / 0.75, friedman3 1.31 / 0.85; at 15,000 rows 1.37 / 1.35, 0.86 / 0.89,
#: 1.99 / 1.38; at 20,000 rows 2.5 / 1.35, 1.2 / 1.31, 4.7 / 1.39 (friedman1 R² 0.9415
#: against 0.9451). It was 15,000 then (session 22), but taken as the smaller of it and
#: EXACT_MAX_ROWS, so 10,000 since SVC's cut of session 23 (the docs said 15,000 until
#: session 51). Session 51 measured the 23 fuzz SVR sets of 12,000 rows with a kernel of
#: unbounded rank, both paths: the exact one within 0.002 of the low-rank R² or better on
#: all, better by more than 0.01 on four, but slower on fourteen, past scikit-learn's time
#: on six (mixed seed 606's trial 7, C = 100: 195 s against 10 s low-rank and scikit-learn's
#: 14 s; seed 77's trial 8 15 s against 0.39 s; seed 1818's trial 20 3.7 s against 0.28 s).
#: Three of the four it beat by more than 0.01 ended at AUTO_RANK_MAX far from settled: the
#: case now solved exactly (:data:`AUTO_RANK_WARN_FACTOR`).
SVR_EXACT_MAX_ROWS = 10_000
#: At ``C`` up to this, SVR's exact path goes on to :data:`REFINE_WHOLE_MAX_ROWS` rows (past
#: :data:`SVR_EXACT_MAX_ROWS`): a small C bounds most rows' α (their residuals past the tube),
#: few rows enter the Newton systems and the exact solve is quick, while the low-rank model's
#: decision values, sums of many bounded α over the landmarks' approximation, miss the
#: residual kernel's share, and its growth's changes (on the targets' variance) settle
#: early on a model far from the exact one. Mixed fuzz seed 3030's trial 31 (SVR, 12,000
#: rows of 200 features, ``gamma="auto"``, C = 0.05, ε = 1; flagged): low-rank R² 0.380 in
#: 1.0 s, settled at 1,418 landmarks, against the exact path's 0.439 in 0.63 s (scikit-learn
#: 0.437 in 1.6 s). The six fuzz SVR sets of 12,000 rows at C = 0.05 of session 51, exact
#: against low-rank: 0.58–1.67 s against 0.19–2.97 s, the same R² or better (+0.08 on seed
#: 2929's trial 16, +0.02 on 1111's trial 36), each faster than scikit-learn (1.6–8.5 s).
#: At C = 1 the exact path took 0.9–21 s against 0.2–8.8 s (mixed, :data:`SVR_EXACT_MAX_ROWS`).
SVR_EXACT_SMALL_C = 0.1

#: Rows up to which the exact path's regression problems start from the LS-SVM solution (one
#: factorization of the m × m system, every row on one quadratic piece) instead of α = 0: on
#: iris's and wine's pairs (75–130 rows, classification until session 60) 21–26 Newton steps
#: instead of 29–33 and no intercept search in the first step; on digits' pairs (~270 rows)
#: and breast cancer (426) the zero start was faster.
LS_SVM_START_ROWS = 150
#: Rows up to which the exact path's classification problems (one, or one-vs-one pairs solved
#: at once: their rows together) start from the corner start, every row of positive weight in
#: the Huber hinge's quadratic piece at its kink (:func:`~svmgpu.solvers.exact.exact_newton`'s
#: ``start="corners"``: one factorization of the m × m system, as the LS-SVM start), instead
#: of the LS-SVM solution (up to 150 rows until session 60) or α = 0, whose first steps are
#: damped (iris's three pairs at once: steps of 1/16, 1/4, 1/4, 1/4, 1/2 from α = 0). Session
#: 60, fits alternating in one process (medians of 7 rounds, C = 1 / 10 / 100 / 1,000, time
#: from the corners over the time before): iris 0.82 / 0.81 / 0.75 / 0.90, wine 0.95 / 0.60 /
#: 0.80 / 0.89, breast cancer's rows sampled 100 / 150 / 250: 0.89 / 0.59 / 0.58 / 0.92,
#: 0.83 / 0.80 / 0.55 / 0.92, 1.05 / 0.91 / 0.94 / 1.03, digits' 3s against 8s (357 rows)
#: 1.00 / 0.88 / 0.96 / 1.01, wine's classes 0 and 1 (130) 0.74 / 0.77 / 0.66 / 0.92,
#: ``make_moons(300, noise=0.3)`` 0.95 / 0.92 / 0.59 / 0.88, ``make_classification(300,
#: flip_y=0.2)`` 1.09 / 0.41 / 0.62 / 0.70 (geometric mean 0.81); at 400 rows and C = 1 the
#: corners were slower (breast cancer 3.9 → 5.4 ms: the first systems hold most rows).
CORNER_START_ROWS = 300

#: The exact path solves its one-vs-one pairs in consecutive chunks of at most this many rows,
#: a chunk as one problem (:meth:`_FrontDoor._fit_pairs`): one Newton iteration over their
#: kernel blocks on the diagonal of one matrix, whose steps cost about the array calls of one
#: pair's (a tiny pair's step is call overhead, not flops) and which takes a few more steps
#: than the slowest pair instead of their sum. Fits alternating in one process (session 26,
#: medians, ms; each pair alone → chunks of at most 250 / 400 / 600 rows): iris 9.1 → 9.2 /
#: 7.7 / 7.9, wine 14.9 → 13.3 / 13.5 / 13.7; make_classification (10 features) with 4
#: classes of 40 rows 25.0 → 18.4 / 18.8 / 23.8, 5 × 25 32.1 → 23.9 / 22.5 / 25.4, 10 × 20
#: 110 → 64 / 59 / 89, 10 × 40 128 → 95 / 89 / 130, 3 × 80 16.6 → 16.4 / 16.7 / 20.6; digits
#: (pairs of ~270 rows: one a chunk up to 540) the same. All pairs in one chunk lost from
#: about 500 rows (3 × 100: 13 → 19 ms, 10 × 20: 126 → 246 ms): the dense matrix grows as
#: the chunk's rows squared, its systems' factorizations as their active rows cubed.
PAIRS_AT_ONCE_ROWS = 400

#: The exact path's one-vs-one pairs each compute their own kernel matrix, instead of copying
#: their blocks from the whole matrix computed once, where their blocks together hold at most
#: this many times the whole matrix's values (:meth:`_FrontDoor._whole_kernel`; three classes
#: of equal size 1.33, six 1.67). Each pair's own costs at most its block's values, and far
#: fewer where its support vectors are few (its rows computed as its Newton steps read them);
#: the whole matrix costs its values and a copy of every block. Second fits, seconds, whole
#: matrix against each pair's own (fuzz cases, decision values equal to 3e-10): three classes
#: of 6,000 rows, 10 features, 99.4 % test accuracy (scikit-learn 0.07 s) 0.37 against 0.14
#: (81 ms of the 0.37 the float64 matrix's 36 million values, 71 ms the pairs' copies), 100 %
#: 0.32 against 0.17, two with most rows support vectors 0.63 against 0.51 and 0.31 against
#: 0.33; six classes of 1,000 rows, nearly every row a support vector (blocks 1.67 times the
#: matrix), 1.93 against 2.09 and 0.24 against 0.31.
WHOLE_KERNEL_SHARE = 1.5

#: ``rank="auto"`` of the low-rank path: the rank it starts from, then × AUTO_RANK_GROWTH a
#: stage (each stage warm-started from the last) while more than AUTO_RANK_CHANGE of the
#: training predictions change, up to AUTO_RANK_MAX (:meth:`_FrontDoor._grow_rank`; measured
#: in docs/svc.md). Starting low costs little where the rank must grow (a warm stage takes a
#: Newton step or two, at a fraction of a cold stage's cost) and stops early where a smooth
#: function needs few landmarks. From 125 instead of 1,000 (second fits, one process):
#: friedman2 1.16 → 0.11 s (R² 0.9981 both, stopped at 250), friedman3 1.55 → 0.20 s (R²
#: 0.9608 → 0.9594, at 354), ijcnn1 1.41 → 0.65 s (97.98 → 97.93 %, at 1,003; seeds 1–5
#: 97.90–97.95 %, all at 1,003), Covtype's 7 classes on 50,000 rows 20.9 → 17.6 s (74.36 →
#: 74.34 %, both at 2,000), friedman1 1.34 → 1.77 s (R² 0.9415 → 0.9416, six more stages).
AUTO_RANK_START = 125
#: ``rank="auto"`` where the features do not fit the memory budget at AUTO_RANK_START
#: landmarks: they are then recomputed per block at every pass and the rank is not grown, so it
#: is fixed at this many (the low-rank path's fixed default of sessions 13–14).
AUTO_RANK_UNGROWN = 1000
#: One-vs-one on the low-rank path: each class's quota of landmarks, drawn first
#: (``min(PAIR_MIN_LANDMARKS, rank // classes)``, or all its rows where it has fewer;
#: :meth:`_FrontDoor._class_quota`), as each pair expands over its own two classes' landmarks
#: only (:meth:`_FrontDoor._pair_runs`). A rare class draws few landmarks or none, and so
#: few could not shape its pairs: three 10-row classes beside three of 1,200 rows (red team,
#: a balanced test set) reached 0.62 accuracy and 0.24 recall on the small classes against
#: scikit-learn's 0.72 and 0.45. Expanding such pairs over every landmark instead (session
#: 17: a class with fewer than 20) reached 0.72 and 0.45, but cost Covtype's 7 classes on
#: 50,000 rows (a class of 238 rows, 9 landmarks of 2,000) 9.1 → 14–15.6 s. The quota: 0.72
#: and 0.45–0.452 (seeds 0–2, rank 100 and "auto"), Covtype 7.2–8.6 s at 74.29–74.31 %
#: (seeds 0–2; scikit-learn's SVC 74.40 %). Drawing the landmarks nearest a rare class's rows
#: instead gave 0.73 on the red team's set but 22 s on Covtype: those columns changed from
#: stage to stage and the warm starts lost them (2.5× the Newton steps).
PAIR_MIN_LANDMARKS = 20
AUTO_RANK_GROWTH = math.sqrt(2.0)
AUTO_RANK_MAX = 2000
AUTO_RANK_CHANGE = 2e-3
#: SVC's growth does not end while its model predicts a class for fewer than this share of
#: that class's own rows (among the rows compared, :data:`AUTO_RANK_SAMPLE`; a class of at
#: least :data:`AUTO_RANK_STARVED_ROWS` of them): the predicted classes settle there because
#: few rows lie near the decision boundary, not because the model is near the exact SVM's. A
#: fuzz case (mixed seed 2727's trial 2: 12,000 rows of 200 features, 9 % in the positive
#: class, sample weights, C = 0.05, ``gamma=0.003``) stopped at 177 landmarks with 0.01 % of
#: the predictions changed, predicting 0.02 % of the rows positive against the exact SVM's
#: 4 %: 91.9 % test accuracy against scikit-learn's 95.5 %. The growth goes on to 501
#: landmarks and refines there: 95.55 % in 0.55 s (scikit-learn 2.5 s). (A rule on the rows
#: crossing their margin ``y f = 1`` caught it too, but also 35 of 139 settled fuzz fits of
#: noisy labels, where 2–9 % of the rows cross at every stage: their fits 15 → 81 s in all.)
AUTO_RANK_STARVED = 0.1
AUTO_RANK_STARVED_ROWS = 50
#: A starved class ends the growth where the exact kernel starves it too
#: (:meth:`SVC._starvation_holds`: the α of the low-rank residuals with K itself), unless those
#: α break the exact problem's ``Σ α = 0`` by more than this share of ``Σ |α|``: then the
#: kernel's common part (K near 1 between most rows) weighs ``Σ α`` and the check says
#: nothing. Mixed seed 1010's trial 25 (12,000 sparse rows of one feature, ``gamma=0.003``,
#: C = 100, 9 % positive; scikit-learn's model predicts no positive row either): Σ α = 2,230
#: at |α| ≤ 100, every sampled row positive with K; refined on that word, 28 s against the
#: low-rank path's 0.08 s, the same predictions. Seed 2727's trial 2: Σ α = −0.15 against
#: Σ |α| of hundreds.
STARVED_BALANCE = 0.01
#: ``rank="auto"`` goes straight to its cap (AUTO_RANK_MAX, or the rows) from a stage within
#: AUTO_RANK_GROWTH² of it when that stage's change was above this many times the limit: the changes
#: shrink slowly (Covtype's 7 classes: 0.59, 0.55, 0.48, then 0.19 % at 792, 1,120, 1,584 and
#: 2,000 landmarks), so the stage between would not have ended the growth, which would reach
#: the cap anyway. Covtype's 7 classes on 50,000 rows 6.1 → 5.1 s (74.32 → 74.30 %); ijcnn1,
#: friedman1 (its change at 1,003 landmarks 0.18 % of the variance, under twice SVR's 0.1 %),
#: friedman2 and friedman3 stop before and take the same stages.
AUTO_RANK_SKIP = 2.0
#: SVC's ``rank="auto"`` jumps over the stages that cannot end the growth: a stage's change
#: (against the stage before it) is at least this share of the last one's (measured: 0.54–0.8;
#: Covtype's 7 classes 0.86–0.93), so from a change c above the limit L the first stage that
#: can end it is j = ⌈log(L / c) / log(AUTO_RANK_SHRINK)⌉ ahead, and the growth goes straight
#: to the stage before that one (whose successor's change is then measured against it), not
#: past the first stage of at least REFINE_MIN_RANK landmarks (where the refinement takes
#: over). A stage reached so is grown from by one stage (its change is against a stage
#: further back). Not SVR: its change, a share of the targets' variance, shrank by 0.19 a
#: stage (friedman3 at 177 → 250 landmarks), and a jump there grew one stage further.
#: ``make_classification`` at 20,000 rows (4.8 % changed at 177 landmarks, 23 times the
#: limit: 177 → 501 instead of 177, 250, 354, 501): 1.11 → 0.99 s, 95.26 → 95.24 % (session
#: 28, as ``AUTO_RANK_JUMP`` = 10 then); ijcnn1 (1.8 % at 177, nine times the limit: 177 →
#: 501 instead of 177, 250, 354, 501, then 709 and 1,003 as before): the fastest of five
#: fits 0.65–0.67 → 0.58 s in alternating processes, 97.93 → 97.92 %.
AUTO_RANK_SHRINK = 0.5
#: ``rank="auto"`` warns where its growth ends at :data:`AUTO_RANK_MAX` landmarks, unrefined,
#: with the training predictions still changing by more than this many times the limit
#: (SVC's 1 % of the predicted classes, SVR's 0.5 % of the targets' variance): the model is
#: then likely well below the exact SVM's accuracy. Fuzz seed 1313's medium trial 4 (14,000
#: noisy rows of 80 features, C = 1: 13,446 candidates, past REFINE_MAX_ROWS) ended with
#: 10.7 % changed, 65.5 % against scikit-learn's 69.3 %; seed 1111's SVR trial 36 with 0.59 %,
#: R² 0.9451 against 0.9655. Covtype's 7 classes on 50,000 rows end with 0.41 % (74.27 %
#: against 74.40 %) and do not warn.
#:
#: SVR, which has no candidate rule to refine on, solves the exact problem on every row there
#: instead (:meth:`SVC._refine`'s ``whole``, from the exact path's own start) where the rows
#: are at most :data:`REFINE_WHOLE_MAX_ROWS` and their kernel matrix fits the memory budget
#: beside the features, and ``C · max(s) · k`` is at most the exact path's
#: :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C` (k = max(1, max Kᵢᵢ), the kernel's
#: scale, :meth:`_FrontDoor._kernel_scale`; beyond, near the hard margin, its
#: Newton steps crawl: mixed seed 2424's trial 18, C = 100, 12,000 rows of 200 features, took
#: 126 s exact against scikit-learn's 40 s, the low-rank R² already scikit-learn's; seed
#: 606's trial 7 195 s); it warns otherwise (session 51). Mixed fuzz seed 2929's trial 16
#: (12,000 rows of 200 features, ``gamma="auto"``, C = 0.05; flagged): R² 0.781 in 2.75 s,
#: warned, against scikit-learn's 0.864 in 8.5 s; the exact path alone 0.864 in 1.4 s. Seed
#: 1111's trial 36 0.945 against 0.965 (exact 1.7 s), seed 1818's trial 10 ('poly' on 200
#: features) 0.131 against 0.419 (exact 21 s; scikit-learn 7.5 s). Without the kernel's
#: scale k (session 51's bound, C · max(s) alone) mixed seed 2424's trial 24 (12,000 rows of
#: 200 features, the 'poly' kernel at ``gamma=3``: Kᵢᵢ about 2·10⁸, C = 1) was solved exactly
#: in 500 s against scikit-learn's 44 s (the low-rank model, warned: 180 s, R² 0.709 against
#: 0.729).
AUTO_RANK_WARN_FACTOR = 5.0
#: SVR's AUTO_RANK_CHANGE, on ``‖Δf‖² / ‖y − ȳ‖²`` (a share of the targets' variance, R²'s
#: scale; it was measured on the predictions' variance, within 4 % of it on friedman1): the
#: R² left to gain was 4–6 times the last stage's change (friedman1, noise 1: at 20,000 rows
#: 0.0009 changed and R² 0.0036 below the exact SVR's; at 1,125 rows, 0.0020 changed at 400
#: landmarks and R² 0.0115 below, 0.0008 at 566 and 0.0066 below).
SVR_AUTO_RANK_CHANGE = 1e-3
#: SVR's growth whose last stage still raised the training R² (on the compared rows) by more
#: than this, its predictions settled (:data:`SVR_AUTO_RANK_CHANGE`), is solved exactly on
#: every row where it may (the conditions of :data:`AUTO_RANK_WARN_FACTOR`'s exact solve: at
#: most :data:`REFINE_WHOLE_MAX_ROWS` rows, ``C · max(s) · k`` at most the exact path's
#: :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C`). ``‖Δf‖²`` is second order in a change
#: that moves f along the residuals, while R² moves with ``2 (y − f)ᵀΔf``: where most rows'
#: α sit at ±C (C small against the targets' spread; session 54) each stage of landmarks
#: changed the predictions by 10⁻⁴ of the targets' variance and raised R² by 50 times that.
#: Mixed fuzz trials of 12,000 rows (the last stage's gain; R² low-rank / exact /
#: scikit-learn's): seed 3939's trial 0 (C = 1, targets of spread 100; 177 landmarks) 0.56 %,
#: 0.848 / 0.870 / 0.870; seed 77's trial 8 0.87 %, 0.895 / 0.908 / 0.908; seed 1818's trial 1
#: 0.74 %, 0.911 / 0.923 / 0.923; seed 3535's trial 6 0.91 %, 0.842 / 0.859 / 0.859; below it,
#: seed 202's trial 35 0.33 %, 0.949 / 0.951 / 0.951, and friedman1 (noise 1) at 12,000 /
#: 15,000 / 20,000 rows 0.27 / 0.26 / 0.30 % at 1,418 landmarks (R² 0.0036 below the exact SVR's
#: at 20,000). The R² left was 1.2–4 times the last gain.
SVR_AUTO_RANK_GAIN = 4e-3
#: Training rows at most on which ``rank="auto"`` compares a stage's predictions with the last
#: one's (evenly strided): the comparison costs rows × rank × problems, and 0.2 % of 50,000
#: rows is 100 of them.
AUTO_RANK_SAMPLE = 50_000

#: ``rank="auto"``: where the first stage's landmarks hold less than this share of the kernel's
#: diagonal (their Nyström approximation's ``Σ k_Zᵢᵀ K_ZZ⁻¹ k_Zᵢ`` against ``Σ k(xᵢ, xᵢ)``,
#: :meth:`_FrontDoor._landmarks_capture`), a low-rank model cannot say what the exact one
#: would: SVC refines at once (the exact problem on the candidates,
#: :meth:`_FrontDoor._refine`), SVR solves every row at once where
#: :data:`AUTO_RANK_WARN_FACTOR`'s exact solve may (session 58: mixed fuzz seed 1818's trial
#: 10, 12,000 rows of 200 features, the 'poly' kernel at ``gamma=0.003``, 1.2 % held, grew to
#: 2,000 landmarks first: 22 → 12.7 s, scikit-learn's R²; seed 4040's trial 20 25 → 16.7 s;
#: seeds 909's trial 1 and 5151's trial 25, whose growth had settled at 177 landmarks with R²
#: 0.0000 and 0.0001 and a warning, 0.4 → 10.5 s and 0.2 → 1.1 s with scikit-learn's 0.0223 and
#: 0.0006, in 7.5 and 2.9 s), and a fit that cannot (past the refinement's bounds or the memory
#: budget, or near the hard margin) ends with a warning where its last stage still holds less.
#: The polynomial kernel at ``gamma="scale"`` on 200 features (degree 3: a feature space of 1.4
#: million dimensions, kernel values 3e-4 between random rows against 1 on the diagonal): fuzz
#: seed 1111's trial 4 (12,000 rows, three classes, 10 % of the labels flipped, C = 1) held 1.0
#: % at 125 landmarks and predicted one class for every row, 31.95 % against scikit-learn's
#: 56.65 %, its growth ended at 177 landmarks because those predictions did not change; refined
#: at once, 56.60 % in 18 s (scikit-learn 23 s). Seed 909's SVR trial 1 (the same kernel,
#: 12,000 rows) held 1.2 %, R² 0 (scikit-learn's 0.022). At 125 landmarks (session 45):
#: ``make_classification`` at 20,000 rows 54 %, ijcnn1 92 %, Covtype's 7 classes on 50,000 rows
#: 94 %, friedman1 69 %, friedman2 and friedman3 98 %, fuzz seed 1111's SVR trial 36 (200
#: features, ``gamma=0.003``) 41 %.
LOWRANK_MIN_CAPTURE = 0.1
#: Rows at most on which :meth:`_FrontDoor._landmarks_capture` measures (evenly strided).
_CAPTURE_ROWS = 2000

#: ``rank="auto"`` whose growth has not ended (the predictions still change by more than the
#: limit at :data:`REFINE_MIN_RANK` landmarks or more): SVC then solves each problem's exact
#: kernel problem on its candidate support vectors, the rows whose low-rank margin ``y f`` is
#: below ``1 + REFINE_MARGIN`` (:meth:`_FrontDoor._refine`). Measured on the 60,000 × 784
#: image-like stand-in (ten classes, 45 pairs, session 23; 1,000 landmarks unless said):
#: candidates at margin 0 (2,000 landmarks) / 0.2 / 0.3 / 0.5 / 1 (2,000) averaged 559 / 1,180 /
#: 1,521 / 2,435 / 6,686 rows a pair and held 545 / 824 / 874 / 909 / 917 support vectors (the
#: exact problem's pairs: 916–917); the accuracy was 99.0 % at each (scikit-learn 99.07 %, the
#: low-rank model 97.44 %) and the refinement took 0.5 / 2.0 / 2.8 / 5.5 / 23 s. From 0.5 the
#: model is the exact SVM's (at 0.5, 30 of the 45 pairs had no row outside the candidates
#: that violates its optimality conditions, the others a few); below, the exact SVM of fewer
#: rows.
REFINE_MARGIN = 0.5
#: The refinement is tried after each stage of at least this many landmarks whose change was
#: above the limit, and ends the growth where it runs: on the stand-in, candidates from
#: 500 / 1,000 / 2,000 landmarks gave pairs of 886 / 909 / 917 support vectors on average
#: and 99.03 / 98.99 / 98.99 % accuracy, the fit in 7.7 / 9.1 / 14.6 s (one process each;
#: 1,000 until session 24). Session 24, with the exact path's sufficient decrease (a slower
#: VM; 500 against 1,000, one process each): make_classification at 20,000 rows refined at
#: 501 landmarks 1.62 s against 3.32 s at 1,003, 95.24 % both (the exact path's model 95.24 %:
#: decision values within 0.22 against 0.036 of it, 99.92 % against 100 % of the test signs
#: equal, 5,593 / 5,650 support vectors against 5,658); the stand-in refined at 566 landmarks
#: 18.4 s against 21.8 s (99.00 / 98.99 %), the harder one 68.7 s against 68.5 s (96.74 /
#: 96.72 %); ijcnn1 and Covtype's 7 classes are not refined either way (the same fits).
REFINE_MIN_RANK = 500
#: A stage of at least :data:`REFINE_MIN_RANK` landmarks whose change is above the limit but
#: within this factor of it grows one stage more before it refines (once a fit): a stage's
#: change has been at most 0.54–0.8 times the last one's (:data:`AUTO_RANK_SHRINK`), so the
#: next stage mostly ends the growth below the limit, at a fraction of the refinement's cost.
#: Session 67, medium fuzz trials refined at 501 landmarks with 0.23–0.25 % changed (RBF,
#: 11,000–14,000 rows, C = 1–100; scikit-learn's accuracy in brackets): seed 6767's trial 5
#: 3.89 → 0.41 s, 95.45 → 95.90 % (95.45 %), 7474's trial 7 0.58 → 0.33 s, 94.85 → 95.05 %
#: (94.85 %), 8080's trial 7 0.64 → 0.20 s, 89.50 → 89.45 % (89.50 %); each ended at 709
#: landmarks with 0.09–0.20 % changed. `make_classification` at 20,000 rows (5.6 % changed at
#: 501) is refined as before.
REFINE_NEAR = 1.5
#: The refinement runs only where every problem's candidates number at most this many and
#: their kernel matrix fits the memory budget beside the features: otherwise the growth goes
#: on. The stand-in's largest pair had 3,819 candidates; a harder one
#: (``bench/_cases.digits28_split(hard=True)``: scikit-learn's SVC 96.66 % in 413 s) had
#: 4,639 on average and 7,358 at most, and refined reached 96.72 % in 39 s against 90.99 % for
#: the 2,000 landmarks it stopped at with a bound of 5,000. Covtype's 7 classes (50,000 rows, a
#: local kernel whose pairs keep most of their rows near the margin: 75–100 % of the rows of
#: the largest pairs, up to 32,076) are not refined; refining all 21 pairs took 47 s instead
#: of 5. Session 32 raised it from 10,000: noisy problems of 10,000–12,000 rows, whose
#: candidates are most of their rows (:data:`REFINE_ALL_SHARE`), grew to 2,000 landmarks
#: without refining, less accurate than scikit-learn. Fuzz cases (``make_classification``, 30 %
#: of the labels flipped; scikit-learn's SVC in brackets): 11,000 rows, 50 features, C = 1:
#: 80.77 % in 3.2 s → 81.67 % in 8.3 s (81.5 %, 5.7 s); the same at C = 10: 75.33 % in 32 s
#: (refined on 9,476 candidates) → 77.0 % in 50 s (76.3 %, 29.7 s); 20 features, C = 0.1:
#: 81.0 % in 2.2 s → 81.03 % in 2.5 s (81.0 %, 3.0 s); another, refined on 9,755 candidates
#: before, 1.05 → 1.59 s, 80.17 % both (80.2 %, 4.4 s), and at C = 10 (9,905 candidates)
#: 79.13 → 79.53 %, 22 s both (79.33 %, 6.8 s); four imbalanced classes of 15,000 rows
#: (:data:`REFINE_ALL_SHARE`): 57.2 % in 31.8 s → 58.23 % in 26.7 s (58.4 %, 24.2 s).
REFINE_MAX_ROWS = 12_000
#: A problem of at most this many rows is refined on however many candidates it has (past
#: :data:`REFINE_MAX_ROWS`; every row where they are :data:`REFINE_ALL_SHARE` of them): its
#: exact SVM, at the exact path's cost on so many rows, as SVR's exact path goes
#: (:data:`SVR_EXACT_MAX_ROWS`). Larger problems keep the bound on their candidates (ijcnn1:
#: 14,534 of 49,990 rows, not refined). Medium fuzz sweeps of session 47 (binary, 14,000 rows,
#: C = 0.1, nearly every row a candidate, the growth then ended unrefined at 2,000 landmarks
#: with a warning): seed 2020's trial 18 (10 features, ``gamma=1``) 68.7 % against
#: scikit-learn's 80.5 %, trial 2 (80 features, ``gamma=0.01``) 78.85 % against 79.9 %, seed
#: 1515's trial 17 66.35 % against 67.95 %.
REFINE_WHOLE_MAX_ROWS = 15_000
#: Where a problem's candidates number at least this share of its rows (of positive weight)
#: and those rows at most :data:`REFINE_WHOLE_MAX_ROWS` (:data:`REFINE_MAX_ROWS` until session
#: 47), the refinement solves the problem on all of
#: them: its exact SVM, for at most 1 / 0.7 = 1.43 times the candidates' kernel values. There
#: the low-rank model leaves most rows near its margin (noisy labels) and is far from the
#: exact one, and rows outside the candidates violate the margin of the refined model. A fuzz
#: case of session 32 (``make_classification``, 15,000 rows, 20 features, four classes of
#: 10,064 / 1,602 / 1,660 / 1,674 rows, 30 % of the labels flipped, balanced class weights,
#: C = 10, with ``REFINE_MAX_ROWS`` 12,000): 89–92 % of each pair's rows were candidates, and
#: 1,648 rows outside them (low-rank margins 1.5 to 6.1) ended inside the refined model's
#: margins, down to ``y f = −3.4``; the candidates gave 57.23 % in 23.6–26.9 s, all rows
#: 58.23 % in 26.7 s, the exact path's accuracy (scikit-learn 58.4 %). Binary ones (11,000
#: rows, 30 % flipped): 20 features, C = 1, 81 % candidates: 2.18 → 2.28 s, 81.30 → 81.33 %
#: (scikit-learn 81.27 %); 50 features, C = 10, 78 % candidates: 68.43 % in 29.5 s → 72.33 %
#: in 44.9 s (scikit-learn 72.07 % in 35.5 s; the exact path from its own start 72.33 % in
#: 59.5 s), where the exact model has 8,891 support vectors, more than the 8,558 candidates.
#: Below the share, rows outside the candidates may violate the margin too, fewer and mildly:
#: ``make_classification`` at 20,000 rows (44 % candidates) has 60 of 11,268 (margins 0.57 to
#: 1). Checking every row outside (their kernel values against the support vectors, 0.26 s)
#: and solving again with the violators took its fit from 1.5 to 2.9 s for the same test
#: predictions: not done; a sample of them is checked instead (:data:`REFINE_CHECK_ROWS`).
REFINE_ALL_SHARE = 0.7
#: Rows outside a refined problem's candidates that check its solution
#: (:meth:`_FrontDoor._refine_check`): an evenly strided sample of at most this many. Where at
#: least REFINE_CHECK_MISSES and more than :data:`AUTO_RANK_CHANGE` of them are misclassified
#: by the refined model (the low-rank model had them beyond 1 + :data:`REFINE_MARGIN`), every
#: row outside is evaluated, those of nonzero loss gradient join the candidates, and the
#: problem is solved again from the last solution, at most :data:`REFINE_ROUNDS` more times.
#: Misclassified rows outside (session 35, every row outside evaluated): make_classification
#: at 20,000 rows none of 11,268 (115 inside the margin, margins ≥ 0.57), the image-like
#: stand-in none of 434,842 over its 45 pairs (0.74 % inside the margin), the harder one at
#: most 3 of 4,988 in a pair (5 % inside the margin); against 1.0 % of 10,607 (545 inside
#: the margin, down to y f = −3.6) for a fuzz case refined at 501 landmarks
#: (``make_classification``, 12,000 rows, 10 features, C = 100: 94.2 % against the exact
#: SVM's 95.6 %, 962 support vectors against 1,127; checked, 95.6 % and 1,122) and 4–12 % in
#: each pair of another (six classes, 16,000 rows, 40 features, C = 300: 57.2 % against
#: 59.8 %, the exact model's support vectors 91 % of the rows; checked, 59.8 % in 30 s). A
#: sample of 500 finds 1 % misclassified (λ = 5) with probability 0.96 and flags the harder
#: stand-in's worst pair (0.06 %) with 0.04; the 45 samples cost 0.6 s of its 17 s fit.
REFINE_CHECK_ROWS = 500
REFINE_CHECK_MISSES = 2
#: Where more than this share of the sample violates the refined model's margin (nonzero
#: loss gradient) and too few are misclassified, a larger sample decides: the rows of every
#: refined problem's together :data:`REFINE_CHECK_TOTAL` (:data:`REFINE_CHECK_ROWS` a
#: problem at least), so that few problems sample more of their rows. A sample of 500 missed
#: a fuzz case's misses (``make_classification``, 11,000 rows, 30 features, two clusters a
#: class, C = 10, ``gamma="auto"``, balanced weights; session 41): 0.61 % of the 7,730 rows
#: outside misclassified, none of the 484 sampled (Poisson's λ = 3: a chance of 0.2 of fewer
#: than two), 654 of the exact SVM's 3,037 support vectors left out, 93.75 % against its
#: 94.7 % (scikit-learn 94.8 %); 18 % of its sample violated the margin, and 18 of the 3,865
#: rows of the larger one were misclassified (checked: 94.7 %, 3,033 support vectors, 1.8 s
#: against the exact path's 2.7 s and scikit-learn's 1.3 s). Violating shares of the sample
#: elsewhere: make_classification at 20,000 rows 0.8 % (the larger sample, 5,000 rows against
#: 5,593 support vectors, would cost 30–40 ms of its 0.6 s fit), the image-like stand-in's
#: pairs at most 2.1 %, the harder one's up to 19 % (its 45 pairs sample 500 each anyway).
REFINE_CHECK_DOUBT = 0.05
#: The share of a refinement check's first sample (:data:`REFINE_CHECK_ROWS`) inside the
#: refined model's margin (of nonzero loss gradient) beyond which the rows outside of nonzero
#: loss join the candidates, misclassified or not: the low-rank model left out most of the
#: exact model's support vectors. Mixed fuzz seed 4343's trial 12 (12,000 sparse rows of 200
#: features, C = 100, 10 % of the labels flipped): 73 % inside the margin, 4 of 3,568
#: misclassified, 90.55 % against scikit-learn's 91.60 %; medium seed 1515's trial 19 (five
#: classes, C = 10): 58 %, 80.80 % against 81.35 %. Below it in the sweeps' results: 22 % at
#: most (within 0.4 points of scikit-learn); make_classification at 20,000 rows 0.8 %.
REFINE_CHECK_JOIN = 0.3
REFINE_CHECK_TOTAL = 5000
#: Rounds of candidates added by the check at most (:data:`REFINE_CHECK_ROWS`).
REFINE_ROUNDS = 3
#: A round after the check (the candidates and the rows it added) starts at the corners (every
#: row at the Huber hinge's kink: ``exact_newton``'s ``start="corners"``, the LS-SVM of its
#: rows factored whole) instead of from the last solution with the added rows at their bound,
#: where the last round's own solve restarted at the corners (its start's first steps damped
#: and the presolve's system holding ``CORNER_START_SHARE`` of its rows), or where it has at
#: most ``REFINE_CORNER_ROWS`` rows and ``C · max(s)`` exceeds ``REFINE_CORNER_MIN_C``. (The
#: row cap had bounded the restart's trigger too, session 50, and sent medium fuzz seed 303's
#: trial 8, 14,000 rows, three classes, C = 100, back from 18 to 33 s; session 51.) At a
#: large C the added rows at their bound move Kα far (F 10⁹ at the start of
#: a round of medium fuzz seed 2626's trial 2), and the Newton steps from there are cut to
#: 1/128–1/2 for 40–80 steps or stall into SMO, where the corners' system is one
#: factorization and 3–9 steps. Session 50, one process per version, each pair's next round
#: (the candidates + the rows added; C = 100 unless said): mixed seed 202's trial 7 (15
#: pairs, 1,364–4,387 rows) 13 of 15 faster, the fit 12.5 → 7.9 s; medium 1313 t17 (10
#: pairs, 2,626–3,623 rows) 7 of 10, 15.5 → 12.7 s; medium 2323 t7 (4,941–5,396 rows) 8.9
#: → 7.8 s; mixed 101 t41 (4,742–5,679 rows) 13.9 → 10.3 s; medium 2626 t2 18.1 → 12.6 s
#: (its first rounds restarted at the corners), every score the same or within a test row
#: (2323 t7: 89.00 against 89.10 %). Larger rounds cost more at the corners (mixed 1616 t37,
#: 8,123 rows: 15.5 against 12.7 s; medium 2020 t3, C = 10, 9,783 rows: 5.3 against 2.7 s),
#: and at C = 10 the corners won and lost about equally (mixed 1818 t40, 2,400–2,900 rows,
#: 6.9 → 5.1 s; medium 1515 t19, 3,400–3,700 rows, 4.2 → 5.1 s; mixed 2121 t12, 5,400–5,600
#: rows, 7.4 → 8.4 s; 505 t2, 7,650 rows, 10.4 → 9.0 s).
#:
#: The first round too starts at the corners at such a C where it has at most
#: :data:`~svmgpu.solvers.exact.PRESOLVE_MIN_ROWS` candidates (session 70): there the exact
#: path cannot probe a damped start, and the low-rank model's start left a few rows in the
#: Newton systems, which grew a few rows a step. Medium fuzz seed 7575's trial 9 (ten pairs
#: at C = 100): first rounds of 736–1,941 candidates took 48–75 steps and up to 54
#: factorizations each, from the corners 2–6 (1.18 → 0.41 s in all); 8080's trial 10, a
#: round of 1,828 rows, 98 → 3 steps (0.48 → 0.11 s). Sets of twelve and twenty large-C
#: fuzz trials (8080's trial 10 in both, 7575's in the first), one fit each way: 73.1 →
#: 70.0 s and 97.5 → 93.5 s in all, each score the same. Every first round of at most
#: REFINE_CORNER_ROWS at the corners (the probe not asked) was faster in all (73.1 → 68.6 s)
#: but not everywhere: mixed seed 3333's trial 8 (4,569 candidates, imbalanced classes with
#: balanced weights, where the probe restarts from the presolve's solution) 1.2–1.3 → 1.8–2.0
#: s.
REFINE_CORNER_ROWS = 6000
REFINE_CORNER_MIN_C = 50.0


def _sample_step(m):
    """The stride of the rows ``rank="auto"`` compares (at most :data:`AUTO_RANK_SAMPLE`)."""
    return -(-m // AUTO_RANK_SAMPLE)


def _starved_text(starved):
    """A stage's ``starved`` record (:meth:`SVC._starved`) in words."""
    return f"class {starved['class']!r} predicted for {starved['predicted']:,} of its " \
        f"{starved['rows']:,} rows compared (< AUTO_RANK_STARVED={AUTO_RANK_STARVED:g})"


#: The low-rank path's Huber corners start at this half-width (then × 0.1 a stage, down to
#: :data:`HINGE_SMOOTHING`). Above 1, so that at z = 0, where every residual is 1, every row is
#: inside the corner and the first Newton step is the LS-SVM step. With Zhou's δ = 1 every row
#: sits on the corner's edge, without curvature, and the first steps (Hessian ``K_JJ`` alone)
#: moved by 1e-12 on ijcnn1. ijcnn1 (rank 1,000, with a presolve of 5,000 rows): 1.17 →
#: 1.10 s; Covtype's 7 classes on 50,000 rows: 18.8 → 18.0 s; the same accuracy.
LOWRANK_DELTA0 = 2.0

#: The low-rank path's presolve (a solve on evenly strided rows that starts the full one,
#: :func:`~svmgpu.solvers.newton.semismooth_newton`) holds this many rows per landmark, at most
#: an eighth of the rows, and runs when that is 2 rows per landmark at least. ijcnn1 (49,990
#: rows, rank 1,000): 5,000 rows 2.29 → 1.17 s, 10,000 rows 1.77 s, the same accuracy;
#: Covtype's 7 classes on 50,000 rows (one-vs-one pairs of 1,000 to 43,000 rows): 17.5 →
#: 11.1 s, the same accuracy.
LOWRANK_PRESOLVE_PER_RANK = 5


def _lowrank_presolve(m, r, warm):
    """The rows of the low-rank path's presolve (:data:`LOWRANK_PRESOLVE_PER_RANK`) on m rows
    and r columns, or None: too few, or a warm start (a smaller rank's solution). SVR's from
    session 25: its first stage from z = 0 took 14 Newton steps on all 20,000 rows of
    friedman2 (0.085 s), from 625 rows' solution 0.053 s; friedman1 and friedman3 the same
    stages and R² (second fits, alternating)."""
    n = min(LOWRANK_PRESOLVE_PER_RANK * r, m // 8)
    return n if n >= 2 * r and not warm else None

#: The relative gradient that ends an intermediate corner of the low-rank path's continuation
#: (the last one ends at ``tol``): a wide corner only has to start the next one near its
#: solution. Covtype's 7 classes on 50,000 rows: 1e-4 10.4 s, 1e-2 8.7 s (74.11 % both), 3e-2
#: and 1e-1 8.0 s but 74.08 %; ijcnn1 the same time and accuracy.
LOWRANK_STAGE_TOL = 1e-2

#: The low-rank Newton method's last test besides its gradient's near the hard margin
#: (``C · max(s) · k`` above :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C`, k the largest
#: kernel value at a landmark; ``NewtonOptions.decrement_tol``): a point it accepts must have
#: a Newton decrement of at most this share of F. There the gradient test, relative to
#: ``‖∇F(0)‖``, passed far from the minimum along the flat directions of the penalty ``K_ZZ``:
#: mixed fuzz seed 9191's trial 2 ('poly' at ``gamma=3``, k about 4·10⁵) stopped where the
#: decrement was 5 and 583 times F, 98.0 % against the exact SVM's 99.6 %; with this test
#: 99.4 % (1e-2: 99.0 %), as a gradient test 10⁴ times tighter. Elsewhere it is off: at every
#: stage ijcnn1 paid a Hessian update and its factor for nothing, 0.537 → 0.568 s, its stops'
#: decrements 6·10⁻⁹ to 6·10⁻⁴ of F.
LOWRANK_DECREMENT_TOL = 1e-3

#: ``region_rows="auto"`` of the partitioned path: k-means into ``ceil(m / PARTITION_ROWS)``
#: regions. Covtype (464,810 rows, C = 32, γ = 32, ρ = 0.5, 2-core CPU, seeds 0–2): 465
#: regions reached 96.12–96.18 % in 16–17 s; 310 regions (1,500 rows) were slower and no more
#: accurate, 930 (500 rows) slower (k-means and per-region overheads) and 0.05 points less.
PARTITION_ROWS = 1000

#: ``region_overlap="auto"``: a row also joins the region of its second-nearest centre when
#: ``k(x, c₂) ≥ e^(−ρ) k(x, c₁)`` for the RBF kernel (its squared distance to c₂ exceeds that
#: to c₁ by less than ``ρ / γ``; other decaying kernels: ``negligible_distance(e^(−ρ))²``), and
#: a new point in that band is predicted by both regions' models, blended (FaLK-SVM's
#: overlapping local models, Segata and Blanzieri 2010, in one band). Covtype as above, 465
#: regions: ρ = 0.32 96.10–96.14 % (17 s), ρ = 0.5 96.12–96.18 % (16–17 s after the faster
#: k-means), ρ = 0.64 96.15–96.19 % (20 s), ρ = 1 96.18 % (23 s); without overlap, 233 regions
#: gave 95.94 %.
REGION_OVERLAP = 0.5

#: Regions solved at once on the CPU (one BLAS thread each; :func:`svmgpu.backend.map_threads`):
#: each holds its kernel matrix, which the memory budget counts.
PARTITION_THREADS = 2

#: ``solver="auto"`` takes the partitioned path (above :data:`EXACT_MAX_ROWS` rows) when the
#: median kernel value between random pairs of rows is below this: typical rows do not
#: interact, so regions lose little. Covtype at γ = 32: about 1e-59. ijcnn1 at γ = 2 (LIBSVM's
#: tuned value): 0.0054, where the partition beat 1,000 landmarks at C = 1, 4 and 32 (98.41 /
#: 99.04 / 98.82 % against 98.05 / 98.75 / 98.35 %, in a third of the time). ijcnn1,
#: make_classification and Checkerboard with gamma="scale": 0.05–0.4, where landmarks serve
#: better (ijcnn1 at C = 1: 97.95 % against the partition's 96.3 %).
LOCAL_KERNEL_LEVEL = 1e-2

#: SVC's ``solver="auto"`` takes the low-rank path for a local kernel (:data:`LOCAL_KERNEL_LEVEL`)
#: up to this many rows, as for any other: its growth and refinement solve the exact problem
#: on the candidate support vectors (:data:`REFINE_MIN_RANK`), where the regions of the
#: partitioned path (above) fit a model of their own, each with its own intercept. On the
#: medium fuzz sets of 11,000–14,000 rows at ``gamma=1`` the partition was 10–40 times faster
#: than the exact SVM but 2.5–11 points below its accuracy on three (seed 1717's trial 6, 10
#: features, C = 0.1: 69.45 against 80.90 %, scikit-learn 80.75 % in 2.5 s; seed 1515's
#: trial 10: 83.9 against 86.30 %; seed 1313's trial 23: 71.05 against 73.55 %) and far above
#: it on three whose kernel values between rows are all below 1e-20 (seed 1313's trial 18
#: and seed 1515's trials 20 and 23: 81.5 / 60.4 / 96.0 against 48.6 / 19.5 / 50.3 %,
#: scikit-learn's), where each test row's prediction is its region's intercept. The low-rank
#: path gave the exact SVM's accuracy on all six in 0.15–7.9 s (the exact path 0.9–12.8 s;
#: scikit-learn 2.5–15 s) and on seed 1818's trial 16 (12,000 rows of one feature, three
#: classes, ``gamma=3``, C = 0.05) 92.15 % in 0.13 s (the exact path 7.3 s, the partition
#: 92.00 % in 1.06 s, scikit-learn 0.60 s). Covtype (381,012 rows at γ = 32) and tuned ijcnn1
#: (49,990 rows at γ = 2) keep the partition; SVR, which has no refinement, too.
LOCAL_REFINE_MAX_ROWS = REFINE_WHOLE_MAX_ROWS  # (every such problem can be refined whole)

#: Rows sampled for the locality test.
_LOCALITY_SAMPLE = 256

#: The penalty ``½ ε b²`` of the low-rank path's intercept: small enough to leave b free, large
#: enough to keep the Newton system positive definite (SVR's centred on the targets' median:
#: :meth:`SVR._lowrank_solve`).
_INTERCEPT_PENALTY = 1e-8

#: The ridge added to the low-rank path's RKHS penalty ``K_JJ`` (as the reduced SVM's): keeps
#: the Newton systems positive definite where landmarks are nearly dependent.
_RIDGE = 1e-8

#: Newton steps per binary problem when ``max_iter=-1`` (no limit, as in scikit-learn): a
#: safeguard; the semi-smooth Newton method ends in tens of steps.
_MAX_NEWTON_STEPS = 1000

#: Rows up to which an exact solve that ends unconverged before ``max_iter`` is solved again
#: by the reduced Newton method over all its rows as landmarks (:meth:`_exact_fallback`: the
#: same model, in the coordinates ``z`` of the low-rank path, whose Newton systems carry the
#: RKHS penalty). Primal Newton in the kernel's own coordinates can creep where no row sits in
#: a quadratic piece and the kernel matrix is nearly singular: a 158-row region at γ = 0.013
#: (12 rows against 146) took 704 steps of 2⁻²⁹ and ended 0.79 (relative) from scikit-learn's
#: decision values (since session 24 the line search's sufficient decrease solves that one in
#: 9 steps: :data:`svmgpu.solvers.exact._ARMIJO`). Each of the fallback's steps factors an
#: (m + 1)-square matrix.
EXACT_FALLBACK_ROWS = 3000
#: :meth:`_FrontDoor._exact_fallback`'s model is reported unconverged (a ``ConvergenceWarning``)
#: where the exact problem's fixed point at its residuals, ``α* = C s σ ψ'(r)``, gives decision
#: values ``K α* + b`` farther from the model's than this share of their scale (the margin, 1,
#: for classification; the largest |f − b| for regression). Its Newton method over independent
#: rows as landmarks stops by its own gradient test, which a kernel matrix of condition far
#: beyond float64's cannot resolve: the 'poly' kernel at degree 10 and ``gamma=1`` on 1,500
#: rows of 5 standard normal features (a diagonal of 3·10⁻¹¹ to 10¹³) ended "converged" at a
#: hinge objective of 658 against scikit-learn's 147 (78.4 % of the training rows right
#: against 95.9 %), silently; there K α* was 2·10⁹ from the model. The fallbacks of the test
#: suite's stalls: 10⁻⁸ to 2.5·10⁻⁶ of the margin, and 0.008 at C = 0.1 where the model is
#: scipy's minimum.
FALLBACK_KKT = 0.5
#: The exact path's first solve of a problem counts as stalled, and continues from wider
#: losses (:meth:`SVC._losses` / :meth:`SVR._losses` with ``continuation``), after this many
#: Newton steps in a row of at most :data:`svmgpu.solvers.exact.SHORT_STEP` (2⁻⁵; 2⁻⁶ until
#: session 51) each (``exact_newton``'s ``short_steps``); the continuation's own stages are
#: not cut so.
EXACT_SHORT_STEPS = 10
#: Rows up to which the exact path's first solve of a problem whose Newton steps crawl
#: (:data:`EXACT_SHORT_STEPS` steps in a row of at most 2⁻⁵, or in the hard-margin regime, ``C
#: · max(s) · max Kᵢᵢ`` above 100, of at most 2⁻⁹: ``exact_newton``'s ``short_steps`` and
#: ``hard_short_steps``), or that stalls otherwise (no descent along a Newton step), is solved
#: by SMO on its dual instead of the continuation from wider corners
#: (:func:`svmgpu.solvers.smo.smo`: the same Huber loss, LIBSVM's working sets, shrinking and
#: stopping rule, from α = 0). Each SMO iteration costs a few array calls over the working set
#: (60–170 µs here, LIBSVM's 1–2 µs); a step of the crawl a factorization. The stalls (session
#: 49): mixed seed 2222's trial 38 (SVR, 6,000 rows of 200 features, the 'poly' kernel at
#: ``gamma=3``, C = 100, ε = 1; scikit-learn 0.50 s, R² 0.196): the continuation's 1,012 steps
#: 14.0 s, unconverged at R² 0.334; by SMO 1.2 s, R² 0.196. Seed 1616's trial 33 (SVC, 2,500
#: rows, C = 0.05): 0.48 → 0.15 s; seed 606's trial 39 (SVR, 6,000 rows at C = 100 with
#: weights: 29,736 SMO iterations) 3.1 → 2.1 s, shrinking in. The crawls (session 48): mixed
#: fuzz seed 2121's trial 43 (SVR, 2,500 rows of 40 features, the 'poly' kernel at
#: ``gamma="auto"``, C = 100, ε = 0.01; 2,260 of scikit-learn's 2,500 support vectors free):
#: 587 Newton steps, 14.4 s; with SMO 1.6 s (its 10,030 iterations 0.8 s; scikit-learn 0.37 s,
#: 10,038 iterations), R² 0.931373 both. Seed 909's trial 12 (SVR, 2,500 rows, C = 100, ε =
#: 0.1): the continuation's six stages 3.7 s, SMO 1.2 s (scikit-learn 0.55 s). Below 600 rows
#: the continuation's LS-SVM start and stages took 0.10–0.12 s where SMO takes 0.01–0.04 s
#: (scikit-learn 0.00–0.02 s): seeds 606 t22, 909 t34, 1212 t3 and t41, 1919 t19, t45 and t49,
#: 2121 t41. On NumPy every size (as :data:`SMO_SYSTEM_ROWS`; session 54): the continuation's
#: widest Huber loss puts nearly every row in a quadratic piece, and on 12,000 rows its
#: factorizations took 16 s of mixed seed 77's trial 8 (SVR solved exactly, C = 1, targets of
#: spread 100; 6.1 s by SMO, scikit-learn 4.5 s), 26 → 7.5 s on seed 3131's trial 38, 13.8 →
#: 3.7 s on seed 1818's trial 1. The fuzz trials above 6,000 rows whose crawls reach SMO so
#: (174 of the sweeps' slower trials scanned; the same scores, two fits each): medium seed
#: 505's trial 5 14.9 → 8.6 s, mixed 505's trial 2 8.6 → 6.7 s, medium 2020's trial 12 28.1 →
#: 23.1 s, medium 21's trial 18 13.2 → 13.8 s, medium 2525's trial 5 19.5 → 22.0 s.
SMO_MAX_ROWS = 6000
#: SMO's iterations a row at most there: a crawl can also converge soon, where SMO (as
#: LIBSVM) takes far longer; then the Newton iteration goes on from SMO's last point, which
#: starts it well. Mixed fuzz seed 202's trial 15 (SVR, 2,500 rows of 200 features, the
#: 'linear' kernel, C = 10, ε = 0.01, targets of spread 100; scikit-learn 50 s): Newton's
#: 1,388 steps over systems of about 200 rows 1.7 s; SMO unconverged after 250,000
#: iterations, 22 s; with 10 a row 3.7 s, with 5 2.3 s. Seed 101's trial 43 (SVR, 2,500
#: rows, C = 100; scikit-learn 4.8 s): the continuation 0.74 s, SMO to 10 a row then 78
#: Newton steps 2.4 s, to 5 a row 1.5 s. 2121's trial 43 needs 4.0 a row.
SMO_ITERATIONS = 5
#: :data:`SMO_ITERATIONS` where the Newton iteration stopped at a system past
#: :data:`SMO_SYSTEM_ROWS`: Newton's method from an unconverged SMO's point meets systems of
#: that size again (a factorization of 6,000 rows 0.6 s here), where a crawl's finish is
#: cheap. Session 57, medium fuzz trials whose refinements reach such systems (each fit in a
#: fresh process, 5 / 10 / 20 a row): seed 5050's trial 14 (binary, 11,000 × 30, C = 100;
#: scikit-learn 6.2 s) 12.3 / 9.4 / 9.7 s, 2020's trial 4 (the same shape; 8.8 s) 19.1 /
#: 14.9 / 15.1 s; six others 65.0 / 65.8 / 67.2 s in all (505/10, 4747/3, 3838/5, 1313/18,
#: 2020/9, 3838/6; this VM's spread, 3838/6 6.8–9.4 s either way).
SMO_LARGE_ITERATIONS = 10
#: SMO's iterations may go on to this many times :data:`SMO_ITERATIONS` (or
#: :data:`SMO_LARGE_ITERATIONS`) a row where the decrease of its violation says it converges
#: by then (:func:`svmgpu.solvers.smo.smo`'s ``extend``), instead of Newton's method from its
#: point: mixed fuzz seed 4848's trial 40 (SVR, 2,500 rows of 40 features, C = 100, ε = 0.01;
#: scikit-learn 0.56 s) converged at 6.3 a row, where 5 a row then 29 Newton steps took 2.4 s.
SMO_EXTEND = 2.0
#: On NumPy, an exact problem whose Newton system (or LS-SVM / corner start) would exceed this
#: many rows is solved by SMO instead, whatever its size (the exact path's rows, a pair, a
#: refinement's candidates; :data:`SMO_ITERATIONS` a row, then Newton's method from there):
#: a factorization costs q³ / 3, 0.6 s at 6,000 rows here (117 GFlop/s), about what SMO takes
#: for a whole problem of that size, and a Newton iteration takes 8–30 of them. Medium fuzz
#: seed 3838's trial 6 (14,000 rows of 10 features, three classes, RBF at ``gamma=1``, a
#: local kernel, C = 10; scikit-learn 6.3 s): its pairs of 9,300 rows held systems of up to
#: 7,036 rows and a corner start of all of them, 17.6 s on the exact path (4.5 s now) and
#: 20 s refined (15 s; 8.6–9.2 s with the whole rows, :data:`LOWRANK_MIN_CAPTURE`); one pair by
#: SMO 1.25 s (11,226 iterations) against 11.6 s by Newton. At 4,000 rows, pairs whose
#: largest systems held 4,072 and 5,007 rows (seed 3434's trials 8 and 7: noisy, five
#: classes, 80 features, C = 100 and 10) took 22,000 SMO iterations each, 9.1 → 11.7 s and
#: 15.4 → 19.9 s (at 6,000: 9.3 and 16.6 s); seed 3838's trial 0 (pairs of 7,300 rows: the
#: corner start) 39.6 → 34.6 s (at 6,000 40.2 s). The ``make_classification`` refinement
#: (8,732 candidates, systems of at most 2,287 rows) stays with Newton: 0.42 s against SMO's
#: 1.0–1.7 s. On a GPU the factorizations are fast and each SMO iteration reads scalars to
#: the host: Newton there.
SMO_SYSTEM_ROWS = 6000
#: :data:`SMO_SYSTEM_ROWS` for a problem of more rows than this whose ``C · max(s) · k`` is at
#: most :data:`SMO_SOFT_MAX_C` (k = max(1, max Kᵢᵢ)): with a small box SMO converges in a few
#: passes (LIBSVM's own default, C = 1), where Newton's large systems cost a factorization a
#: step. Session 63 (one fit a process, alternating; the same scores): medium fuzz seed 3838's
#: trial 1 (14,000 rows of 10 features, five classes, RBF at ``gamma=1``, C = 1; pairs of
#: 5,600 rows refined whole from the corners, an LS-SVM start of 5,600 rows and Newton steps
#: of 1/2 on systems of 4,000–4,300 rows, 2 s a pair) 20.1–20.5 → 7.0–7.2 s (scikit-learn
#: 10.3 s); seed 5252's trial 0 (binary, 14,000 × 5, C = 1; 12 steps on systems of up to 5,102
#: rows) 3.6 → 2.85 s, seed 6262's trial 6 3.0 → 2.5 s. At C = 100 the same limit made rounds
#: of 5,000–6,000 rows that restart from the corners (:data:`REFINE_CORNER_ROWS`) slower by
#: SMO: medium 2323's trial 7 7.0 → 10.7 s, mixed 101's trial 41 8.5 → 13.4 s; at C = 10 it
#: changed little (seed 3434's trial 7 16.9 / 17.4 / 19.2 against 15.4 / 17.4 / 18.3 s, mixed
#: 2121's trial 12 8.2 against 8.3 s). The fuzz grid's C is 0.05, 0.1, 1, 10 or 100. Not
#: where K's rows are diagonally dominant (``CG_MAX_DOMINANCE``, sampled rows): its Newton
#: systems are solved by conjugate gradients, and SMO still takes an iteration or more a
#: row: medium seed 707's trial 18 (14,000 rows of 80 features, five classes, ``gamma=1``,
#: K about I, C = 1) 1.7 → 7.1 s by SMO, 1.4–1.6 s with the guard. At 4,000 rows with the
#: guard (5,000 without it first; seed 21's trial 15, K about I, had been 1.0 → 4.6 s at
#: 4,000): five-class trials of 11,000 rows (pairs of 4,400 rows, the corner start at once by
#: SMO) seed 2525's trial 17 9.3 → 5.0 s (scikit-learn 4.8 s), 3636's trial 11 8.3 → 4.1 s
#: (4.0 s), seven others the same or faster; ``make_classification`` at 5,000 / 10,000 rows
#: (C = 1, the exact path) 0.17 / 0.37 s either way.
SMO_SOFT_SYSTEM_ROWS = 4000
SMO_SOFT_MAX_C = 3.0


def _by_class(labels, k, offset, *, xp):
    """``(perm, bounds)``: the stable permutation that sorts the class indices ``labels``
    (0 … k − 1) and where each class's run starts and ends in that order, counted from
    ``offset`` (``bounds[c]:bounds[c + 1]``, host ints)."""
    counts = fetch_scalars(*[xp.count_nonzero(labels == c) for c in range(k)], xp=xp)
    bounds = [int(offset)]
    for c in counts:
        bounds.append(bounds[-1] + int(c))
    return xp.argsort(labels, stable=True), bounds


def _solve_region_task(est, max_iter, Xj, payload):
    """One region's solve on a Dask worker (:func:`svmgpu.distributed.solve_on_rows`): the
    estimator copy in the context of the region's rows, its result without the per-row
    vectors (only the support vectors travel back)."""
    y, sample_weight = payload
    est._ctx = compute_context(Xj, dtype=est.dtype, memory_budget=est.memory_budget)
    xp = est._ctx.xp
    y = asarray(y, device=est._ctx.device)
    if sample_weight is not None:
        sample_weight = asarray(sample_weight, device=est._ctx.device)
    alpha, nz, res, it = est._solve_region(xp.astype(Xj, est._ctx.dtype), y, sample_weight,
                                           max_iter)
    res.info.pop("margins", None)
    return alpha, nz, res, it


class _FrontDoor:
    """What SVC and SVR share: the choice of the path, the kernel matrix or the landmarks, the
    two solvers, the support vectors and one prediction pass over kernel blocks. Subclasses
    give the losses (:meth:`_losses`) and the low-rank solve (:meth:`_lowrank_solve`)."""

    _dask_labels_on_client = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.svm.full_kernel_form = True  # (the exact path is the full kernel)
        tags.svm.dask = True  # (on the partitioned path only: _choose_solver says so)
        return tags

    def _exact_bytes(self, m, dense=False):
        """The exact path's memory: the kernel matrix, a pair's copy of it, the rows and their
        side of the kernel prepared for the kernel rows' products (16 bytes an entry: two
        float64 matrices, or a float32 one, a pair's copy and the float64 one of a
        refinement, :meth:`_exact_solve`; :class:`~svmgpu.kernels.KernelRows`). The rows as
        the fit holds them (:meth:`_prepare_fit`: sparse rows of few nonzeros stay sparse,
        and 2,000 text rows of 100,000 features had been charged 3.2 GB as dense ones), or
        ``dense`` (the partitioned path's regions)."""
        row = self._row_bytes if self._row_bytes is not None and not dense else \
            (2 * self.n_features_in_ + 2) * 8
        return int(16 * m * m + m * row)

    def _float32_kernel(self, m, region=False):
        """Whether a fit on m rows holds its kernel values in float32: with ``dtype=None`` and
        a translation-invariant kernel (RBF, Laplacian), every region of the partitioned path,
        and from :data:`EXACT_FLOAT32_ROWS` rows on the exact path's kernel matrix and the
        low-rank path's features (α or z, the margins, the RKHS penalty and the Newton systems
        stay float64; the support vectors or landmarks keep X's dtype). Not the linear and
        polynomial kernels: their products round relative to the rows' norms, which no shift
        of the rows leaves unchanged (features offset by 10³: 53 % test accuracy against
        85 % in float64)."""
        return self.dtype is None and self.kernel_.translation_invariant and \
            (region or m >= self._float32_rows())

    def _float32_rows(self):
        """The rows from which a fit holds its kernel values in float32
        (:data:`EXACT_FLOAT32_ROWS`)."""
        return EXACT_FLOAT32_ROWS

    def _shift_of(self, X):
        """The common shift of rows before their float32 cast (the kernel is translation
        invariant: :meth:`_float32_kernel`): X's column means (float64) for dense X, None
        for sparse X."""
        if is_sparse(X):
            return None
        return get_namespace(X).mean(X, axis=0)

    def _float32_risk(self, arrays, shift):
        """Why float32 cannot hold the kernel values of these rows (less ``shift``) well, or
        None: their squared distances overflow or underflow float32, or (RBF) their
        exponents would carry more than :data:`FLOAT32_RBF_ROUNDING` of rounding."""
        xp = get_namespace(*arrays)
        amax = sq = 0.0
        for A in arrays:
            a, q = row_extent(A, shift=shift, xp=xp)
            amax, sq = max(amax, a), max(sq, q)
        fi = xp.finfo(xp.float32)
        problem = "overflow" if not math.isfinite(sq) else \
            distance_range_problem(amax, int(arrays[0].shape[1]), fi)
        if problem is not None:
            return f"the features reach {amax:.3g} from their mean: float32 would {problem}"
        if isinstance(self.kernel_, RBF):
            rounding = float(fi.eps) * self.kernel_.gamma * sq
            if rounding > FLOAT32_RBF_ROUNDING:
                return (f"gamma * max |x - mean|^2 = {self.kernel_.gamma * sq:.3g}: float32 "
                        f"would round the RBF exponents by {rounding:.2g} > "
                        f"FLOAT32_RBF_ROUNDING={FLOAT32_RBF_ROUNDING:g}")
        return None

    def _kernel_rows(self, *arrays, shift=None, check=True):
        """The rows of ``arrays`` (evaluated against each other) as this fit's kernel sees
        them: less ``shift`` (None for sparse rows) and in float32 where the fit holds its
        kernel values in float32 and float32 holds these rows (:meth:`_float32_risk`;
        ``check=False``: the fit's own rows, checked by ``_prepare_fit``); else unchanged. A
        common shift leaves a translation-invariant kernel's values unchanged and spends
        float32's digits on the features' spread, not their offset."""
        if not getattr(self, "_kernel_float32", False):  # (also a model pickled before it)
            return arrays
        if any(is_sparse(A) for A in arrays):
            shift = None
        if check and self._float32_risk(arrays, shift) is not None:
            return arrays
        xp = get_namespace(*arrays)
        return tuple(astype_rows(A, xp.float32, xp=xp, shift=shift) for A in arrays)

    def _choose_solver(self, X, budget):
        """``(solver_, why)`` of this fit (see the module notes); Dask input is taken on the
        partitioned path only."""
        solver, why = self._choose_path(X, budget)
        if self._dask_fit and solver != "partition":
            raise TypeError(
                f"{type(self).__name__} takes Dask input on its partitioned path only (regions "
                f"solved on the workers), and this fit would take the {solver} path ({why}); "
                "pass solver='partition' for a local kernel, fit on X.compute(), or use "
                "UniSVC/UniSVR, whose low-rank solvers run on Dask")
        return solver, why

    def _choose_path(self, X, budget):
        m = X.shape[0]
        exact_bytes = self._exact_bytes(m)
        if self.solver != "auto":
            return self.solver, f"solver={self.solver!r}"
        if self.rank is None:
            return "exact", "rank=None"
        if self.rank != "auto":  # a rank asks for landmarks: never silently the exact path
            return "lowrank", f"rank={self.rank}"
        dim = self.kernel_.feature_dimension(int(X.shape[1]))
        per_name, per = self._finite_rank_rows()
        if dim is not None and m >= FINITE_RANK_MIN_ROWS and dim * per <= m:
            return "lowrank", (f"the {self.kernel_.name!r} kernel on {X.shape[1]:,} features has "
                               f"rank at most {dim:,} (its feature space), which landmarks hold "
                               f"exactly ({m:,} rows ≥ {per_name}={per} a dimension)")
        name, top = self._exact_max_rows()
        if m <= top and exact_bytes <= budget:
            return "exact", f"{m:,} rows, and the kernel matrix fits the budget"
        big = (f"{m:,} rows > {name}={top:,}" if m > top else
               f"the kernel matrix ({format_bytes(exact_bytes)}) exceeds the memory budget "
               f"({format_bytes(budget)})")
        level = self._kernel_locality(X)
        if level is not None and level < LOCAL_KERNEL_LEVEL:
            local = (f"the kernel is local (median kernel value {level:.2g} between random "
                     f"rows < {LOCAL_KERNEL_LEVEL:g})")
            if not (self._refines and m <= LOCAL_REFINE_MAX_ROWS and not self._dask_fit):
                return "partition", f"{big}, and {local}"
            return "lowrank", (f"{big}, and {local}, but {m:,} rows ≤ LOCAL_REFINE_MAX_ROWS="
                               f"{LOCAL_REFINE_MAX_ROWS:,}: landmarks refined into the exact "
                               "problem")
        return "lowrank", big if level is None else \
            f"{big}, and the kernel is not local (median value {level:.2g} between random rows)"

    def _exact_max_rows(self):
        """``(name, rows)``: the constant up to which ``solver="auto"`` takes the exact path."""
        return "EXACT_MAX_ROWS", EXACT_MAX_ROWS

    def _finite_rank_rows(self):
        """``(name, rows)``: the rows a dimension of a finite-rank kernel's feature space from
        which ``solver="auto"`` takes the low-rank path (:data:`FINITE_RANK_ROWS`)."""
        return "FINITE_RANK_ROWS", FINITE_RANK_ROWS

    def _rank_change_limit(self):
        """``(name, value)``: the change of the training predictions that ends ``rank="auto"``'s
        growth (:meth:`_output_change`)."""
        return "AUTO_RANK_CHANGE", AUTO_RANK_CHANGE

    def _compared_classes(self, shared, m):
        """The class of each row ``rank="auto"`` compares (:meth:`_training_outputs`'s rows),
        for :meth:`_starved`: None here (SVR)."""
        return None

    def _starved(self, outputs, compared):
        """Where the model of the decision values ``outputs`` starves a class
        (:data:`AUTO_RANK_STARVED`): its record; None here (SVR)."""
        return None

    def _kernel_locality(self, X):
        """The median kernel value between random pairs of rows (None for a kernel that does
        not decay with distance): :data:`_LOCALITY_SAMPLE` rows drawn with seed 0."""
        if self.kernel_.negligible_distance(negligible_level(X.dtype, xp=self._ctx.xp)) is None:
            return None
        xp, m = self._ctx.xp, X.shape[0]
        n = min(_LOCALITY_SAMPLE, m)
        rows = random_subset(m, n, seed=0, device=self._ctx.device)
        S = dask_data.rows_of(X, rows, device=self._ctx.device) if self._dask_fit else \
            dense_rows(X, rows, xp=xp)
        K = self.kernel_.block(S, S)
        off = xp.reshape(K[:n - 1, 1:], (-1,))  # (the upper part holds every pair once)
        # (values sorted without the standard's default stable=True: the same values, and
        # NumPy's stable sort of these 65,025 float32 is 3.6 ms against 0.11 ms)
        if n < 2:
            return None
        return fetch_scalars(xp.sort(off, stable=False)[off.shape[0] // 2], xp=xp)[0]

    def _prepare_fit(self, X, *, ctx, sample_weight):
        m, xp = X.shape[0], ctx.xp
        self.kernel_ = self._make_kernel(X, sample_weight)
        self.rank_path_ = None
        # (bytes of a row as the exact path holds it where its rows stay sparse: a row's
        # stored values and column indices, twice; None: dense rows, _exact_bytes)
        self._row_bytes = 24 * X.nnz / max(m, 1) + 16 if keeps_sparse(X) else None
        self.solver_, why = self._choose_solver(X, ctx.budget_bytes)
        # (prediction computes its kernel values in the fit's dtype: _prepare_predict)
        self._kernel_float32 = self._float32_kernel(m, region=self.solver_ == "partition")
        self._kernel_shift = None  # (the partitioned path shifts each region by its own)
        if self._kernel_float32 and self.solver_ != "partition":
            self._kernel_shift = self._shift_of(X)
            risk = self._float32_risk([X], self._kernel_shift)
            if risk is not None:
                self._kernel_float32, self._kernel_shift = False, None
                self._log.info("kernel values in float64, not float32: %s", risk)
        if self.solver_ == "lowrank" and self.rank is None:
            raise ValueError("solver='lowrank' needs a rank (an int, or 'auto'); rank=None is "
                             "the exact path")
        self._log.info("solver %s: %s", self.solver_, why)
        if self.solver_ == "exact":
            check_fits(self._exact_bytes(m), ctx.budget_bytes,
                       what=f"{type(self).__name__}'s exact path: the kernel matrix of {m:,} "
                            "samples",
                       hint="use solver='lowrank' (or UniSVC/GreedySVC) for this many samples"
                       if self._task == "classification" else
                       "use solver='lowrank' (or UniSVR) for this many samples")
            self.rank_ = None
            # (sparse rows stay sparse where few of their entries are nonzero: the kernel
            # rows then come from sparse products, KernelRows; SPARSE_SIDE_DENSITY)
            X_fit = model_rows(X, slice(None), xp=xp)
            self._X_fit = X_fit  # (the fit's own: only the support vectors are kept)
            order = self._class_order()
            if order is not None:  # K's rows by class: a pair's block is two ranges of it
                order, bounds = order
                X_fit = take_rows(X_fit, order, xp=xp)
            (Xk,) = self._kernel_rows(X_fit, shift=self._kernel_shift, check=False)
            if order is None:
                return {"K": self._kernel_matrix(Xk)}
            if not self._whole_kernel(bounds):  # (each pair's own kernel matrix: _pair_block)
                return {"rows": Xk, "order": order, "bounds": bounds}
            return {"K": self.kernel_.block(Xk, Xk), "order": order, "bounds": bounds}
        if self.solver_ == "partition":
            return self._prepare_regions(X, ctx=ctx)
        cand = positive_rows(sample_weight, xp=xp)
        n_cand = m if cand is None else int(cand.shape[0])
        seed = 0 if self.random_state is None else self.random_state  # deterministic
        pool = None
        (Xf,) = self._kernel_rows(X, shift=self._kernel_shift, check=False)
        itemsize = numpy_dtype(Xf.dtype).itemsize
        plan = functools.partial(self._feature_plan, ctx=ctx, itemsize=itemsize,
                                 n_features=None if is_sparse(Xf) else int(Xf.shape[1]))
        if self.rank == "auto":  # the first of nested random sets (grown by _grow_rank)
            r_max = min(AUTO_RANK_MAX, n_cand)
            self.rank_ = min(AUTO_RANK_START, r_max)
            pool = random_subset(n_cand, r_max, seed=seed, device=ctx.device, sort=False)
            if cand is not None:
                pool = xp.take(cand, pool)
            pool, n_front = self._class_quota(pool, cand, seed)
            self.rank_ = min(max(self.rank_, n_front), r_max)
            in_memory, blocks = plan(m, self.rank_ + 1)
            fixed = min(AUTO_RANK_UNGROWN, r_max)
            if fixed > self.rank_:  # grown only where its features can reach `fixed` held,
                try:  # else recomputed per block at `fixed`, not grown (AUTO_RANK_UNGROWN)
                    held, fixed_blocks = plan(m, fixed + 1)
                    if not (in_memory and held):
                        self.rank_, in_memory, blocks = fixed, held, fixed_blocks
                except MemoryError:  # (its r × r matrices, or a block row of its features
                    # recomputed, pass the budget: the first rank, grown as far as the budget
                    # allows where its features are held. Session 67: 20,000 rows at 67.4 and
                    # 67.6 MB had raised in the first pass, where 67.0 and 68.5 MB fit)
                    pass
            J = pool[:self.rank_]
        else:
            self.rank_ = min(int(self.rank), n_cand)
            J = select_reduced_set(X, self.kernel_, self.rank_, "random", candidates=cand,
                                   random_state=seed, memory_budget=ctx.budget_bytes)
            J = self._class_quota(J, cand, seed)[0]
            in_memory, blocks = plan(m, self.rank_ + 1)
        order = self._class_order()  # one-vs-one: rows and landmarks grouped by class
        self._landmark_bounds = None
        if order is not None:
            Xf = take_rows(Xf, order[0], xp=xp)  # (sparse rows stay sparse)
            J, bounds = self._class_sorted(J, 0)
            self._landmark_bounds = [bounds]
        Z = model_rows(X, J, xp=xp)  # (sparse rows of few nonzeros stay sparse)
        self._landmarks = (J, Z)
        self.rank_path_ = [{"rank": self.rank_, "changed": None, "seconds": None}]
        flat = out = None
        if in_memory and pool is not None and int(pool.shape[0]) > self.rank_ and \
                is_numpy(xp):  # (every stage's features in one buffer: _grow_rank)
            cap = min(int(pool.shape[0]) + 1,
                      max(self.rank_ + 1, ctx.budget_bytes // (m * itemsize)))
            try:  # (address space: its pages are touched only as the rank grows)
                flat = xp.empty((m * cap,), dtype=Xf.dtype)
                out = xp.reshape(flat[:m * (self.rank_ + 1)], (m, self.rank_ + 1))
            except MemoryError:  # (the system refused it: each stage copied instead)
                flat = None
        shared = self._landmark_features(Xf, Z, blocks, in_memory=in_memory, out=out)
        if order is not None:
            shared["order"], shared["bounds"] = order
        if flat is not None:
            shared["flat"] = flat
        if pool is not None and not in_memory:
            short = self.rank_ < min(AUTO_RANK_UNGROWN, int(pool.shape[0]))
            self.rank_path_[0]["stop"] = (
                "the memory budget (the features are recomputed per block: not grown; "
                + (f"the r x r matrices of AUTO_RANK_UNGROWN={AUTO_RANK_UNGROWN} landmarks "
                   "pass it)" if short else f"AUTO_RANK_UNGROWN={AUTO_RANK_UNGROWN})"))
            if short:  # (make_classification at 20,000 rows, memory_budget="10MB": 125
                # landmarks, 88.3 % on 2,000 training rows against 95.4 % unbounded; it had
                # not warned until session 52, where a growth the budget ended did)
                warnings.warn(
                    f"{type(self).__name__}: rank='auto' stopped at {self.rank_:,} landmarks: "
                    f"{self.rank_path_[0]['stop']}: the model is likely less accurate than "
                    "the rank policy's; raise memory_budget, or pass rank= to fix the "
                    "landmarks", UserWarning, stacklevel=caller_stacklevel())
        elif pool is not None and int(pool.shape[0]) > self.rank_:
            shared["grow"] = (X, Xf, pool)  # (features held in memory: extended, not rebuilt)
        return shared

    def _class_quota(self, J, cand, seed):
        """``(J', n)``: the landmarks J reordered for one-vs-one over more than two classes, so
        that their first n rows hold each class's quota, ``q = min(PAIR_MIN_LANDMARKS,
        len(J) // classes)`` landmarks (all its rows of positive weight where it has fewer):
        its first q landmarks in J's order, then rows of the class drawn outside J (seeded by
        ``seed`` and the class) where J holds fewer, which replace J's last rows; the rest of
        J follows in its order. Every prefix of at least n rows holds every quota, so the
        nested stages of ``rank="auto"`` do. Else ``(J, 0)``."""
        if not self._one_vs_one():
            return J, 0
        xp, y_idx = self._ctx.xp, self._y_idx
        k, total = int(self.classes_.shape[0]), int(J.shape[0])
        q = min(PAIR_MIN_LANDMARKS, total // k)
        if q == 0:
            return J, 0
        lc = xp.take(y_idx, J)
        yc = y_idx if cand is None else xp.take(y_idx, cand)
        counts = fetch_scalars(*[xp.count_nonzero(lc == c) for c in range(k)],
                               *[xp.count_nonzero(yc == c) for c in range(k)], xp=xp)
        front, extra, in_J = [], [], None
        for c in range(k):
            have, rows = int(counts[c]), int(counts[k + c])
            front.append(xp.nonzero(lc == c)[0][:min(q, have)])
            need = min(q, rows) - have
            if need <= 0:
                continue
            if in_J is None:  # (which rows J holds: the draws come from the others)
                in_J = set_rows(xp.zeros(y_idx.shape, dtype=xp.bool, device=y_idx.device),
                                J, xp.ones(J.shape, dtype=xp.bool, device=y_idx.device), xp=xp)
            own = xp.nonzero(yc == c)[0]
            if cand is not None:
                own = xp.take(cand, own)
            own = xp.take(own, xp.nonzero(~xp.take(in_J, own))[0])
            if not isinstance(seed, Integral):  # (a RandomState or Generator: one draw)
                seed = seed_from(seed)
            extra.append(xp.take(own, random_subset(int(own.shape[0]), need, seed=[seed, c],
                                                    device=self._ctx.device, sort=False)))
        pos = xp.sort(xp.concat(front), stable=False)
        keep = set_rows(xp.ones((total,), dtype=xp.bool, device=J.device), pos,
                        xp.zeros(pos.shape, dtype=xp.bool, device=J.device), xp=xp)
        head = xp.concat([xp.take(J, pos), *extra])
        rest = xp.take(J, xp.nonzero(keep)[0])
        return xp.concat([head, rest])[:total], int(head.shape[0])

    def _landmark_features(self, Xf, Z, blocks, *, in_memory=True, known=None, out=None,
                           filled=0):
        """The low-rank path's shared arrays for the landmarks Z: ``P = [K(X, Z), 1]`` in the
        dtype of ``Xf`` (X's rows as the kernel sees them, :meth:`_kernel_rows`; of which
        ``known`` holds the first columns already, or the first ``filled`` columns of ``out``,
        the array P is written into) and the RKHS penalty ``B`` (float64)."""
        xp = self._ctx.xp
        (Zf,) = self._kernel_rows(Z, shift=self._kernel_shift, check=False)  # (rows of X)
        P = reduced_kernel_features(Xf, self.kernel_, astype_rows(Zf, Xf.dtype, xp=xp),
                                    intercept=True, in_memory=in_memory,
                                    memory_budget=blocks, known=known, out=out,
                                    filled=filled)
        B = rkhs_matrix(self.kernel_, Z, xp=self._ctx.xp, intercept=True,
                        intercept_penalty=_INTERCEPT_PENALTY)
        return {"P": P, "B": B}

    def _fit_problems(self, shared, problems, n_problems):
        grow = shared.pop("grow", None)
        if grow is None:
            held = shared.get("K", shared.get("rows"))  # (the exact path's pairs)
            if n_problems > 1 and "order" in shared and held is not None and \
                    held.dtype == self._ctx.xp.float64:
                return self._fit_pairs(shared, list(problems))
            return super()._fit_problems(shared, problems, n_problems)
        problems = list(problems)  # (solved again at each rank)
        t0 = time.perf_counter()
        models = super()._fit_problems(shared, problems, n_problems)
        self.rank_path_[0]["seconds"] = time.perf_counter() - t0
        return self._grow_rank(shared, problems, models, *grow)

    def _fold_params(self):
        """A grown rank is kept by Platt's folds (each fold would grow it again); a refined
        one is not: each fold grows and refines its own, so that the sigmoids are fitted to
        decision values of the same kind of model (exact, not low-rank)."""
        grown = self.solver_ == "lowrank" and self.rank == "auto" and not self._refined()
        return {"rank": self.rank_} if grown else {}

    def _refined(self):
        """Whether this low-rank fit was refined into an exact one (:meth:`_refine`)."""
        path = getattr(self, "rank_path_", None)
        return bool(path) and isinstance(path[-1].get("refined"), dict)

    def _grow_rank(self, shared, problems, models, X, Xf, pool):
        """``rank="auto"``: the rank grown by :data:`AUTO_RANK_GROWTH` a stage (straight to the
        cap from the stage before it where the growth is far from ending, :data:`AUTO_RANK_SKIP`;
        over the stages that cannot end it, :data:`AUTO_RANK_SHRINK`),
        the features of the new landmarks appended to the held ones and every problem solved
        again from its last solution (the new landmarks' coefficients 0), while the training
        predictions still change: more than :data:`AUTO_RANK_CHANGE` of them (SVC: the
        predicted classes; SVR: ``‖Δf‖² / ‖y − ȳ‖²``, more than :data:`SVR_AUTO_RANK_CHANGE`).
        It ends there, at :data:`AUTO_RANK_MAX` landmarks (or the rows), or where the next
        rank's features and solver (:meth:`_feature_plan`) beside the current features would
        pass the memory budget. Each stage is an entry of ``rank_path_``; the last one's models
        are the fit's."""
        xp, ctx = self._ctx.xp, self._ctx
        m, r_max = X.shape[0], int(pool.shape[0])
        t0 = time.perf_counter()
        margins = self._next_margins(models)  # (the next stage's starts)
        out = self._training_outputs(shared["P"], models)
        path = self.rank_path_
        captured = path[0]["captured"] = self._landmarks_capture(shared, Xf)
        if captured is not None and captured < LOWRANK_MIN_CAPTURE and (
                self._refines or self._whole_in_reach(problems, Xf)):
            # (every row of each problem where they are few enough: the low-rank margins
            # cannot pick the candidates either. Medium fuzz seed 3838's trial 6, three pairs
            # of 9,300 rows at 2.4 %: 64 % of the rows candidates, then 2,800–3,400 rows
            # outside violating the refined model and a second solve each, 15 s; whole
            # 8.6–9.2 s, the same model; scikit-learn 6.3 s. SVR, which has no candidates,
            # on every row where it may, as where its growth ends far from settled: mixed
            # fuzz seed 1818's trial 10, 12,000 rows of 200 features, the 'poly' kernel at
            # gamma=0.003, 1.2 % held at 125 landmarks, grew to 2,000 landmarks still
            # changing, 10 s, before that exact solve)
            whole = not self._refines or \
                all(int(y.shape[0]) <= REFINE_WHOLE_MAX_ROWS for _, y, _ in problems)
            exact = self._refine(shared, problems, models, X, decisions=out, whole=whole)
            if exact is not None:  # (a low-rank model cannot tell where the exact one's
                # support vectors are: LOWRANK_MIN_CAPTURE)
                path[-1]["stop"] = f"the landmarks hold {captured:.1%} of the kernel's " \
                    f"diagonal < LOWRANK_MIN_CAPTURE={LOWRANK_MIN_CAPTURE:.0%}: " + \
                    ("refined" if self._refines else "solved exactly on every row")
                self._log.info("rank %d: %s", self.rank_, path[-1]["stop"])
                return exact
        stop = f"AUTO_RANK_MAX={AUTO_RANK_MAX} landmarks" if r_max == AUTO_RANK_MAX else \
            f"all {r_max:,} rows of positive weight"
        name, limit = self._rank_change_limit()
        compared = self._compared_classes(shared, m)
        itemsize = numpy_dtype(Xf.dtype).itemsize
        by_budget = False  # (whether the memory budget ended the growth)
        deferred = False  # (whether a stage near the limit grew once more: REFINE_NEAR)
        jumped = False  # (whether the last stage came by a skip or jump: its change is against
        # a stage further back, larger than a stage's own)
        while True:
            r = self.rank_
            step = min(int(round(r * AUTO_RANK_GROWTH)), r_max)
            target, last = step, None if jumped else path[-1]["changed"]
            if step * AUTO_RANK_GROWTH >= r_max and last is not None and \
                    last > AUTO_RANK_SKIP * limit:
                target = r_max  # (the stage between would not end the growth: AUTO_RANK_SKIP)
            elif self._refines and last is not None and last > limit:  # (AUTO_RANK_SHRINK)
                ends = math.ceil(math.log(limit / last) / math.log(AUTO_RANK_SHRINK))
                for _ in range(ends - 2):  # (to the stage before the first that can end it)
                    nxt = int(round(target * AUTO_RANK_GROWTH))
                    if nxt >= r_max or target >= REFINE_MIN_RANK:
                        break
                    target = nxt
            if step <= r:
                break
            flat = shared.get("flat")  # (NumPy: the features widened in place)
            for r_next in dict.fromkeys((target, step)):  # (a skip or jump whose features
                # would pass the budget: the next stage instead)
                in_place = flat is not None and int(flat.shape[0]) >= m * (r_next + 1)
                try:  # the next stage (and the held features it is copied from beside it)
                    in_memory, blocks = self._feature_plan(
                        m, r_next + 1, ctx, itemsize=itemsize,
                        reserved=0 if in_place else m * (r + 1) * itemsize)
                except MemoryError:  # (its r × r matrices alone pass the budget)
                    in_memory = False
                if in_memory:
                    break
            if not in_memory:
                stop = f"the memory budget (the features of {r_next:,} landmarks)"
                by_budget = True
                break
            jumped = r_next != step
            buf = shared.get("pair_buffer")
            if buf is not None and int(buf.shape[0]) < m * (r_next + 1):
                shared.pop("pair_buffer")  # (freed before the next features are built)
            del buf
            if in_place:
                kw = {"out": widen_rows(flat, m, r + 1, r_next + 1), "filled": r}
            else:
                kw = {"known": shared["P"].to_array()[:, :r]}
                shared.pop("flat", None)
            del flat
            t1 = time.perf_counter()
            new = pool[r:r_next]
            if self._landmark_bounds is not None:  # (one-vs-one: grouped by class)
                new, bounds = self._class_sorted(new, r)
                self._landmark_bounds.append(bounds)
            J = xp.concat([self._landmarks[0], new])
            Z = model_rows(X, J, xp=xp)  # (sparse rows of few nonzeros stay sparse)
            shared.update(self._phase("features", self._landmark_features, Xf, Z, blocks,
                                      **kw, detail={"rank": r_next}))
            del kw  # (its views of the features would keep them past _refine's release)
            self._landmarks, self.rank_ = (J, Z), r_next
            zeros = xp.zeros((r_next - r,), dtype=xp.float64, device=ctx.native_device)
            # (the new landmarks' coefficients 0: the last rank's margins, a pass over the
            # features saved a stage. Not its ‖∇F(0)‖, which the new columns add to: the
            # stricter gradient test took ijcnn1's stages at 354-709 landmarks one more step)
            starts = [{"start": xp.concat([z[:r], zeros, z[r:]]),
                       "margins": None if shared["P"].distributed else o}
                      for z, o in zip(map(self._model_coef, models), margins)]
            models = super()._fit_problems(shared, problems, len(problems), starts=starts)
            margins = self._next_margins(models)
            new = self._training_outputs(shared["P"], models)
            changed, gained = self._output_change(out, new, problems)
            starved = self._starved(new, compared)
            out = new
            path.append({"rank": r_next, "changed": changed,
                         "seconds": time.perf_counter() - t1})
            if gained is not None:
                path[-1]["gained"] = gained
            if starved is not None:
                path[-1]["starved"] = starved
            if changed <= limit and starved is not None and self._starvation_holds(
                    shared, problems, models, X, new):  # (the exact kernel starves it too)
                path[-1]["starved"]["confirmed"] = True
                starved = None
            if changed <= limit and starved is None:
                stop = f"{changed:.2%} of the training predictions changed <= " \
                       f"{name}={limit:.2%}"
                break
            refines = r_next >= REFINE_MIN_RANK
            near = refines and self._refines and starved is None and not deferred and \
                r_next < r_max and changed <= REFINE_NEAR * limit
            if near:  # (one stage more first: REFINE_NEAR)
                deferred = path[-1]["deferred"] = True
            refined = self._refine(shared, problems, models, X, decisions=new) \
                if refines and not near else None
            if refined is not None:
                models, stop = refined, (
                    f"{changed:.2%} of the training predictions changed > {name}={limit:.2%}"
                    if starved is None else _starved_text(starved)) + \
                    f": refined (REFINE_MIN_RANK={REFINE_MIN_RANK:,})"
                break
        path[-1]["stop"] = stop
        self._log.info("rank %d: %s (%.2f s of growth)", self.rank_, stop,
                       time.perf_counter() - t0)
        last = path[-1]["changed"]
        # (ended at AUTO_RANK_MAX still changing by more than AUTO_RANK_WARN_FACTOR times the
        # limit: SVR solves it exactly where it may, else the warning below)
        far = r_max == AUTO_RANK_MAX == self.rank_ and last is not None and \
            last > AUTO_RANK_WARN_FACTOR * limit
        # (or, SVR, its last stage still raised the training R² by more than
        # SVR_AUTO_RANK_GAIN: its predictions settled, its fit did not)
        gained = path[-1].get("gained")
        gaining = gained is not None and gained > SVR_AUTO_RANK_GAIN
        if (far or gaining) and not self._refines and self._whole_in_reach(problems, Xf):
            exact = self._refine(shared, problems, models, X, decisions=out, whole=True)
            if exact is not None:  # (SVR far from settled: AUTO_RANK_WARN_FACTOR, or still
                # gaining: SVR_AUTO_RANK_GAIN)
                models = exact
                path[-1]["stop"] = stop = f"{stop}, " + (
                    f"{last:.2%} of the predictions' variance changed > "
                    f"{AUTO_RANK_WARN_FACTOR:g} × {name}={limit:.2%}" if far else
                    f"but the training R² rose by {gained:.2%} > SVR_AUTO_RANK_GAIN="
                    f"{SVR_AUTO_RANK_GAIN:.2%}") + ": solved exactly on every row"
                self._log.info("rank %d: %s", self.rank_, stop)
        refined = path[-1].get("refined")  # (a dict where refined, a string saying why not)
        warned = False
        if captured is not None and captured < LOWRANK_MIN_CAPTURE and \
                not isinstance(refined, dict):
            captured = path[-1]["captured"] = self._landmarks_capture(shared, Xf)
            warned = captured is not None and captured < LOWRANK_MIN_CAPTURE
            if warned:
                warnings.warn(
                    f"{type(self).__name__}: the {self.rank_:,} landmarks of rank='auto' hold "
                    f"{captured:.1%} of the kernel's diagonal (< LOWRANK_MIN_CAPTURE="
                    f"{LOWRANK_MIN_CAPTURE:.0%}): the kernel's values between rows are too "
                    "small for a low-rank model, which is then likely far less accurate than "
                    "the exact SVM's; pass solver='exact' (its kernel matrix holds m² "
                    "values), or a kernel or gamma whose values between rows are larger",
                    UserWarning, stacklevel=caller_stacklevel())
        starved = path[-1].get("starved")
        if starved is not None and not starved.get("confirmed") and \
                not isinstance(refined, dict) and not warned:
            warnings.warn(
                f"{type(self).__name__}: rank='auto' stopped at {self.rank_:,} landmarks "
                f"({stop}) with the model starving a class: {_starved_text(starved)}; it is "
                "likely far less accurate than the exact SVM's: pass solver='exact' (its "
                "kernel matrix holds m² values) to solve it exactly", UserWarning,
                stacklevel=caller_stacklevel())
            warned = True
        # a growth cut short while the predictions still change: by the memory budget
        # (make_classification at 20,000 rows, memory_budget="20MB": 125 landmarks, 87.9 %
        # against 95.2 % unbounded), or at AUTO_RANK_MAX unrefined, changing by more than
        # AUTO_RANK_WARN_FACTOR times the limit
        capped = far and not isinstance(refined, dict) and not warned
        if by_budget and (last is None or last > limit) or capped:
            warnings.warn(
                f"{type(self).__name__}: rank='auto' stopped at {self.rank_:,} landmarks: "
                f"{stop}, while the training predictions still changed ("
                + ("one stage only" if last is None else f"{last:.2%} > {name}={limit:.2%}")
                + ")" + (f", and the exact problem was not refined ({refined[4:]})"
                         if isinstance(refined, str) and refined.startswith("no: ") else "")
                + (": the model is likely less accurate than the rank policy's; raise "
                   "memory_budget, or pass rank= to fix the landmarks" if by_budget else
                   ": the model is likely less accurate than the exact SVM's; pass "
                   "solver='exact' (its kernel matrix holds m² values) to solve it exactly"),
                UserWarning, stacklevel=caller_stacklevel())
        return models

    def _whole_in_reach(self, problems, Xf):
        """Whether SVR's exact problem on every row may replace its low-rank model
        (:data:`AUTO_RANK_WARN_FACTOR`, :data:`LOWRANK_MIN_CAPTURE`): ``C · max(s) · k`` at
        most the exact path's :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C`; the rows
        and the memory budget are :meth:`_refine`'s to check."""
        k = self._kernel_scale(Xf)
        return not any(self._hard_margin(w, k) for _, _, w in problems)

    def _landmarks_capture(self, shared, Xf):
        """The share of the kernel's diagonal that the landmarks' Nyström approximation holds,
        ``Σ k_Zᵢᵀ K_ZZ⁻¹ k_Zᵢ / Σ k(xᵢ, xᵢ)`` over every k-th row of the features (at most
        :data:`_CAPTURE_ROWS`; ``Xf`` the features' rows, in their order), or None where
        ``K_ZZ`` does not factor (:data:`LOWRANK_MIN_CAPTURE`)."""
        xp = self._ctx.xp
        P, B = shared["P"], shared["B"]
        m, r = int(P.shape[0]), int(B.shape[0]) - 1
        rows = xp.arange(0, m, -(-m // min(m, _CAPTURE_ROWS)), device=self._ctx.native_device)
        try:
            L, _ = jittered_cholesky(B[:r, :r], xp=xp)
        except LinAlgError:
            return None
        W = solve_triangular(L, xp.matrix_transpose(
            xp.astype(P.take(rows).to_array()[:, :r], xp.float64)), lower=True, xp=xp)
        held, total = fetch_scalars(xp.sum(W * W), xp.sum(xp.astype(
            self.kernel_.diag(take_rows(Xf, rows, xp=xp)), xp.float64)), xp=xp)
        return float(held / total) if total > 0 else None

    def _refine(self, shared, problems, models, X, decisions=None, whole=False):
        """The exact problem of each binary problem solved on its candidate support vectors,
        where the rank's growth ended with the predictions still changing: the rows whose
        low-rank decision value leaves them near or beyond the margin
        (:meth:`_refine_rows`, :data:`REFINE_MARGIN`), each problem's kernel matrix on them
        solved by the exact path (:meth:`_exact_solve`). The support vectors of the exact
        problem lie among them where the low-rank model is close enough; the others keep
        α = 0 (DC-SVM's refinement from its subproblems' solution, Hsieh, Si and Dhillon
        2014, solved here on the candidates alone). Returns the models in the exact path's
        form ({"support", "alpha", ...}: :meth:`_after_fit`), or None where a problem has no
        candidate rule (SVR), more than :data:`REFINE_MAX_ROWS` candidates, or a kernel
        matrix of its candidates that would pass the memory budget beside the held
        features. Each solution is checked on a sample of the rows left out
        (:meth:`_refine_check`), and solved again with the rows outside that violate its
        margin where that sample finds the candidates wrong.

        ``whole``: every row a candidate, each problem solved from the exact path's own start
        (SVR's growth ended far from settled: :data:`AUTO_RANK_WARN_FACTOR`)."""
        xp = self._ctx.xp
        t0 = time.perf_counter()
        P = shared["P"]
        held = int(P.shape[0]) * int(P.shape[1]) * numpy_dtype(P.dtype).itemsize
        outputs = self._problem_outputs(shared, problems, models, decisions)
        picks = []
        for q, ((_, y, w), f) in enumerate(zip(problems, outputs)):
            cand = xp.arange(int(y.shape[0]), device=self._ctx.native_device) if whole else \
                self._refine_rows(f, y, w)
            if cand is None:
                return None
            why = self._refine_limit(int(cand.shape[0]), held, rows=int(y.shape[0])) or \
                ("candidate support vectors of one class or none"
                 if self._task == "classification" and
                 not has_two_classes(xp.take(y, cand), None, xp=xp) else None)
            if why is not None:
                self._log.info("not refined: problem %d has %s", q + 1, why)
                self.rank_path_[-1]["refined"] = f"no: problem {q + 1} has {why}"
                return None
            picks.append(cand)
        # the features are not read again (the refined models are the exact path's): freed
        # before the candidates' kernel rows are written, which then reuse their memory (on
        # this VM, memory its process has not touched for seconds fills at about 1.7 s/GB:
        # bench/README.md, "Measured reasons")
        for key in ("P", "flat", "pair_buffer"):
            shared.pop(key, None)
        del P
        max_iter, loss = self._newton_steps(), self._losses()[-1]
        sample = max(REFINE_CHECK_ROWS, REFINE_CHECK_TOTAL // len(problems))  # (a problem's)
        # the problems' row stores and Newton systems in one set of buffers, solved one after
        # another: their memory is touched once, not once a problem (on this VM fresh memory
        # is the kernel's page clearing, and about 1.7 s/GB where the host took it back: the
        # 45 pairs of the hard image-like stand-in spent 2.6 s of system time on their row
        # stores and Newton blocks, session 69)
        space = newton_space(max(int(c.shape[0]) for c in picks), xp=xp)

        def solve(task):
            q, ((rows, y, w), cand, mod, f) = task
            label = f"problem {q + 1}" if len(problems) > 1 else "the problem"

            def ideal(idx, r):  # (the rows idx of residuals r: _ideal_alpha)
                return self._ideal_alpha(xp.take(y, idx), None if w is None else
                                         xp.take(w, idx), r, loss)

            yc, wc = xp.take(y, cand), None if w is None else xp.take(w, cand)
            # from the low-rank residuals and intercept (whole: the exact path's own start)
            start = None if whole else (ideal(cand, 1.0 - yc * xp.take(f, cand)),
                                        mod["intercept"])
            cornered = start is not None and self._corner_round(int(cand.shape[0]), w,
                                                                 first=True)
            if cornered:  # (REFINE_CORNER_MIN_C: where no probe can decide)
                start = "corners"
            n_iter, history, checks = mod["n_iter"], list(mod["objective_history"]), []
            smo_first = False  # (the last round's Newton systems passed SMO_SYSTEM_ROWS)
            smo_start = None  # (the last round's solution: _newton's smo_start)
            while True:
                sel = cand if rows is None else xp.take(rows, cand)
                Xc = model_rows(X, sel, xp=xp)  # (sparse rows of few nonzeros stay sparse)
                (Xk,) = self._kernel_rows(Xc, shift=self._kernel_shift, check=False)
                res, more = self._exact_solve(self._kernel_matrix(Xk, space), yc, wc, max_iter,
                                              Xc, start=start, smo_first=smo_first,
                                              space=space, smo_start=smo_start)
                n_iter, history = n_iter + more, history + res.objective_history
                smo_first = res.info.get("smo") == "large"
                nonzero = xp.nonzero(res.coef != 0)[0]
                alpha, b = xp.take(res.coef, nonzero), res.info["intercept"]
                check = self._refine_check(X, rows, y, w, cand, take_rows(Xk, nonzero, xp=xp),
                                           alpha, b, loss, label=label,
                                           last=len(checks) == REFINE_ROUNDS, sample=sample)
                if cornered and not checks:  # (the first round's start, where not the
                    check["start"] = "corners"  # low-rank model's: later ones, "restart")
                checks.append(check)
                if "added" not in check:
                    break
                # the rows outside that violate the margin join the candidates, from α at
                # their exact residuals, the others from this solution; or, where they
                # outnumber the candidates, from the exact path's own start (the solution
                # says little about them: a fuzz case of session 41, 7,691 rows added to
                # 1,039 candidates at C = 100: the refinement 7.7 s from it, 1.9 s so); or
                # from the corners at a large C or after a corner restart
                # (REFINE_CORNER_ROWS)
                new, r_new = check.pop("rows"), check.pop("residuals")
                order = xp.argsort(xp.concat([cand, new]))
                warm = int(new.shape[0]) <= int(cand.shape[0])
                cand = xp.take(xp.concat([cand, new]), order)
                # SMO's start, where the round goes by SMO: this solution, the added rows at
                # α = 0 (a point of the dual's box and equality: _newton's smo_start)
                smo_start = xp.take(xp.concat([res.coef, xp.zeros_like(r_new)]), order)
                if res.info.get("corners") or self._corner_round(int(cand.shape[0]), w):
                    start, check["restart"] = "corners", "corners"
                elif warm:
                    start = (xp.take(xp.concat([res.coef, ideal(new, r_new)]), order), b)
                    check["restart"] = "last solution"
                else:
                    start, check["restart"] = None, "own start"
                yc, wc = xp.take(y, cand), None if w is None else xp.take(w, cand)
            return {"alpha": alpha, "support": xp.take(sel, nonzero), "intercept": b,
                    "n_iter": n_iter, "converged": res.converged, "objective_history": history,
                    "check": checks, "candidates": int(cand.shape[0])}

        # (one at a time: two at once, as the regions, took as long, 11.1 against 10.8 s on
        # the stand-in: the kernel rows' products and the larger factorizations use both cores)
        out = self._phase("solve", lambda: [solve(t) for t in enumerate(zip(
            problems, picks, models, outputs))],
                          detail={"refine": f"{len(picks)} problems"})
        sizes = [mod.pop("candidates") for mod in out]
        self.rank_path_[-1]["refined"] = {"candidates": sizes,
                                          "checks": [mod.pop("check") for mod in out],
                                          "seconds": time.perf_counter() - t0}
        self._log.info("refined: the exact problem on %d–%d candidate rows a problem "
                       "(%.2f s)", min(sizes), max(sizes), time.perf_counter() - t0)
        self._X_fit = X  # (the support vectors' rows: _after_fit)
        return out

    def _kernel_scale(self, Xf):
        """``max(1, max Kᵢᵢ)`` over the rows ``Xf`` (as the kernel sees them): the exact
        path's scale of a kernel, ``(K, C)`` being ``(K / k, C k)`` (its hard-margin regime
        is ``C · max(s) · k`` above :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C`)."""
        xp = self._ctx.xp
        (k,) = fetch_scalars(xp.max(xp.astype(self.kernel_.diag(Xf), xp.float64)), xp=xp)
        return max(1.0, float(k))

    def _hard_margin(self, w, k):
        """Whether a problem of sample weights ``w`` (None: unit weights) on a kernel of scale
        ``k`` (its largest diagonal value, at least 1) is in the hard-margin regime:
        ``C · max(s) · k`` above :data:`~svmgpu.solvers.exact.HARD_MARGIN_FIRST_C`."""
        return self._c_max(w) * k > HARD_MARGIN_FIRST_C

    def _corner_round(self, rows, w, first=False):
        """Whether a refinement round of ``rows`` candidate rows (sample weights ``w``) starts
        at the corners by :data:`REFINE_CORNER_MIN_C`: ``C · max(s)`` above it and at most
        :data:`REFINE_CORNER_ROWS` rows, or for the ``first`` round (from the low-rank model
        otherwise) at most :data:`~svmgpu.solvers.exact.PRESOLVE_MIN_ROWS`, where the exact
        path's probe of a damped start cannot run."""
        most = PRESOLVE_MIN_ROWS if first else REFINE_CORNER_ROWS
        return rows <= most and self._c_max(w) > REFINE_CORNER_MIN_C

    def _c_max(self, w):
        """``C · max(s)`` of a problem of sample weights ``w`` (None: unit weights): its
        largest bound on |α|."""
        xp = self._ctx.xp
        return self.C * (1.0 if w is None else fetch_scalars(xp.max(w), xp=xp)[0])

    def _problem_outputs(self, shared, problems, models, decisions=None):
        """Each problem's low-rank decision values at its rows (without the intercept's
        rounding: the features' product), from ``decisions`` (:meth:`_training_outputs`)
        where they cover every row."""
        xp, P = self._ctx.xp, shared["P"]
        W = xp.stack([self._model_coef(mod) for mod in models], axis=1)
        # (n, problems): ``decisions`` where they cover every row (not a sample of the rows,
        # nor the solver's margins without the rows of weight 0); one-vs-one in P's rows'
        # order (by class): then
        F = decisions if decisions is not None and decisions.shape[0] == P.shape[0] else \
            P.matvec(W)
        order = shared.get("order")  # back to X's (a gather of P's rows copied them whole)
        if order is not None:
            F = xp.take(F, xp.argsort(order, stable=False), axis=0)
        return [xp.astype(F[:, q] if rows is None else xp.take(F[:, q], rows), y.dtype)
                for q, (rows, y, _) in enumerate(problems)]

    def _ideal_alpha(self, y, w, r, loss):
        """α = C s y ψ'(r) at residuals r (labels y, weights w or None): the exact problem's
        optimality condition, α* where r has the pieces right."""
        a = self.C * y * loss.grad(r, xp=self._ctx.xp)
        return a if w is None else w * a

    def _starvation_holds(self, shared, problems, models, X, decisions):
        """Whether the exact kernel confirms a starved class (:data:`AUTO_RANK_STARVED`): each
        problem's α at its low-rank residuals (:meth:`_ideal_alpha`: the exact problem's
        optimality condition, every bounded support vector's α exact) with K itself instead
        of the landmarks' approximation, on an evenly strided sample of at most
        :data:`REFINE_CHECK_ROWS` of its rows, predicts as the low-rank model on all but
        :data:`REFINE_CHECK_MISSES` of them and at most AUTO_RANK_CHANGE of them."""
        xp, ctx = self._ctx.xp, self._ctx
        loss = self._losses()[-1]
        outputs = self._problem_outputs(shared, problems, models, decisions)
        differ = total = 0
        for (rows, y, w), f, mod in zip(problems, outputs, models):
            alpha = self._ideal_alpha(y, w, 1.0 - y * f, loss)
            total_a, size_a = fetch_scalars(xp.sum(alpha), xp.sum(xp.abs(alpha)), xp=xp)
            if abs(total_a) > STARVED_BALANCE * size_a:  # (inconclusive: STARVED_BALANCE)
                continue
            support = xp.nonzero(alpha != 0)[0]
            m = int(y.shape[0])
            picked = xp.arange(0, m, -(-m // REFINE_CHECK_ROWS), device=ctx.native_device)
            (Z,) = self._kernel_rows(model_rows(X, support if rows is None else
                                                xp.take(rows, support), xp=xp),
                                     shift=self._kernel_shift, check=False)
            exact = self._exact_values(X, rows, picked, Z, xp.take(alpha, support))
            b = float(mod["intercept"])
            (n,) = fetch_scalars(xp.count_nonzero(
                (exact + b > 0) != (xp.take(f, picked) + b > 0)), xp=xp)
            differ, total = differ + int(n), total + int(picked.shape[0])
        return differ < REFINE_CHECK_MISSES or differ <= AUTO_RANK_CHANGE * total

    def _exact_values(self, X, rows, idx, Z, alpha):
        """The exact kernel model's decision values without its intercept (float64) at the
        problem's rows ``idx`` (of its rows of X, ``rows``, or all of X's where None):
        ``K(x, Z) α`` for support vectors ``Z`` as the kernel sees them
        (:meth:`_kernel_rows`)."""
        xp = self._ctx.xp
        sel = idx if rows is None else xp.take(rows, idx)
        (Xs,) = self._kernel_rows(model_rows(X, sel, xp=xp), shift=self._kernel_shift,
                                  check=False)
        return xp.astype(kernel_matvec(self.kernel_, Xs, Z, xp.astype(alpha, Xs.dtype),
                                       memory_budget=self._ctx.budget_bytes, prune=True),
                         xp.float64)

    def _refine_limit(self, n, held=0, *, rows):
        """Why n candidate rows of a problem of ``rows`` rows cannot be refined, or None: more
        than :data:`REFINE_MAX_ROWS` in a problem of more than :data:`REFINE_WHOLE_MAX_ROWS`
        rows, or their kernel matrix beside ``held`` bytes (the features) passes the memory
        budget."""
        if n > REFINE_MAX_ROWS and rows > REFINE_WHOLE_MAX_ROWS:
            return f"{n:,} candidate support vectors > REFINE_MAX_ROWS={REFINE_MAX_ROWS:,} " \
                f"(of {rows:,} rows > REFINE_WHOLE_MAX_ROWS={REFINE_WHOLE_MAX_ROWS:,})"
        need = held + self._exact_bytes(n)
        if need > self._ctx.budget_bytes:
            return f"{n:,} candidate support vectors, whose kernel matrix beside the features " \
                f"({format_bytes(need)}) exceeds the memory budget"
        return None

    def _refine_check(self, X, rows, y, w, cand, Z, alpha, b, loss, *, label, last,
                      sample=REFINE_CHECK_ROWS):
        """The check of a refined problem's solution (support vectors ``Z`` as the kernel sees
        them, ``alpha``, ``b``) on the rows of positive weight left out of its candidates
        ``cand`` (indices into the problem's rows ``rows``, labels ``y``, weights ``w``): an
        evenly strided sample of at most ``sample`` of them (:data:`REFINE_CHECK_ROWS`, or
        more where the problems are few: :data:`REFINE_CHECK_TOTAL`). Where at least
        :data:`REFINE_CHECK_MISSES` and more than :data:`AUTO_RANK_CHANGE` of the sampled rows
        are misclassified, the low-rank model that chose the candidates was wrong about them:
        every row outside is evaluated, and those of nonzero loss gradient are returned to join
        the candidates (``"added"``, ``"rows"`` and their ``"residuals"``), unless this is the
        ``last`` round or they would pass :data:`REFINE_MAX_ROWS` or the memory budget (then a
        warning). Returns the check's record."""
        xp, ctx = self._ctx.xp, self._ctx
        m = int(y.shape[0])
        keep = xp.ones((m,), dtype=xp.bool, device=ctx.native_device) if w is None else w > 0
        keep = set_rows(keep, cand, xp.zeros(cand.shape, dtype=xp.bool,
                                             device=ctx.native_device), xp=xp)
        outside = xp.nonzero(keep)[0]
        n_out = int(outside.shape[0])
        info = {"outside": n_out}
        if n_out == 0:
            return info

        def residuals(idx):  # 1 − y f at the problem's rows idx
            return 1.0 - xp.take(y, idx) * (self._exact_values(X, rows, idx, Z, alpha) + b)

        picked = outside[::-(-n_out // REFINE_CHECK_ROWS)]
        k = int(picked.shape[0])
        r = residuals(picked)
        wrong, doubt = (int(v) for v in fetch_scalars(
            xp.count_nonzero(r > 1.0), xp.count_nonzero(loss.grad(r, xp=xp) > 0), xp=xp))
        info["violating"] = doubt  # (of the first sample)
        first = k
        crowded = doubt > REFINE_CHECK_JOIN * first  # (REFINE_CHECK_JOIN)
        if (wrong < REFINE_CHECK_MISSES or wrong <= AUTO_RANK_CHANGE * k) and \
                doubt > REFINE_CHECK_DOUBT * k and n_out > k and sample > k:
            # (many rows outside violate the margin: a larger sample says whether the
            # misclassified ones are more than the first one found)
            picked = outside[::-(-n_out // sample)]
            k = int(picked.shape[0])
            (wrong,) = (int(v) for v in fetch_scalars(
                xp.count_nonzero(residuals(picked) > 1.0), xp=xp))
        info.update(sampled=k, misclassified=wrong)
        passed = wrong < REFINE_CHECK_MISSES or wrong <= AUTO_RANK_CHANGE * k
        if passed and not crowded:
            return info
        why = f"refinement of {label}: " + (
            f"{doubt} of {first} rows sampled outside its {int(cand.shape[0]):,} candidate "
            f"support vectors inside the refined model's margin (> REFINE_CHECK_JOIN="
            f"{REFINE_CHECK_JOIN:.0%})" if passed else
            f"{wrong} of {k} rows sampled outside its {int(cand.shape[0]):,} candidate support "
            "vectors misclassified by the refined model")
        if not last:
            r = residuals(outside)
            bad = xp.nonzero(loss.grad(r, xp=xp) > 0)[0]
            limit = self._refine_limit(int(cand.shape[0]) + int(bad.shape[0]), rows=m)
            if limit is None:
                self._log.info("%s: %d rows outside of nonzero loss join them", why,
                               int(bad.shape[0]))
                info.update(added=int(bad.shape[0]), rows=xp.take(outside, bad),
                            residuals=xp.take(r, bad))
                return info
        warnings.warn(
            f"{type(self).__name__}: {why}, after {REFINE_ROUNDS} rounds of adding the rows "
            "outside that violate its margin" if last else
            f"{type(self).__name__}: {why}, and with the rows outside that violate its margin "
            f"it would have {limit}", UserWarning, stacklevel=caller_stacklevel())
        return info

    def _newton_steps(self):
        """The Newton steps a solve may take: ``max_iter``, or :data:`_MAX_NEWTON_STEPS` for
        scikit-learn's -1 (no limit)."""
        return _MAX_NEWTON_STEPS if self.max_iter == -1 else self.max_iter

    _refines = False  # (whether _refine_rows gives candidates: SVC's)

    def _refine_rows(self, f, y, w):
        """The candidate support vectors of :meth:`_refine` (indices into the problem's rows)
        from the low-rank decision values ``f``, or None where the exact problem is not
        refined (SVR)."""
        return None

    @staticmethod
    def _next_margins(models):
        """Each low-rank model's margins ``P z`` over its problem's rows, the next stage's
        start (whose new landmarks' coefficients are 0): a problem over every row keeps them
        for :meth:`_training_outputs` too, a one-vs-one pair's are taken from its model here.
        Covtype's 7 classes on 50,000 rows: the 21 pairs' products at each stage's start,
        0.13 s of a 5.7 s fit, saved."""
        return [mod["margins"] if "margins" in mod else mod.pop("pair_margins", None)
                for mod in models]

    def _training_outputs(self, P, models):
        """The decision values of every problem's model on the training rows (every row, or
        every k-th row for at most :data:`AUTO_RANK_SAMPLE` of them; one-vs-one: of the rows
        sorted by class, :meth:`_class_order`), shape
        (rows, n_problems): the solver's own margins ``P z`` where every problem is over all
        the rows (ijcnn1: 49 ms of seven stages' products saved), else from the held
        features (one-vs-one pairs)."""
        xp = self._ctx.xp
        m = int(P.shape[0])
        step = _sample_step(m)
        margins = [mod.pop("margins", None) for mod in models]
        if all(o is not None for o in margins):
            return xp.stack([o[::step] for o in margins], axis=1)
        W = xp.stack([self._model_coef(mod) for mod in models], axis=1)
        return P.matvec(W, rows=None if step == 1 else xp.arange(
            0, m, step, dtype=xp.int64, device=self._ctx.native_device))

    def _model_coef(self, model):
        """A low-rank model's coefficients ``[z, b]`` (float64, the features' column order)."""
        xp = self._ctx.xp
        return xp.concat([model["alpha"], xp.asarray([model["intercept"]], dtype=xp.float64,
                                                     device=self._ctx.native_device)])

    def _one_vs_one(self):
        """Whether this fit's problems are one-vs-one pairs (more than two classes)."""
        y_idx = getattr(self, "_y_idx", None)
        k = int(self.classes_.shape[0]) if y_idx is not None else 0
        return k > 2 and getattr(self, "multi_class", self._default_multi_class) == "ovo"

    def _copied_feature_rows(self, m):
        """The low-rank path's one-vs-one pairs gather their rows and columns of the held
        features into one buffer (:meth:`_pair_buffer`), at most the size of the features."""
        return m if self._one_vs_one() else 0

    def _pair_buffer(self, shared, n):
        """The flat buffer (at least ``n`` elements of the features' dtype) into which every
        one-vs-one pair gathers its block of the features, kept in ``shared`` and enlarged
        when a pair needs more (:func:`~svmgpu.backend.take_block`); None off NumPy, where
        the blocks are allocated as usual. Beside features grown in place (``rank="auto"``)
        it has their buffer's size (address space: its pages are touched as the pairs' blocks
        need them) and is kept from stage to stage, so every stage's pairs write into the
        pages the last stage's touched (Covtype's 7 classes on 50,000 rows: 4.83–5.07 →
        4.62–4.84 s; before, each stage freed it and its first pair faulted a new one in)."""
        xp, P = self._ctx.xp, shared["P"]
        if not is_numpy(xp):
            return None
        buf = shared.pop("pair_buffer", None)
        if buf is None or int(buf.shape[0]) < n:
            del buf  # (the old one freed before the new one is allocated)
            buf = None
            flat = shared.get("flat")
            if flat is not None and int(flat.shape[0]) >= n:
                try:  # the size of the grown features' buffer (address space, as theirs)
                    buf = xp.empty(flat.shape, dtype=P.dtype)
                except MemoryError:  # (the system refused it: this block's size)
                    pass
            if buf is None:
                buf = xp.empty((n,), dtype=P.dtype)
        shared["pair_buffer"] = buf
        return buf

    def _class_order(self):
        """``(order, bounds)`` for one-vs-one over more than two classes: the training rows
        sorted by class (stable) and where each class starts and ends in that order
        (``bounds[k]:bounds[k + 1]``, host ints); else None. The exact path computes its kernel
        matrix in this order, so that each pair's block is copied as two ranges of rows and
        columns (:func:`~svmgpu.backend.range_block`) instead of gathered entry by entry."""
        if not self._one_vs_one():
            return None
        return _by_class(self._y_idx, int(self.classes_.shape[0]), 0, xp=self._ctx.xp)

    def _class_sorted(self, J, offset):
        """``(J', bounds)``: the landmarks J sorted by class (stable) and where each class's
        columns start and end among the features' columns, J's first at column ``offset``
        (``bounds[c]:bounds[c + 1]``, host ints). One-vs-one on the low-rank path groups the
        landmarks of each stage's increment so, and its rows by class
        (:meth:`_class_order`): a pair's block of the features is two ranges of rows by a
        range of columns per class and stage (:meth:`_pair_runs`), copied range by range
        (:func:`~svmgpu.backend.range_block`), reading those columns only where a gather of
        the pair's rows read every column."""
        xp = self._ctx.xp
        perm, bounds = _by_class(xp.take(self._y_idx, J), int(self.classes_.shape[0]), offset,
                                 xp=xp)
        return xp.take(J, perm), bounds

    def _prepare_regions(self, X, *, ctx):
        """The partitioned path's regions (:func:`~svmgpu.solvers.partition.bounded_regions`
        on the dense rows, seeded by ``random_state``, 0 when None): k-means regions, a region
        split by 2-means only when its exact solve would pass :data:`REGION_MAX_ROWS` or the
        memory budget (splitting Covtype's regions at twice the mean size cost 0.2 points:
        a cut through dense rows separates neighbours that interact)."""
        xp, (m, d) = ctx.xp, X.shape
        size = PARTITION_ROWS if self.region_rows == "auto" else int(self.region_rows)
        dense = 2 * m * d * numpy_dtype(X.dtype).itemsize + 64 * m
        if self._dask_fit:  # the rows stay on the workers; the client holds m-vectors
            dense = 64 * m
        check_fits(dense + self._exact_bytes(min(size, m), dense=True), ctx.budget_bytes,
                   what=f"{type(self).__name__}'s partitioned path: {m:,} dense rows and a "
                        f"region's kernel matrix ({min(size, m):,} rows)",
                   hint="lower region_rows")
        max_rows = REGION_MAX_ROWS
        while max_rows > size and \
                dense + PARTITION_THREADS * self._exact_bytes(max_rows, dense=True) > ctx.budget_bytes:
            max_rows = max(size, max_rows * 3 // 4)
        self.rank_ = None
        self.region_overlap_ = self._overlap_band()
        if self._dask_fit:
            self._X_fit = X
            centers, regions, *near = self._dask_regions(X, -(-m // size), max_rows)
        else:
            X_fit = dense_rows(X, slice(None), xp=xp)
            self._X_fit = X_fit
            centers, regions, *near = bounded_regions(
                X_fit, -(-m // size), max_rows, xp=xp, random_state=seed_from(self.random_state),
                second=self.region_overlap_ > 0)
        self.region_centers_ = centers
        extra = self._overlap_rows(near[0], regions, max_rows) if near else None
        self._log.info("regions %d (%d rows at most), overlap band %.3g", centers.shape[0],
                       max_rows, self.region_overlap_)
        return {"regions": regions, "extra": extra}

    def _dask_regions(self, X, k, max_rows):
        """The regions of a Dask ``X``: k-means on the sample the in-memory fit draws (the same
        rows: the same centres), then every row's nearest and second-nearest centre on the
        workers (:func:`svmgpu.distributed.nearest_centres`). A region larger than
        ``max_rows`` is refused (the in-memory fit would split it by 2-means)."""
        ctx, m = self._ctx, int(X.shape[0])
        seed = seed_from(self.random_state)
        sample = dask_data.draw_rows(None, m, min(KMEANS_SAMPLE, m), random_state=seed)
        S = dask_data.rows_of(X, sample, device=ctx.device)
        centers, _ = kmeans(S, k, xp=ctx.xp, random_state=seed)
        near = dask_data.nearest_centres(X, centers, device=ctx.device)
        _, b = group_rows(near[0], int(centers.shape[0]), xp=ctx.xp)
        largest = max(b[j + 1] - b[j] for j in range(len(b) - 1))
        if largest > max_rows:
            raise ValueError(
                f"a k-means region of this Dask fit holds {largest:,} rows, more than the "
                f"{max_rows:,} an exact solve takes (the in-memory fit splits such regions; a "
                "Dask fit does not yet): lower region_rows, or fit on X.compute()")
        return (centers, near[0], near) if self.region_overlap_ > 0 else (centers, near[0])

    def _overlap_band(self):
        """The squared-distance band of :data:`REGION_OVERLAP` for the fitted kernel: 0 for
        ``region_overlap=0`` or a kernel that does not decay with distance."""
        rho = REGION_OVERLAP if self.region_overlap == "auto" else float(self.region_overlap)
        if rho == 0:
            return 0.0
        r = self.kernel_.negligible_distance(math.exp(-rho))
        return 0.0 if r is None else float(r) ** 2

    def _overlap_rows(self, near, regions, max_rows):
        """Each row's second region (int64, shape (m,); −1 for none): the nearest centre
        other than its own region's when the squared distance to it exceeds the nearest by
        less than ``region_overlap_`` (``near``: :func:`assign`'s ``(nearest, second, gap)``).
        A region that the extra rows would take past ``max_rows`` (the exact solve's bound)
        gets none. None for one region."""
        xp, g = self._ctx.xp, int(self.region_centers_.shape[0])
        if g < 2:
            return None
        first, second, gap = near
        moved = first != regions  # (a 2-means split put the row off its nearest centre)
        other = xp.where(moved, first, second)
        near = moved | (gap < self.region_overlap_)
        extra = xp.where(near, other, xp.full_like(other, -1))
        _, b = group_rows(xp.concat([regions, xp.where(near, other, xp.full_like(other, g))]),
                          g + 1, xp=xp)
        full = [b[j + 1] - b[j] > max_rows for j in range(g)]
        if any(full):
            bad = xp.asarray(full + [False], device=self._ctx.native_device)
            extra = xp.where(xp.take(bad, xp.where(near, other, xp.full_like(other, g))),
                             xp.full_like(extra, -1), extra)
        return extra

    def _kernel_matrix(self, rows, space=None):
        """The exact path's kernel matrix of ``rows`` for one problem: above
        :data:`~svmgpu.solvers.exact.PRESOLVE_MIN_ROWS` rows a
        :class:`~svmgpu.kernels.KernelRows`, whose rows are computed when a Newton step first
        reads them (make_classification, 20,000 rows: 9,065 of them, 1.1 GB of peak memory
        instead of 2.0 GB, the first fit of a process 2.1 s instead of 3.5–4.2 s, later ones
        2.0–2.7 s against 2.5 s); the whole matrix below (a one-vs-one pair's block is copied
        from it: :meth:`_fit_binary`). ``space``: a caller's buffers for one such matrix of
        a dtype at a time (:func:`~svmgpu.solvers.exact.newton_space`)."""
        if rows.shape[0] > PRESOLVE_MIN_ROWS:
            return KernelRows(self.kernel_, rows, space=space)
        return self.kernel_.block(rows, rows)

    def _exact_solve(self, K, y, sample_weight, max_iter, rows_f64=None, start=None,
                     smo_first=False, space=None, smo_start=None):
        """The exact path on one kernel matrix: ``(result, Newton steps)``, from ``start``
        (``(alpha, b)``; None: the exact path's own start, :meth:`_own_start`; ``smo_first``: by SMO at
        once where Newton's systems would pass :data:`SMO_SYSTEM_ROWS`, a refinement's round
        after one whose systems did, ``result.info["smo"] == "large"``; ``smo_start``: SMO's
        start where it runs, :meth:`_newton`); a stalled
        iteration restarts as a continuation from wider corners (:meth:`_losses`). A float32
        K that cannot reach tol is finished on the float64 kernel of ``rows_f64`` (K's rows,
        or a function giving them: built only then), and one whose rounding left a Newton
        system indefinite (near-duplicate rows at a large C) is solved on it from the
        start.

        The float64 redo: on the exact path and in a refinement (``solver_`` "exact" or
        "lowrank"; not the partitioned path's regions), Newton steps that stall or crawl on a
        float32 K go on from where they stopped on the float64 one (its rounding stalled the
        line search), not by SMO on the float32 one; where they stall there too, SMO reads
        the float32 matrix (:meth:`_newton`). A Newton system past :data:`SMO_SYSTEM_ROWS` is
        not rounding: SMO at once, as in float64. Session 57 (below 10,000 rows then): medium
        fuzz seed 4747's trial 7 (pairs of 9,309–9,368 rows at C = 100 that stalled at F
        within 2·10⁻⁵ of the minimum; SMO from there stopped unconverged at a higher F, and
        the float32 steps after it stalled again) 65–71 → 15–16 s, the same model; 27 fuzz
        trials whose float32 steps stalled 298 → 213 s in all. At any size since session 64
        (the memory budget charges a refinement's float64 matrix beside the float32 one:
        :meth:`_exact_bytes`): medium seed 6262's trial 4 (a binary problem of 11,000 rows
        at C = 100, refined whole) went by SMO for 55,000 iterations, then Newton steps, then
        the float64 finish all the same: 12.2–13.8 → 5.0 s (scikit-learn 5.3 s), the same
        model."""
        try:
            return self._exact_solve_on(K, y, sample_weight, max_iter, rows_f64, start,
                                        smo_first, space, smo_start)
        except LinAlgError as exc:
            if rows_f64 is None or K.dtype == self._ctx.xp.float64:  # (K: KernelRows too)
                raise LinAlgError(
                    f"the exact path's Newton system is not positive definite ({exc}): the "
                    f"kernel matrix is indefinite in {numpy_dtype(K.dtype).name} at this "
                    "scale (features far from 0 for the 'linear' or 'poly' kernel, or "
                    "near-duplicate rows at a large C); scale the features (e.g. "
                    "sklearn.preprocessing.StandardScaler) or lower C") from exc
            self._log.info("a float32 Newton system is not positive definite: the kernel "
                           "matrix in float64")
            rows = rows_f64() if callable(rows_f64) else rows_f64
            return self._exact_solve_on(self._kernel_matrix(rows, space), y, sample_weight,
                                        max_iter, None, start, smo_first, space, smo_start)

    def _exact_solve_on(self, K, y, sample_weight, max_iter, rows_f64, start=None,
                        smo_first=False, space=None, smo_start=None):
        kw = dict(C=self.C, xp=self._ctx.xp, sample_weight=sample_weight, tol=self.tol,
                  max_iter=max_iter, task=self._task, space=space)
        if start is None:
            start = self._own_start(K.shape[0])
        # a given start (the refinement's last solution and the rows its check added, α at
        # their bound) that stalls: the problem again from the exact path's own start
        # (presolve, corner start) before a continuation from the LS-SVM start. Medium fuzz
        # sets of session 42 (C = 10–100, 1,053–3,454 rows added to 5,194–7,174): 8.0 →
        # 5.7–6.4 s, 22.6 → 15.8–16.2 s, 33.8 → 30.9 s, the same models
        starts = [start, None] if isinstance(start, tuple) and \
            K.shape[0] > PRESOLVE_MIN_ROWS else [start]
        n_iter = 0
        redo = rows_f64 is not None and K.dtype != self._ctx.xp.float64 and \
            getattr(self, "solver_", None) in ("exact", "lowrank")  # (the float64 redo)
        K32, smo_runs = None, {}  # (the float32 K once redone; SMO's outcomes: _newton)
        for first in starts:
            while True:
                res, more, dual = self._newton(K, y, self._losses()[-1], sample_weight, kw,
                                               start=first, corner_start=True,
                                               short_steps=EXACT_SHORT_STEPS, redo=redo,
                                               dual_K=K32, smo_runs=smo_runs,
                                               smo_first=smo_first, smo_start=smo_start)
                n_iter += more
                if not (redo and res.info["stalled"]) or dual:
                    break
                self._log.info("the exact path's Newton steps stall on the float32 kernel "
                               "matrix: continued on the float64 one from there")
                K32, (K, rows_f64) = K, self._float64_kernel(rows_f64, space)
                first, redo = (res.coef, res.info["intercept"]), False
            if dual or not res.info["stalled"]:
                break
        if res.info["stalled"]:  # continuation: wider corners first, each from the last
            res = None
            for loss in self._losses(continuation=True, targets=y):
                start = "ls_svm" if res is None else (res.coef, res.info["intercept"])
                res = exact_newton(K, y, loss, start=start, **kw)
                n_iter += res.n_iter + res.info["n_presolve_iter"]
        loss = self._losses()[-1]
        if not res.converged and rows_f64 is not None and K.dtype != self._ctx.xp.float64 \
                and not dual:  # a float32 K held the residual above tol: finish on the
            # float64 kernel matrix from there (Covtype regions at γ = 2: 5–20 more steps
            # instead of 1,000 unconverged). Not on K upcast: the rounded matrix is slightly
            # indefinite, and there the Newton iteration circled at the same residual from
            # either start.
            # Where those steps stall too, SMO reads the float32 matrix (_newton: mixed fuzz
            # seed 7878's trial 14, SVR on 12,000 rows, C = 1, targets of spread 100, every
            # row outside the tube: Newton steps of 2⁻²⁷ without a row in a quadratic piece,
            # in float32 and float64 alike; R² 0.586 unconverged, scikit-learn's 0.689)
            K32, (K, rows_f64) = K, self._float64_kernel(rows_f64, space)
            res, more, dual = self._newton(K, y, loss, sample_weight, kw,
                                           start=(res.coef, res.info["intercept"]),
                                           dual_K=K32, smo_runs=smo_runs, smo_start=smo_start)
            n_iter += more
        for _ in range(self._narrowings()):  # narrower corners, from the last solution
            if not res.converged or not self._corners_cost(res, loss, y, sample_weight):
                break
            if K.dtype != self._ctx.xp.float64:  # (in float64: a narrow corner's curvature
                # C s / (2δ) amplifies a float32 K's rounding)
                if rows_f64 is None or K.shape[0] > EXACT_FALLBACK_ROWS:
                    break
                K, rows_f64 = self._float64_kernel(rows_f64, space)
            wide, loss = loss, type(loss)(loss.task, **{**loss.params,
                                                         "delta": loss.params["delta"] / 10})
            last, res = res, self._smo(K, y, loss, sample_weight, start=res.coef) if dual \
                else exact_newton(K, y, loss, start=(res.coef, res.info["intercept"]),
                                  corners_of=wide, **kw)
            n_iter += res.n_iter
            if not res.converged:  # (corners too narrow for float64's rounding: the last
                # solution stays, at its wider corners)
                res = last
                break
        if not res.converged and rows_f64 is not None and res.n_iter < max_iter and \
                K.shape[0] <= EXACT_FALLBACK_ROWS and not dual:  # (it stalled, not at the
            # step limit)
            res, more = self._exact_fallback(rows_f64, y, sample_weight, max_iter)
            n_iter += more
        return res, n_iter

    def _own_start(self, m):
        """The exact path's start on a problem of m rows where none is given: the corners up
        to :data:`CORNER_START_ROWS` rows (classification), the LS-SVM solution up to
        :data:`LS_SVM_START_ROWS` (regression), else None (α = 0, or the presolve's start)."""
        if self._task == "classification":
            return "corners" if m <= CORNER_START_ROWS else None
        return "ls_svm" if m <= LS_SVM_START_ROWS else None

    def _newton(self, K, y, loss, sample_weight, kw, redo=False, dual_K=None, smo_runs=None,
                smo_first=False, smo_start=None, **more):
        """``(result, steps, by SMO)``: ``exact_newton`` on ``loss``; where its steps crawl or
        stall (:data:`SMO_MAX_ROWS`; on NumPy any size), SMO on the dual of the exact path's
        own loss (the last of :meth:`_losses`) instead, or where SMO does not converge in
        :data:`SMO_ITERATIONS` a row, Newton's method on that loss from SMO's last point
        (``redo``: a stall or crawl short of :data:`SMO_SYSTEM_ROWS` returned as it is, for
        the caller's float64 kernel matrix: :meth:`_exact_solve`'s float64 redo). (So
        there the continuation from wider corners no longer runs. It had ended
        mixed seed 2222's trial 38 unconverged after 1,012 steps, 14 s against SMO's 1.2 s.)
        SMO reads ``dual_K`` where given (a float64 redo's float32 matrix: SMO solved those
        stalls on it before, and over a float64 matrix computed whole for it took twice the
        memory and 2 s more at 9,000 rows), and starts from ``smo_start`` where given, else from
        α = 0 whatever Newton's start (a Newton iterate that crawled was no nearer the dual's
        solution: session 54). ``smo_start``: a refinement's round after a check, the last
        round's solution with the added rows at α = 0 (session 70: medium fuzz seed 2020's
        trial 4, a second round of 9,958 rows by SMO after one of 6,695, 99,581 iterations
        unconverged from α = 0, then Newton's steps in float32 and float64 and SMO again,
        29.3–30.2 s, against 69,922 converged from the last solution, 9.5–9.7 s; seed 7676's
        trial 1 (9,607 rows) 96,252 unconverged and Newton's steps against 46,062, 14.3 → 7.7
        s; 5050's trial 14 58,838 → 56,316 iterations; session 58 had measured 67,398 against
        68,785 on 2020's trial 4, when SMO from α = 0 converged there). ``smo_runs`` (a dict,
        the caller's for one problem) keeps its outcome, which a second stall on the same
        matrices then takes instead of repeating it, and SMO's own run by the matrix it read:
        a float64 redo whose steps stall after SMO ran on the float32 matrix takes that run's
        point for its Newton steps on the float64 one, where it had run SMO again from the
        same start to the same point (until session 71). ``smo_first``: SMO at once where its
        systems may pass :meth:`_max_system` (no Newton step first); the
        result of an SMO run says why it ran (``info["smo"]``, "large" or "stall")."""
        # (SMO solves the Huber hinge and the ε-insensitive corners, not SVR's Huber loss at
        # ε = 0: its two dual variables a row, free together in the corners' overlap, are
        # held apart only by the corners' 2δ/C, and SMO crawled at C = 10⁴; that loss keeps
        # the continuation)
        own = self._losses()[-1]
        dual = own.name == SMO_LOSSES[self._task]
        big = self._max_system(K, sample_weight) if dual and is_numpy(self._ctx.xp) else None
        dual = dual and (K.shape[0] <= SMO_MAX_ROWS or big is not None)  # (NumPy: every size)
        if smo_first and big is not None:  # (the caller's last round's systems passed
            # SMO_SYSTEM_ROWS: this one's, on more rows, would too. Medium fuzz seed 2020's
            # trial 4, 3,263 rows added to 6,695: 4.5 s of Newton steps from two starts,
            # systems of up to 5,943 rows, before SMO from α = 0 all the same)
            res, n_iter, large = None, 0, True
        else:
            res = exact_newton(K, y, loss, hard_short_steps=EXACT_SHORT_STEPS if dual
                               else None, max_system=big, **more, **kw)
            n_iter = res.n_iter + res.info["n_presolve_iter"]
            large = res.info["large"]
            if not (dual and res.info["stalled"]) or redo and not large:  # (a crawl is a
                return res, n_iter, False  # stall too; redo: the caller's float64 matrix)
        key = (id(K), id(dual_K))
        if smo_runs is not None and key in smo_runs:  # (its steps counted once)
            res, _, by_smo = smo_runs[key]
            return res, n_iter, by_smo
        cap = SMO_LARGE_ITERATIONS if large else SMO_ITERATIONS
        read = K if dual_K is None else dual_K
        # (SMO's own run on the matrix it reads, kept apart: a float64 redo after SMO on the
        # float32 matrix reads that matrix again, from the same start, to the same point)
        ran = ("smo", id(read), cap)
        got = None if smo_runs is None else smo_runs.get(ran)
        if got is None:
            got = self._smo(read, y, own, sample_weight, per_row=cap, start=smo_start)
            if smo_runs is not None:
                smo_runs[ran] = got
        damped = None if res is None else res.info["damped_system"]
        self._log.info(
            "the exact path's Newton steps %s: its dual by SMO, %s in %d iterations",
            f"are damped on a system of {damped:,} rows (DAMPED_SYSTEM_ROWS)"
            if damped is not None
            else f"reach a system of more than {DAMPED_SYSTEM_ROWS:,} rows in their start, the "
            "squared hinge's solve (DAMPED_SYSTEM_ROWS)"
            if res is not None and res.info["first_large"] and big > DAMPED_SYSTEM_ROWS
            else f"reach a system of more than {big:,} rows ({self._smo_limit_name(big)})"
            if large
            else f"crawl ({EXACT_SHORT_STEPS} short steps in a row)" if res.info["crawled"]
            else "stall (no descent along a step)", "converged" if got.converged else
            "not converged (%s): Newton's method from there" % (
                "SMO_LARGE_ITERATIONS" if large else "SMO_ITERATIONS"), got.n_iter)
        if got.converged:
            out = got, got.n_iter, True
        else:
            res = exact_newton(K, y, own, start=(got.coef, got.info["intercept"]), **kw)
            out = res, got.n_iter + res.n_iter + res.info["n_presolve_iter"], False
        out[0].info["smo"] = "large" if large else "stall"  # (why SMO ran: smo_first)
        if smo_runs is not None:
            smo_runs[key] = out
        return out[0], n_iter + out[1], out[2]

    def _max_system(self, K, w):
        """``exact_newton``'s ``max_system`` on K (sample weights ``w``): the most rows of a
        Newton system it factors before SMO takes the problem, :data:`SMO_SYSTEM_ROWS`, or
        :data:`SMO_SOFT_SYSTEM_ROWS` at a small ``C · max(s) · k`` (:data:`SMO_SOFT_MAX_C`)
        where K's rows are not diagonally dominant
        (:func:`~svmgpu.solvers.exact.kernel_dominance`: there its systems are solved by
        conjugate gradients); K's own rows where they are no more than that but more than
        :data:`~svmgpu.solvers.exact.DAMPED_SYSTEM_ROWS` (no system passes it, but the damped
        first steps and the squared hinge's first solve keep to that bound, SMO the other
        method: until session 65 None there, and mixed fuzz seed 8181's trial 14's problem
        of 6,000 rows, 'poly' at C = 100, factored squared-hinge systems of 5,198 → 3,675
        rows (2.8 s), then took 17 damped steps on 3,900 rows: 4.5 → 1.7 s by SMO, the same
        score); None below."""
        m, xp = K.shape[0], self._ctx.xp
        soft = min(SMO_SOFT_SYSTEM_ROWS, SMO_SYSTEM_ROWS)
        limit = soft if m > soft and self._c_max(w) * max(1.0, max_diagonal(K, xp=xp)) <= \
            SMO_SOFT_MAX_C and kernel_dominance(K, xp=xp) > CG_MAX_DOMINANCE else \
            SMO_SYSTEM_ROWS
        if m > limit:
            return limit
        return m if m > DAMPED_SYSTEM_ROWS else None

    @staticmethod
    def _smo_limit_name(rows):
        """The constant that set the system limit ``rows`` (for the log)."""
        if rows == SMO_SYSTEM_ROWS:
            return f"SMO_SYSTEM_ROWS={SMO_SYSTEM_ROWS:,}"
        return f"SMO_SOFT_SYSTEM_ROWS={SMO_SOFT_SYSTEM_ROWS:,} at C · max(s) · k ≤ " \
            f"SMO_SOFT_MAX_C={SMO_SOFT_MAX_C:g}"

    def _smo(self, K, y, loss, sample_weight, start=None, per_row=None):
        """The exact problem of ``loss`` on K by SMO on its dual, at most ``per_row``
        iterations a row (:data:`SMO_ITERATIONS`, :data:`SMO_LARGE_ITERATIONS`; see
        :data:`SMO_MAX_ROWS`), from the α of an SMO solution ``start`` (a narrowing's wider
        corners) or α = 0."""
        return smo(K, y, loss, C=self.C, xp=self._ctx.xp, task=self._task,
                   sample_weight=sample_weight, tol=self.tol,
                   max_iter=int((SMO_ITERATIONS if per_row is None else per_row) *
                                int(K.shape[0])), start=start, extend=SMO_EXTEND)

    def _float64_kernel(self, rows_f64, space=None):
        """``(the float64 kernel matrix, its rows)`` of a float32 kernel matrix's rows
        ``rows_f64`` (or a function giving them: called here); ``space`` as
        :meth:`_kernel_matrix`'s."""
        rows = rows_f64() if callable(rows_f64) else rows_f64
        return self._kernel_matrix(rows, space), rows

    def _narrowings(self):
        """How many times the exact path may narrow its corners (:data:`SVR_NARROWINGS`)."""
        return 0

    def _corners_cost(self, res, loss, y, sample_weight):
        """Whether the corners of ``loss`` cost too much at the solution ``res`` (SVR's
        :data:`SVR_CORNER_GAP`)."""
        return False

    def _exact_fallback(self, rows, y, sample_weight, max_iter):
        """The exact problem on ``rows`` (or a function giving them) solved by the low-rank
        path's Newton method (:data:`EXACT_FALLBACK_ROWS`), in float64, with the rows of a
        numerically independent set as landmarks (the pivots of the kernel matrix's pivoted
        Cholesky factor up to ``100 · eps`` of its largest diagonal: the kernel function of
        every other row lies in their span to rounding, so the model is the exact one):
        ``(result as exact_newton's, Newton steps)``; α is nonzero at most of the landmarks
        (the same decision function, over other support vectors). An ill-conditioned kernel
        stalls the exact path and has few independent rows: 150 rows of one feature at γ = 1
        keep 14 (decision values within 2.5e-6 of the fit over all 150); 1,953 identical rows
        in three pairs keep one each (the fit 1.8 → 0.5 s)."""
        xp = self._ctx.xp
        dev = self._ctx.native_device
        rows = rows() if callable(rows) else rows
        rows = xp.astype(rows, xp.float64, copy=False)
        _, piv = independent_landmarks(self.kernel_, rows, xp.float64, xp=xp)
        m, r = int(rows.shape[0]), len(piv)
        J = asarray(piv, device=self._ctx.device)
        Z = xp.take(rows, J, axis=0)
        self._log.info("the exact solve did not converge: solved again with %d of its %d rows "
                       "as landmarks", r, m)
        P = reduced_kernel_features(rows, self.kernel_, Z, intercept=True, in_memory=True)
        B = rkhs_matrix(self.kernel_, Z, xp=xp, intercept=True,
                        intercept_penalty=_INTERCEPT_PENALTY)
        # (SVR's intercept penalty ½ ε (b − b₀)² is centred on the targets' median b₀
        # (:meth:`SVR._lowrank_solve`). Where the exact path stalls, near the hard margin, a
        # diagonal-dominant K makes the objective nearly flat along (b, α), each row's own α
        # absorbing any b at a cost of (y − b)² / (2 Kᵢᵢ), and a penalty centred on 0 pulled
        # b there: a fuzz case of seed 808, 50 rows of 200 features, the 'poly' kernel at
        # gamma=3 (a diagonal of 1.3–4.9 · 10⁸), C = 10, targets 49.9 ± 0.9, ε = 1, ended at
        # b = 45.4 with every training residual inside the tube, every test prediction near
        # 45.4: R² −21 against scikit-learn's −0.019. Centred, b = 50.05 and R² 0.0005)
        res = self._lowrank_solve(P, y, sample_weight, B, max_iter)
        coef = xp.astype(res.coef, xp.float64)
        info = {"intercept": float(coef[r]), "stalled": False, "n_presolve_iter": 0,
                "rounding": False, "fallback": True}
        alpha = set_rows(xp.zeros((m,), dtype=xp.float64, device=dev), J, coef[:r], xp=xp)
        b = info["intercept"]
        converged = res.converged and not self._fallback_misses(rows, b, P.matvec(coef) - b, y,
                                                                sample_weight)
        return SolverResult(coef=alpha, n_iter=res.n_iter, converged=converged,
                            objective_history=res.objective_history, info=info), res.n_iter

    def _fallback_misses(self, rows, b, f, y, sample_weight):
        """Whether :meth:`_exact_fallback`'s model (intercept ``b``, decision values ``f + b``
        at its ``rows``: its features' product, not the kernel's again) is far from the exact
        problem's: the exact problem's fixed point ``α* = C s σ ψ'(r)`` at its residuals r
        gives decision values ``K α* + b`` that differ from the model's by more than
        :data:`FALLBACK_KKT` of their scale (the margin, 1, for classification)."""
        xp = self._ctx.xp
        cls = self._task == "classification"
        r = 1.0 - y * (f + b) if cls else y - (f + b)
        ideal = self.C * self._losses()[-1].grad(r, xp=xp) * (y if cls else 1.0)
        if sample_weight is not None:
            ideal = sample_weight * ideal
        Ki = kernel_matvec(self.kernel_, rows, rows, ideal, memory_budget=self._ctx.budget_bytes)
        gap, size = fetch_scalars(xp.max(xp.abs(Ki - f)), xp.max(xp.abs(f)), xp=xp)
        scale = max(size, 1.0) if cls else size
        if gap > FALLBACK_KKT * scale:
            self._log.info("the fallback's model is not the exact one: K α* differs from its "
                           "decision values by %.3g > FALLBACK_KKT=%g of their scale %.3g",
                           gap, FALLBACK_KKT, scale)
            return True
        return False

    def _solve_region(self, Xj, y, sample_weight, max_iter):
        """The exact path on one region's rows: ``(α at its support vectors, their positions
        in Xj, the solver's result, Newton steps)``; the kernel matrix in float32 where the
        fit holds float32 kernel values and the region's rows, less their mean, allow it
        (:meth:`_kernel_rows`)."""
        xp = get_namespace(Xj)
        (X32,) = self._kernel_rows(Xj, shift=self._shift_of(Xj) if self._kernel_float32
                                   else None)  # (the region's own mean)
        res, it = self._exact_solve(self._kernel_matrix(X32), y, sample_weight, max_iter,
                                    rows_f64=Xj)
        nz = xp.nonzero(res.coef != 0)[0]
        return xp.take(res.coef, nz), nz, res, it

    def _worker_copy(self):
        """What a Dask worker needs of this fit to solve a region: the parameters and the
        fitted kernel (no data)."""
        est = clone(self)
        est.kernel_, est._kernel_float32 = self.kernel_, self._kernel_float32
        return est

    def _fit_regions(self, regions, extra, rows, y, sample_weight, max_iter):
        """One binary problem on the partitioned path: the exact path in each region on its
        rows of the problem (its own and those of the overlap band, ``extra``); a region whose
        rows (of positive weight) are of one class gets no support vectors and the intercept
        ±1 (that class), one without a row of positive weight 0."""
        xp = self._ctx.xp
        if is_dask_collection(y):  # (m labels and weights: the client groups them by region)
            y = asarray(y.compute(), device=self._ctx.device)
            if sample_weight is not None:
                sample_weight = asarray(sample_weight.compute(), device=self._ctx.device)
        g = int(self.region_centers_.shape[0])
        reg = regions if rows is None else xp.take(regions, rows)
        n = int(reg.shape[0])
        at = xp.arange(n, dtype=xp.int64, device=self._ctx.native_device)  # (positions in the problem)
        if extra is not None:  # each row of the band once more, in its second region
            ext = extra if rows is None else xp.take(extra, rows)
            (n_ext,) = (int(v) for v in fetch_scalars(xp.count_nonzero(ext >= 0), xp=xp))
            if n_ext:
                twice = xp.nonzero(ext >= 0)[0]
                at = xp.concat([at, twice])
                reg = xp.concat([reg, xp.take(ext, twice)])
        cls = self._task == "classification"
        # the rows of each region, grouped by one sort: key = 3 · region + side (1 for the
        # positive rows of positive weight, 2 for the negative ones (classification), 0 for
        # weight 0; regression: 1 for positive weight)
        w = sample_weight if sample_weight is not None else xp.ones_like(y)
        one = xp.ones((n,), dtype=xp.int64, device=self._ctx.native_device)
        side = xp.where(w > 0, xp.where(y > 0, one, 2 * one) if cls else one, 0 * one)
        key = reg * 3 + xp.take(side, at)
        order, b = group_rows(key, 3 * g, xp=xp)
        intercepts, tasks = [0.0] * g, []
        for j in range(g):
            n_pos, n_neg = b[3 * j + 2] - b[3 * j + 1], b[3 * j + 3] - b[3 * j + 2]
            if n_pos + n_neg == 0 or (cls and (n_pos == 0 or n_neg == 0)):
                # no row of positive weight (nothing to fit: 0), or one class (its sign)
                intercepts[j] = 0.0 if n_pos + n_neg == 0 or not cls else \
                    (1.0 if n_pos else -1.0)
                continue
            pos = xp.sort(xp.take(at, order[b[3 * j]:b[3 * j + 3]]),  # (in this problem)
                          stable=False)
            tasks.append((j, pos, pos if rows is None else xp.take(rows, pos)))

        def solve(task):
            j, pos, where = task
            alpha, nz, res, it = self._solve_region(
                xp.take(self._X_fit, where, axis=0), xp.take(y, pos),
                None if sample_weight is None else xp.take(sample_weight, pos), max_iter)
            return j, alpha, xp.take(where, nz), res, it

        if is_dask_collection(self._X_fit):  # each region's rows gathered by its own task
            done = dask_data.solve_on_rows(
                self._X_fit, [(where, (xp.take(y, pos), None if sample_weight is None
                                       else xp.take(sample_weight, pos)))
                              for _, pos, where in tasks],
                functools.partial(_solve_region_task, self._worker_copy(), max_iter),
                device=self._ctx.device)
            results = [(j, alpha, xp.take(where, nz), res, it)
                       for (j, _, where), (alpha, nz, res, it) in zip(tasks, done)]
        else:
            results = map_threads(solve, tasks, xp=xp, max_workers=PARTITION_THREADS)
        alphas, supports, groups, n_iter, converged, history = [], [], [], 0, True, []
        for j, alpha, support, res, it in results:
            alphas.append(alpha)
            supports.append(support)
            groups.append(xp.full(support.shape, j, dtype=xp.int64,
                                  device=self._ctx.native_device))
            intercepts[j] = res.info["intercept"]
            n_iter += it
            converged = converged and res.converged
            history += res.objective_history
        dev = self._ctx.native_device
        return {"alpha": xp.concat(alphas) if alphas else xp.zeros((0,), dtype=xp.float64,
                                                                    device=dev),
                "support": xp.concat(supports) if supports else xp.zeros((0,), dtype=xp.int64,
                                                                          device=dev),
                "region": xp.concat(groups) if groups else xp.zeros((0,), dtype=xp.int64,
                                                                    device=dev),
                "region_intercept": intercepts, "n_iter": n_iter, "converged": converged,
                "objective_history": history}

    def _fit_binary(self, shared, rows, y, sample_weight, start=None, margins=None):
        xp = self._ctx.xp
        max_iter = self._newton_steps()
        if self._task == "classification":  # (every path: as scikit-learn's SVC)
            check_two_classes(y, sample_weight, xp=xp)
        if "regions" in shared:
            return self._fit_regions(shared["regions"], shared["extra"], rows, y, sample_weight,
                                     max_iter)
        if "P" in shared:  # the low-rank path: z over the landmarks, b the last coefficient
            P, B = shared["P"], shared["B"]
            r = int(B.shape[0]) - 1
            if rows is not None:  # a pair: its rows, and the landmarks of its two classes
                # (its rows are two ranges of the features' rows, sorted by class, copied to
                # their places in X's order: a pair's float32 gradient sums its rows in
                # chunks, and rows of one class each made large same-signed chunk sums whose
                # rounding stalled Covtype's pairs in the line search)
                _, i, j = self._pair_classes(rows)
                order, b = shared["order"], shared["bounds"]
                ranges = [(b[i], b[i + 1]), (b[j], b[j + 1])]
                # (rows: every row of the two classes, ascending, as binary_problems gives them)
                at = [xp.searchsorted(rows, order[a:e]) for a, e in ranges]
                runs = self._pair_runs(i, j)
                cols = range_indices(runs, xp=xp, device=self._ctx.native_device)
                buf = self._pair_buffer(shared, int(rows.shape[0]) * int(cols.shape[0])) \
                    if P.in_memory else None
                P = P.take_ranges(ranges, runs, out=buf, at=at)
                B = take_block(B, cols, cols, xp=xp)
                start = None if start is None else xp.take(start, cols)
            res = self._lowrank_solve(P, y, sample_weight, B, max_iter, start, margins=margins)
            coef = xp.astype(res.coef, xp.float64)
            if rows is not None:  # (0 at the other classes' landmarks)
                coef = set_rows(xp.zeros((r + 1,), dtype=xp.float64,
                                         device=self._ctx.native_device), cols, coef, xp=xp)
            model = {"alpha": coef[:r], "intercept": float(coef[r]), "n_iter": res.n_iter,
                     "converged": res.converged, "objective_history": res.objective_history}
            if rows is None:  # (P z over every training row: :meth:`_training_outputs` and
                # :meth:`_grow_rank`'s next start)
                model["margins"] = res.info["margins"]
            elif res.info.get("margins") is not None:  # (a pair's, over its rows: the next
                # stage's start alone, :meth:`_next_margins`)
                model["pair_margins"] = res.info["margins"]
            return model
        if rows is not None:  # a pair: its rows in K's order (by class), and their block
            rows, y, sample_weight, K = self._pair_block(shared, rows, y, sample_weight)
        else:
            K = shared["K"]
        res, n_iter = self._exact_solve(
            K, y, sample_weight, max_iter,
            rows_f64=self._X_fit if rows is None else lambda: take_rows(self._X_fit, rows, xp=xp))
        return self._exact_model(res.coef, rows, res.info["intercept"], n_iter, res.converged,
                                 res.objective_history)

    @staticmethod
    def _whole_kernel(bounds):
        """Whether the exact path's one-vs-one pairs (classes at the row ranges ``bounds``)
        copy their blocks from the whole kernel matrix, computed once (:meth:`_pair_block`):
        where the whole matrix has at most :data:`PRESOLVE_MIN_ROWS` rows, or the pairs'
        blocks together hold more than :data:`WHOLE_KERNEL_SHARE` times its values. Else each
        pair computes its own, at most its block's values (the rows its Newton steps read,
        :class:`~svmgpu.kernels.KernelRows`, above that many rows in the pair)."""
        b = [int(t) for t in bounds]
        sizes = [b[c + 1] - b[c] for c in range(len(b) - 1)]
        m = b[-1] - b[0]
        blocks = sum((sizes[i] + sizes[j]) ** 2 for i in range(len(sizes))
                     for j in range(i + 1, len(sizes)))
        return m <= PRESOLVE_MIN_ROWS or blocks > WHOLE_KERNEL_SHARE * m * m

    def _pair_block(self, shared, rows, y, sample_weight):
        """A one-vs-one pair of the exact path: ``(rows, y, sample_weight, K)``, its rows in
        the kernel matrix's order (by class), their labels and weights, and their kernel
        matrix: a block of the whole one's (:meth:`_whole_kernel`), or the pair's own
        (:meth:`_kernel_matrix`: above :data:`PRESOLVE_MIN_ROWS` rows a
        :class:`~svmgpu.kernels.KernelRows`, whose rows are computed as the Newton steps read
        them).

        The whole matrix, computed once and each pair's block copied from it, was most of the
        fit where the pairs are large and their support vectors few: a fuzz case of 6,000
        rows in three classes (10 features, 99.4 % test accuracy; scikit-learn 0.07 s) took
        0.39 s, 81 ms of it the float64 matrix's 36 million values and 71 ms the pairs'
        copies of them; 0.14 s with each pair's own."""
        xp = self._ctx.xp
        order, b = shared["order"], shared["bounds"]
        cls, i, j = self._pair_classes(rows)
        perm = xp.argsort(cls, stable=True)
        y = xp.take(y, perm)
        sample_weight = None if sample_weight is None else xp.take(sample_weight, perm)
        rows = xp.concat([order[b[i]:b[i + 1]], order[b[j]:b[j + 1]]])
        ranges = [(b[i], b[i + 1]), (b[j], b[j + 1])]
        if "K" in shared:
            return rows, y, sample_weight, range_block(shared["K"], ranges, xp=xp)
        held = shared["rows"]
        return rows, y, sample_weight, self._kernel_matrix(
            concat_rows([take_rows(held, slice(s, e), xp=xp) for s, e in ranges], xp=xp))

    def _exact_model(self, alpha, rows, intercept, n_iter, converged, history):
        """The model of one exact problem from its α over ``rows`` (None: every row)."""
        xp = self._ctx.xp
        nonzero = xp.nonzero(alpha != 0)[0]
        support = nonzero if rows is None else xp.take(rows, nonzero)
        return {"alpha": xp.take(alpha, nonzero), "support": support, "intercept": intercept,
                "n_iter": n_iter, "converged": converged, "objective_history": history}

    def _fit_pairs(self, shared, problems):
        """The exact path's one-vs-one pairs (a float64 kernel matrix), in consecutive chunks
        of at most :data:`PAIRS_AT_ONCE_ROWS` rows: a chunk of two pairs or more solved as one
        problem (:meth:`_fit_pairs_at_once`), the others, and a chunk whose joint solve did not
        converge, pair by pair."""
        chunks, rows = [[]], 0
        for problem in problems:
            n = int(problem[0].shape[0])
            if chunks[-1] and rows + n > PAIRS_AT_ONCE_ROWS:
                chunks.append([])
                rows = 0
            chunks[-1].append(problem)
            rows += n
        models = []
        for chunk in chunks:
            first = len(models)
            got = None if len(chunk) < 2 else self._phase(
                "solve", self._fit_pairs_at_once, shared, chunk,
                detail={"problems": f"{first + 1}-{first + len(chunk)}/{len(problems)}"})
            models += super()._fit_problems(shared, chunk, len(problems), first=first) \
                if got is None else got
        return models

    def _fit_pairs_at_once(self, shared, problems):
        """One-vs-one pairs of the exact path solved as one problem
        (:func:`~svmgpu.solvers.exact.exact_newton`'s ``groups``: their kernel blocks on the
        diagonal of one matrix, an intercept each): their models, or None where the solve did
        not converge (then each is solved alone, with the continuation and fallbacks of
        :meth:`_exact_solve`)."""
        xp = self._ctx.xp
        dev = self._ctx.native_device
        for _, y, w in problems:
            check_two_classes(y, w, xp=xp)
        pairs = [self._pair_block(shared, *problem) for problem in problems]
        sizes = [int(p[0].shape[0]) for p in pairs]
        N, offsets = sum(sizes), [sum(sizes[:g]) for g in range(len(sizes))]
        f64 = xp.float64
        blocks = [xp.concat([xp.zeros((n, off), dtype=f64, device=dev), Kp,
                             xp.zeros((n, N - off - n), dtype=f64, device=dev)], axis=1)
                  for (_, _, _, Kp), n, off in zip(pairs, sizes, offsets, strict=True)]
        weighted = pairs[0][2] is not None
        res = exact_newton(
            xp.concat(blocks, axis=0), xp.concat([p[1] for p in pairs]), self._losses()[-1],
            C=self.C, xp=xp, task=self._task, tol=self.tol, max_iter=self._newton_steps(),
            sample_weight=xp.concat([p[2] for p in pairs]) if weighted else None,
            start=self._own_start(N), corner_start=True,
            groups=xp.concat([xp.full((n,), g, dtype=xp.int64, device=dev)
                              for g, n in enumerate(sizes)]))
        if not res.converged:
            return None
        return [self._exact_model(res.coef[off:off + n], rows, b, res.n_iter, True,
                                  [h[g] for h in res.objective_history])
                for g, ((rows, _, _, _), n, off, b) in enumerate(zip(
                    pairs, sizes, offsets, res.info["intercept"], strict=True))]

    def _pair_classes(self, rows):
        """``(classes of the rows, i, j)``: a one-vs-one pair's rows and its two classes
        ``i < j`` (host ints)."""
        xp = self._ctx.xp
        cls = xp.take(self._y_idx, rows)
        i, j = (int(v) for v in fetch_scalars(xp.min(cls), xp.max(cls), xp=xp))
        return cls, i, j

    def _pair_runs(self, i, j):
        """The low-rank features' columns of the one-vs-one pair of classes ``i < j``, as
        ranges ``[(start, stop), ...]`` (host ints, ascending): the landmarks of its two
        classes (at least their quotas, :meth:`_class_quota`), a range per class and stage
        (:meth:`_class_sorted`), then the intercept's column; every column where one of its
        classes has no landmark (more classes than landmarks).

        LIBSVM's pair model expands over its own two classes' rows only, and so does this one
        over their landmarks: with nested random landmarks a pair keeps the landmark density
        of the whole (its landmarks per row), and a Newton step costs (its rows) × (its
        landmarks)² instead of (its rows) × r². Covtype's 7 classes on 50,000 rows (rank grown
        to 2,000, seeds 0–2): 17.6–19.3 s → 9.3–10.9 s, 74.30–74.34 % → 74.26–74.29 %
        (scikit-learn's SVC: 74.40 %)."""
        r = int(self._landmarks[0].shape[0])
        stages = self._landmark_bounds
        if min(sum(b[c + 1] - b[c] for b in stages) for c in (i, j)) == 0:
            return [(0, r + 1)]  # (no landmark of its own: it could not shape the pair)
        return [(b[c], b[c + 1]) for b in stages for c in (i, j) if b[c + 1] > b[c]] + \
            [(r, r + 1)]

    def _convergence_advice(self):
        if self.max_iter == -1:  # (no limit but _MAX_NEWTON_STEPS: a kernel matrix that float64
            # cannot resolve, or a crawl)
            return ("scale the features (e.g. sklearn.preprocessing.StandardScaler), raise "
                    "tol, or for kernel='poly' lower degree or gamma")
        return f"raise max_iter (max_iter={self.max_iter}) or tol, or scale the features"

    def _after_fit(self, shared):
        if self.solver_ == "lowrank" and not self._refined():
            return self._after_lowrank_fit()
        if self.solver_ == "lowrank":  # (refined: the exact path's form)
            del self._landmarks, self._landmark_bounds
        xp, dev = self._ctx.xp, self._ctx.native_device
        models, m = self.models_, int(self._X_fit.shape[0])
        # (each row's class for SVC: LIBSVM groups the support vectors by class; 0 for SVR)
        y_idx = getattr(self, "_y_idx", xp.zeros((m,), dtype=xp.int64, device=dev))
        k = int(self.classes_.shape[0]) if self._task == "classification" else 2
        # the support vectors of every pair, grouped by class (LIBSVM's order), or by region
        # (the partitioned path: prediction reads each region's slice; a row of an overlap
        # band may be a support vector of two regions): sorted keys group · m + row
        regions = shared.get("regions")
        keys = [(mod.pop("region") if regions is not None
                 else xp.take(y_idx, mod["support"])) * m + mod.pop("support") for mod in models]
        key = sorted_unique(xp.concat(keys), xp=xp)
        support = key % m
        W = xp.zeros((int(support.shape[0]), len(models)), dtype=xp.float64, device=dev)
        for q, mod in enumerate(models):  # each pair's α at its support vectors' positions
            W[:, q] = set_rows(W[:, q], xp.searchsorted(key, keys[q]), mod.pop("alpha"), xp=xp)
            mod["column"] = q  # (prediction reads the column q of pair_coef_)
        if regions is not None:  # one model per region: no LIBSVM layout (no dual_coef_)
            g = int(self.region_centers_.shape[0])
            self.region_starts_ = xp.searchsorted(
                key // m, xp.arange(g + 1, dtype=xp.int64, device=dev))
            self.region_intercept_ = xp.stack(
                [asarray(mod.pop("region_intercept"), device=self._ctx.device,
                         dtype=xp.float64) for mod in models], axis=1)
            dual = None
        elif k == 2:
            dual = xp.reshape(W[:, 0], (1, -1))
        else:  # LIBSVM: in pair (i, j), the SVs of class i in row j − 1, those of j in row i
            cls = xp.take(y_idx, support)
            dual = xp.zeros((k - 1, int(support.shape[0])), dtype=xp.float64, device=dev)
            for q, (i, j) in enumerate(self.pairs_):
                dual[j - 1, :] = xp.where(cls == i, W[:, q], dual[j - 1, :])
                dual[i, :] = xp.where(cls == j, W[:, q], dual[i, :])
        self.support_ = support
        if is_dask_collection(self._X_fit):  # (the support vectors' rows: one gather)
            rows = xp.unique_values(support)
            self.support_vectors_ = xp.take(
                dask_data.rows_of(self._X_fit, rows, device=self._ctx.device),
                xp.searchsorted(rows, support), axis=0)
        else:  # (a sparse fit's stay sparse where few of their entries are nonzero)
            self.support_vectors_ = model_rows(self._X_fit, support, xp=xp)
        self.pair_coef_ = W
        if dual is not None:
            self.dual_coef_ = dual
        self._finish_models()
        del self._X_fit

    def _after_lowrank_fit(self):
        xp, models = self._ctx.xp, self.models_
        J, Z = self._landmarks
        W = xp.stack([mod.pop("alpha") for mod in models], axis=1)
        for q, mod in enumerate(models):
            mod.pop("margins", None)  # (a fixed rank's: no growth read them)
            mod.pop("pair_margins", None)
            mod["column"] = q
        self.support_, self.support_vectors_, self.pair_coef_ = J, Z, W
        if len(models) == 1:
            self.dual_coef_ = xp.reshape(W[:, 0], (1, -1))
        self._finish_models()
        del self._landmarks, self._landmark_bounds

    def _finish_models(self):
        xp, models = self._ctx.xp, self.models_
        if self.solver_ != "partition":  # (the partitioned path: region_intercept_)
            self.intercept_ = xp.asarray([mod["intercept"] for mod in models], dtype=xp.float64,
                                         device=self._ctx.native_device)
        self.n_iter_ = host_array([mod["n_iter"] for mod in models], "int64")
        self.converged_ = host_array([mod["converged"] for mod in models], "bool")
        self.objective_history_ = [mod["objective_history"] for mod in models]

    def _prepare_predict(self, X, *, ctx):
        """Decision values of every problem, shape (n, n_problems), in X's dtype; the kernel
        values in float32 where the fit held them in float32 (:meth:`_float32_kernel`: the
        model was fitted to those values, and float32's exponentials and products take about
        half the time: ijcnn1's 91,701 rows at 1,414 landmarks 0.38 → 0.22 s)."""
        xp, dtype = ctx.xp, X.dtype
        if self.solver_ == "partition":
            return self._predict_regions(X, ctx=ctx)
        Xk, Z = self._kernel_rows(X, self.support_vectors_,
                                  shift=getattr(self, "_kernel_shift", None))
        W = xp.astype(self.pair_coef_, Xk.dtype)
        values = kernel_matvec(self.kernel_, Xk, astype_rows(Z, Xk.dtype, xp=xp), W,
                               memory_budget=ctx.budget_bytes, prune=True)
        return xp.astype(values, dtype) + xp.astype(self.intercept_, dtype)[None, :]

    def _predict_regions(self, X, *, ctx):
        """The partitioned path's decision values, shape (n, n_problems): each row by the
        model of the region of its nearest centre (its support vectors' slice of
        ``support_vectors_``, pruned to those within the kernel's reach, plus the region's
        intercepts); a row of the overlap band (its squared distance to the second-nearest
        centre exceeds the nearest's by ``gap < region_overlap_``) by both regions' models,
        the second weighted ``½ − gap / (2 · region_overlap_)``: ½ on the boundary, 0 at the
        band's edge."""
        xp = ctx.xp
        Xd = dense_rows(X, slice(None), xp=xp)
        centers = xp.astype(self.region_centers_, Xd.dtype)
        band = float(getattr(self, "region_overlap_", 0.0))
        g = int(centers.shape[0])
        if band > 0 and g > 1:
            where, second, gap = assign(Xd, centers, xp=xp, second=True)
        else:
            where, second = assign(Xd, centers, xp=xp), None
        out = self._region_values(Xd, where, ctx=ctx)
        if second is not None:
            (n_band,) = (int(v) for v in fetch_scalars(xp.count_nonzero(gap < band), xp=xp))
            if n_band:
                rows = xp.nonzero(gap < band)[0]
                w = (0.5 - xp.take(gap, rows) / (2.0 * band))[:, None]
                other = self._region_values(xp.take(Xd, rows, axis=0), xp.take(second, rows),
                                            ctx=ctx)
                out = set_rows(out, rows, (1.0 - w) * xp.take(out, rows, axis=0) + w * other,
                               xp=xp)
        return out

    def _region_values(self, Xd, where, *, ctx):
        """Decision values of the rows ``Xd`` (shape (n, n_problems)), row i by the model of
        region ``where[i]``."""
        xp, dev = ctx.xp, ctx.native_device
        g, n_p = int(self.region_centers_.shape[0]), int(self.pair_coef_.shape[1])
        order, b = group_rows(where, g, xp=xp)
        starts = [int(v) for v in fetch_scalars(*[self.region_starts_[j] for j in range(g + 1)],
                                                xp=xp)]
        W, Z = self.pair_coef_, self.support_vectors_
        b_int = xp.astype(self.region_intercept_, Xd.dtype)
        out = xp.zeros((Xd.shape[0], n_p), dtype=Xd.dtype, device=dev)
        for j in range(g):
            if b[j + 1] == b[j]:
                continue
            rows = order[b[j]:b[j + 1]]
            vals = xp.broadcast_to(b_int[j:j + 1, :], (b[j + 1] - b[j], n_p))
            if starts[j + 1] > starts[j]:
                s = slice(starts[j], starts[j + 1])
                Xr, Zr = self._kernel_rows(xp.take(Xd, rows, axis=0), Z[s, ...],
                                           shift=self.region_centers_[j, :])  # (rows near it)
                vals = vals + xp.astype(kernel_matvec(
                    self.kernel_, Xr, xp.astype(Zr, Xr.dtype, copy=False),
                    xp.astype(W[s, ...], Xr.dtype), memory_budget=ctx.budget_bytes,
                    prune=True), Xd.dtype)
            out = set_rows(out, rows, vals, xp=xp)
        return out

    def _decision_binary(self, model, feats, *, xp):
        return feats[:, model["column"]]

class SVC(_FrontDoor, SVCBase):
    """C-support vector classification: scikit-learn's ``SVC`` parameters and meanings.

    Minimizes ``½‖f‖² + C Σᵢ sᵢ ψ(1 − yᵢ f(xᵢ))`` with ``f = Σ αⱼ k(·, xⱼ) + b`` for each pair of
    classes (one-vs-one, as LIBSVM), ψ the hinge smoothed into a Huber hinge of half-width
    :data:`HINGE_SMOOTHING`, the intercept ``b`` unpenalized.

    Parameters
    ----------
    C : float, default 1.0
        Weight of the loss (LIBSVM's C): larger C fits the training data more closely.
    kernel : {"rbf", "poly", "linear", "laplacian"} or Kernel, default "rbf"
    degree : int, default 3
        Degree of the "poly" kernel (ignored by the others).
    gamma : "scale", "auto" or float, default "scale"
        Kernel width, as in scikit-learn: "scale" is ``1 / (n_features · X.var())``. With
        ``sample_weight`` or ``class_weight`` the variance counts a row's weight as repetitions
        of the row (so that a weight of 2 fits as a repeated row); scikit-learn's ``SVC``
        ignores the weights there, so its "scale" differs on weighted data: pass the fitted
        ``kernel_.gamma`` to compare the two on the same kernel.
    coef0 : float, default 0.0
        Constant term of the "poly" kernel, at least 0 (a negative one makes the kernel
        indefinite, which the solvers cannot factor: refused).
    tol : float, default 1e-3
        Stop each pair's Newton iteration when ``max |α − C s y ψ'(r)| ≤ tol · min(C, 100 / k)
        · max(s)``, k the larger of 1 and the kernel matrix's largest diagonal entry (the exact
        path; above C k = 100, in the hard-margin regime, α is far below C).
    class_weight : None, "balanced" or dict, default None
        Per-class weights multiplying C (LIBSVM's ``-wi``); "balanced": ``n / (k · n_c)``.
    probability : bool, default False
        Fit Platt's sigmoids by an internal 5-fold cross-validation for ``predict_proba`` (the
        folds refit at the fit's ``rank_`` when ``rank="auto"`` grew it).
    decision_function_shape : {"ovr", "ovo"}, default "ovr"
        "ovr": ``decision_function`` of shape (n_samples, n_classes), the votes plus squashed
        confidences (scikit-learn's); "ovo": the raw pairwise values, shape
        (n_samples, n_classes · (n_classes − 1) / 2). Binary problems: shape (n_samples,).
    break_ties : bool, default False
        With "ovr" and more than two classes, predict the argmax of ``decision_function``
        instead of the most votes (ties to the first class).
    max_iter : int, default -1
        Newton steps per pair of classes; -1: no limit (a safeguard of 1,000).
    random_state : int, Generator or None, default None
        The folds of ``probability=True``, the landmarks of the low-rank path and the k-means
        start of the partitioned path (None: seed 0, so the fit is deterministic).
    rank : "auto", int or None, default "auto"
        The landmarks of the low-rank path (at most the rows): an int takes that path with that
        many; "auto" lets ``solver="auto"`` choose the path, and on the low-rank path grows the
        rank from :data:`AUTO_RANK_START` by :data:`AUTO_RANK_GROWTH` a stage (nested random
        landmarks, each stage warm-started) while more than :data:`AUTO_RANK_CHANGE` of the
        training predictions change, up to :data:`AUTO_RANK_MAX` or the memory budget
        (``rank_path_``); None asks for the exact path. With more than two classes each
        class's quota of landmarks is drawn first (:data:`PAIR_MIN_LANDMARKS`; the first stage
        starts at their sum where that is larger) and each pair expands over its own two
        classes' landmarks.
    solver : {"auto", "exact", "lowrank", "partition"}, default "auto"
        The path (``solver_``; see the module notes): "auto" takes the exact one up to
        :data:`EXACT_MAX_ROWS` rows when the kernel matrix fits the memory budget, above that
        the partitioned one when the kernel is local (:data:`LOCAL_KERNEL_LEVEL`), else the
        low-rank one; and the low-rank one for a kernel of finite rank ("linear", "poly")
        from :data:`FINITE_RANK_MIN_ROWS` rows, at least :data:`FINITE_RANK_ROWS` a
        dimension of its feature space (whose landmarks then hold it exactly).
    region_rows : "auto" or int, default "auto"
        The partitioned path's mean region size: k-means into ``ceil(m / region_rows)``
        regions ("auto": :data:`PARTITION_ROWS`); a region is split by 2-means only when its
        kernel matrix would pass :data:`REGION_MAX_ROWS` rows or the memory budget.
    region_overlap : "auto" or float >= 0, default "auto"
        The partitioned path's overlap ρ: a row also joins the region of its second-nearest
        centre when ``k(x, c₂) ≥ e^(−ρ) k(x, c₁)`` (RBF; other decaying kernels by their
        ``negligible_distance``), and a new point in that band is predicted by both regions'
        models, blended ("auto": :data:`REGION_OVERLAP`; 0: disjoint regions, each point by
        its nearest region's model).
    device : {"auto", "cpu", "cuda", "cuda:N"}, default "auto"
        Where the fit runs and the fitted arrays live.
    dtype : {None, "float32", "float64"}, default None
        The dtype of the kernel computations (None keeps float32 input, else float64; for
        the RBF and Laplacian kernels the kernel matrix of the partitioned path's regions,
        and from :data:`EXACT_FLOAT32_ROWS` rows the exact path's kernel matrix and the
        low-rank path's features, in float32, and then prediction's kernel values too,
        computed on the rows less their mean: an offset of the features costs no digits; in
        float64 where float32 would overflow, underflow or round the RBF exponents by more
        than :data:`FLOAT32_RBF_ROUNDING`); the Newton systems are solved in float64.
        ``dtype="float64"`` computes everything in float64.
    memory_budget : int, str or None, default None
        Bytes the fit may use (None: half the free device memory). A budget that stops
        ``rank="auto"``'s growth while the training predictions still change warns
        (``UserWarning``): the model is then likely less accurate than the rank policy's.
    verbose : int, default 0
        0 quiet; 1 the phases of the fit; 2 each Newton step too (``svmgpu`` logger).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_ : array of shape (n_SV,)
        Exact path: the support vectors (the rows with ``αᵢ ≠ 0``), grouped by class.
        Low-rank path: the landmark rows; refined (``rank_path_``): the support vectors, as
        on the exact path.
    support_vectors_ : array or sparse matrix of shape (n_SV, n_features)
        The support vectors' rows (the landmarks on the low-rank path). A fit of sparse X
        keeps them sparse (CSR) where at most 5 % of their entries are nonzero (denser rows
        multiply faster dense), as scikit-learn keeps them sparse; dense X's are dense.
    n_support_ : ndarray of shape (n_classes,)
    dual_coef_ : array of shape (n_classes − 1, n_SV)
        ``yᵢ αᵢ`` in LIBSVM's layout (the coefficient of a support vector of class c in the
        problem (c, j) stands in row ``j − 1`` if ``j > c`` else ``j``). Low-rank path: the
        landmarks' coefficients z, shape (1, rank), for two classes only (the landmarks are
        shared by every pair: see ``pair_coef_``).
    intercept_ : array of shape (n_classes · (n_classes − 1) / 2,)
    pair_coef_ : array of shape (n_SV, n_classes · (n_classes − 1) / 2)
        The coefficient of each support vector in each pair's decision function (0 where it
        is not a support vector of that pair): prediction is one pass over kernel blocks.
    solver_ : str
        The path that ran ("exact", "lowrank" or "partition").
    region_centers_, region_starts_, region_intercept_ : arrays (partitioned path only)
        The regions' k-means centres, shape (n_regions, n_features) (a point is predicted by
        the region of its nearest centre); where each region's support vectors start in
        ``support_vectors_``, shape (n_regions + 1,); each region's intercept per problem,
        shape (n_regions, n_problems). The partitioned path has no ``dual_coef_`` or
        ``intercept_`` (a model per region), and a row of an overlap band may stand twice in
        ``support_`` (a support vector of two regions).
    region_overlap_ : float (partitioned path only)
        The overlap band in squared distance (``ρ / γ`` for RBF; 0: none).
    rank_ : int or None
        The landmarks of the low-rank path (None on the exact path).
    rank_path_ : list of dict or None
        The low-rank path's stages: ``rank``, ``changed`` (the fraction of training rows whose
        predicted class changed from the stage before; None for the first), ``seconds``,
        ``starved`` where the stage's model predicts a class for fewer than
        :data:`AUTO_RANK_STARVED` of its rows (``class``, ``predicted``, ``rows``, and
        ``confirmed`` where the exact kernel starves it too), ``deferred`` where a stage of
        at least :data:`REFINE_MIN_RANK` landmarks, its change within :data:`REFINE_NEAR`
        times the limit, grew once more before refining, in
        the first stage of a grown rank ``captured`` (the share of the kernel's diagonal its
        landmarks hold: :data:`LOWRANK_MIN_CAPTURE`; in the last stage too where that share
        was below it and the fit warned), and in the last stage of a grown rank, ``stop``
        (why it stopped) and, where it was tried,
        ``refined``: a dict (``candidates``, the rows of each problem's exact problem, and
        ``seconds``) where the growth ended in the exact problem on the candidate support
        vectors (:data:`REFINE_MIN_RANK`; docs/svc.md), or a string saying why not. One
        stage for an int ``rank``; None on the other paths.
    n_iter_ : ndarray of shape (n_pairs,)
        Newton steps per pair (on the exact path, small pairs solved together as one problem
        each report the steps of that joint solve: :data:`PAIRS_AT_ONCE_ROWS`; a problem
        whose Newton steps crawled and went on by SMO adds its SMO iterations:
        :data:`SMO_MAX_ROWS`).
    fit_timings_ : dict
        Seconds of each phase of the fit.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from svmgpu import SVC
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = SVC().fit(X / 16.0, y)
    """

    _default_multi_class = "ovo"
    _parameter_constraints = constraints(
        "C", "kernel", "degree", "gamma", "coef0", "tol", "class_weight", "probability",
        "random_state", "device", "dtype", "memory_budget", "verbose",
        decision_function_shape=[StrOptions({"ovr", "ovo"})], break_ties=["boolean"],
        max_iter=[Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
        rank=[StrOptions({"auto"}), POSITIVE_INT, None],
        solver=[StrOptions({"auto", "exact", "lowrank", "partition"})],
        region_rows=[StrOptions({"auto"}), Interval(Integral, 2, None, closed="left")],
        region_overlap=[StrOptions({"auto"}), Interval(Real, 0, None, closed="left")])

    def __init__(self, C=1.0, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3,
                 class_weight=None, probability=False, decision_function_shape="ovr",
                 break_ties=False, max_iter=-1, random_state=None, *, rank="auto",
                 solver="auto", region_rows="auto", region_overlap="auto",
                 device="auto", dtype=None, memory_budget=None, verbose=0):
        store_parameters(self, locals())

    def _losses(self, continuation=False, targets=None):
        """The Huber hinges of the fit: the last is the one solved; the wider ones before it
        are the continuation of a Newton iteration that cannot descend (``targets``: the
        problem's labels, unused)."""
        widths = _CONTINUATION if continuation else (HINGE_SMOOTHING,)
        return [get_loss("huber_hinge", delta=d) for d in widths]

    def _lowrank_solve(self, P, y, sample_weight, B, max_iter, start=None, *, margins=None):
        """Zhou 2013's reduced Newton method: from z = 0 with a presolve and the Huber
        continuation from :data:`LOWRANK_DELTA0`, or from ``start`` (a smaller rank's solution)
        at the final corner, one step at least; ``margins``: ``P start`` where known."""
        m, r = P.shape
        warm = start is not None
        xp = self._ctx.xp
        k = max(1.0, max_diagonal(B[:-1, :-1], xp=xp)) if int(B.shape[0]) > 1 else 1.0
        near = self._hard_margin(sample_weight, k)  # (LOWRANK_DECREMENT_TOL)
        return newton_reduced(P, y, loss="huber_hinge", C=float(self.C), B=B,
                              sample_weight=sample_weight, tol=float(self.tol),
                              max_iter=max_iter, z0=start, margins0=margins,
                              delta0=HINGE_SMOOTHING if warm else LOWRANK_DELTA0,
                              stage_tol=LOWRANK_STAGE_TOL, min_iter=int(warm),
                              delta_min=HINGE_SMOOTHING,
                              presolve=_lowrank_presolve(m, r, warm),
                              decrement_tol=LOWRANK_DECREMENT_TOL if near else None,
                              verbose=self.verbose, xp=xp)

    _refines = True

    def _refine_rows(self, f, y, w):
        """The rows of positive weight whose margin ``y f`` is below ``1 + REFINE_MARGIN``, or
        all of them where those are at least :data:`REFINE_ALL_SHARE` of them (and at most
        :data:`REFINE_WHOLE_MAX_ROWS`)."""
        xp = self._ctx.xp
        near = y * f < 1.0 + REFINE_MARGIN
        if w is not None:
            near = near & (w > 0)
        n_near, n_rows = fetch_scalars(xp.sum(xp.astype(near, xp.float64)),
                                       y.shape[0] if w is None else
                                       xp.sum(xp.astype(w > 0, xp.float64)), xp=xp)
        if REFINE_ALL_SHARE * n_rows <= n_near and n_rows <= REFINE_WHOLE_MAX_ROWS:  # (the whole
            # problem: its exact SVM)
            return xp.arange(y.shape[0], device=self._ctx.native_device) if w is None else \
                xp.nonzero(w > 0)[0]
        return xp.nonzero(near)[0]

    def _output_change(self, old, new, problems):
        """``(changed, gained)`` between two sets of decision values on the training rows
        (:meth:`_training_outputs`): the fraction of rows whose predicted class differs, and
        None (SVC's growth ends by its predictions alone; SVR's gain:
        :data:`SVR_AUTO_RANK_GAIN`)."""
        xp = self._ctx.xp
        differ = self._predicted(old) != self._predicted(new)
        return float(fetch_scalars(xp.mean(xp.astype(differ, xp.float64)), xp=xp)[0]), None

    def _predicted(self, F):
        """The class index each row of the decision values F (:meth:`_training_outputs`) is
        predicted (one-vs-one: LIBSVM's vote)."""
        xp = self._ctx.xp
        if F.shape[1] == 1:
            return xp.astype(F[:, 0] > 0, xp.int64)
        k = int(self.classes_.shape[0])
        votes = ovo_vote_counts([F[:, q] for q in range(F.shape[1])], class_pairs(k, "ovo"), k,
                                xp=xp)
        return xp.argmax(votes, axis=1)

    def _compared_classes(self, shared, m):
        order = shared.get("order")  # (one-vs-one: the outputs are in the features' row order)
        y_idx = self._y_idx if order is None else self._ctx.xp.take(self._y_idx, order)
        return y_idx[::_sample_step(m)]

    def _starved(self, outputs, compared):
        """The first class of at least :data:`AUTO_RANK_STARVED_ROWS` compared rows that the
        decision values ``outputs`` predict for fewer than :data:`AUTO_RANK_STARVED` times its
        rows' number: ``{"class", "predicted", "rows"}``; else None."""
        xp = self._ctx.xp
        pred = self._predicted(outputs)
        k = int(self.classes_.shape[0])
        counts = fetch_scalars(*(xp.sum(xp.astype(v == c, xp.int64))
                                 for v in (pred, compared) for c in range(k)), xp=xp)
        for c in range(k):
            predicted, rows = int(counts[c]), int(counts[k + c])
            if rows >= AUTO_RANK_STARVED_ROWS and predicted < AUTO_RANK_STARVED * rows:
                label = self.classes_[c]
                return {"class": label.item() if hasattr(label, "item") else label,
                        "predicted": predicted, "rows": rows}
        return None

    # ------------------------------------------------------------------ prediction
    def decision_function(self, X):
        """Decision values, in the caller's array kind: shape (n_samples,) for two classes
        (positive means ``classes_[1]``); else (n_samples, n_classes) for
        ``decision_function_shape="ovr"`` or (n_samples, n_pairs) for "ovo"."""
        check_is_fitted(self)
        if is_dask_collection(X):
            return dask_data.map_predict(self, "decision_function",
                                         check_X(self, X, reset=False)[0])
        if self.decision_function_shape == "ovo" and int(self.classes_.shape[0]) > 2:
            scores, xp = self._raw_decision(X)
            return self._to_caller(xp.stack(scores, axis=1), X)
        return super().decision_function(X)

    def predict(self, X):
        """Predicted class labels (the most votes of the one-vs-one problems, ties to the
        first class; the argmax of ``decision_function`` with ``break_ties=True``)."""
        check_is_fitted(self)
        if is_dask_collection(X):
            return dask_data.map_predict(self, "predict", check_X(self, X, reset=False)[0])
        k = int(self.classes_.shape[0])
        if k == 2 or (self.break_ties and self.decision_function_shape == "ovr"):
            return super().predict(X)
        scores, xp = self._raw_decision(X)
        votes = ovo_vote_counts(scores, self.pairs_, k, xp=xp)
        return self._labels_of(xp.argmax(votes, axis=1), X, xp=xp)


class SVR(_FrontDoor, SVRBase):
    """Epsilon-support vector regression: scikit-learn's ``SVR`` parameters and meanings.

    Minimizes ``½‖f‖² + C Σᵢ sᵢ ψ(yᵢ − f(xᵢ))`` with ``f = Σ αⱼ k(·, xⱼ) + b``, ψ LIBSVM's
    ε-insensitive loss ``(|u| − ε)₊`` with Huber corners of half-width
    ``min(HINGE_SMOOTHING, SVR_CORNER · ε)`` (so residuals below ``(1 − SVR_CORNER) ε`` cost
    nothing and their rows are no support vectors;
    :class:`svmgpu.losses.HuberEpsilonInsensitive`; ``epsilon=0``:
    the Huber loss of half-width :data:`HINGE_SMOOTHING`), the intercept ``b`` unpenalized; on
    the exact or the low-rank path as :class:`SVC`, except that ``solver="auto"`` takes the
    exact path up to :data:`SVR_EXACT_MAX_ROWS` rows (the low-rank path reaches SVR's R² to
    0.01 sooner than SVC's accuracy), and the low-rank path for ``kernel="linear"`` from
    :data:`SVR_LINEAR_FINITE_RANK_ROWS` rows a feature (SVC's: :data:`FINITE_RANK_ROWS`).

    Parameters
    ----------
    kernel, degree, gamma, coef0, tol, C, max_iter, rank, solver, region_rows, region_overlap,
    random_state, device, dtype, memory_budget, verbose
        As in :class:`SVC`.
    epsilon : float, default 0.1
        Half-width of the tube in which errors cost nothing.

    Attributes
    ----------
    support_ : array of shape (n_SV,)
        The rows with ``αᵢ ≠ 0`` (outside the tube's flat part), or the landmarks (low rank).
    support_vectors_ : array or sparse matrix of shape (n_SV, n_features)
        As in :class:`SVC`: sparse (CSR) for a fit of sparse rows with few nonzeros.
    n_support_ : ndarray of shape (1,)
    dual_coef_ : array of shape (1, n_SV)
        ``αᵢ``: ``f(x) = Σ dual_coef_ k(x, support_vectors_) + intercept_``.
    intercept_ : array of shape (1,)
    solver_ : {"exact", "lowrank", "partition"}
    rank_ : int or None
    rank_path_ : list of dict or None
        As in :class:`SVC`; a stage's ``changed`` is ``‖Δf‖² / ‖y − ȳ‖²`` of the training
        predictions and targets (the share of the targets' variance that moved, on R²'s
        scale; 0 for constant targets), and ``gained`` (from the second stage) the training
        R² it added, ``(‖y − f_old‖² − ‖y − f_new‖²) / ‖y − ȳ‖²``: above
        :data:`SVR_AUTO_RANK_GAIN` at the last stage, the problem is solved exactly on every
        row where it may (``refined``).
    n_iter_, converged_, fit_timings_, region_centers_, region_starts_, region_intercept_,
    region_overlap_
        As in :class:`SVC`.
    """

    _parameter_constraints = constraints(
        "kernel", "degree", "gamma", "coef0", "tol", "C", "random_state", "device", "dtype",
        "memory_budget", "verbose", epsilon=[Interval(Real, 0, None, closed="left")],
        max_iter=[Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})],
        rank=[StrOptions({"auto"}), POSITIVE_INT, None],
        solver=[StrOptions({"auto", "exact", "lowrank", "partition"})],
        region_rows=[StrOptions({"auto"}), Interval(Integral, 2, None, closed="left")],
        region_overlap=[StrOptions({"auto"}), Interval(Real, 0, None, closed="left")])

    def __init__(self, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=1e-3, C=1.0,
                 epsilon=0.1, max_iter=-1, *, rank="auto", solver="auto", region_rows="auto",
                 region_overlap="auto", random_state=None, device="auto", dtype=None,
                 memory_budget=None, verbose=0):
        store_parameters(self, locals())

    def _losses(self, continuation=False, targets=None):
        """The ε-insensitive loss with Huber corners, or the Huber loss for ε = 0. The
        continuation of a stalled iteration goes through corners of half-width ε/2 first (the
        widest within the tube; diabetes at C = 100, targets in the hundreds, stalled at ε/5
        and converged from there), and before them, given the ``targets``, through Huber
        losses whose quadratic pieces start at the targets' standard deviation σ and narrow
        tenfold a stage while wider than those corners (:data:`SVR_WIDE_STAGES` at most):
        where the residuals are far wider than ε every row sits on a linear piece of the
        corners and the Newton steps have no curvature to follow (targets of spread 100, ε =
        0.01, C = 10, 2,500 rows: the exact path stalled and its fallback took 2.7 s against
        scikit-learn's 0.1 s)."""
        eps = float(self.epsilon)
        if eps == 0.0:
            corners = [get_loss("huber", task="regression", delta=HINGE_SMOOTHING)]
        else:
            widths = (eps / 2, SVR_CORNER * eps) if continuation else (SVR_CORNER * eps,)
            corners = [get_loss("huber_epsilon_insensitive", task="regression", epsilon=eps,
                                delta=min(HINGE_SMOOTHING, w)) for w in widths]
        if not continuation or targets is None:
            return corners
        xp = get_namespace(targets)
        (sigma,) = fetch_scalars(xp.std(targets), xp=xp)
        wide = []  # (down to twice the final corner's half-width)
        while sigma > 2 * corners[-1].params["delta"] and len(wide) < SVR_WIDE_STAGES:
            wide.append(get_loss("huber", task="regression", delta=sigma))
            sigma /= 10.0
        return wide + corners

    def _exact_max_rows(self):
        small = self.C <= SVR_EXACT_SMALL_C and not self._dask_fit  # (Dask: its partitions)
        return ("REFINE_WHOLE_MAX_ROWS", REFINE_WHOLE_MAX_ROWS) if small else \
            ("SVR_EXACT_MAX_ROWS", SVR_EXACT_MAX_ROWS)

    def _finite_rank_rows(self):
        if isinstance(self.kernel_, Linear):
            return "SVR_LINEAR_FINITE_RANK_ROWS", SVR_LINEAR_FINITE_RANK_ROWS
        return super()._finite_rank_rows()

    def _rank_change_limit(self):
        return "SVR_AUTO_RANK_CHANGE", SVR_AUTO_RANK_CHANGE

    def _float32_rows(self):
        return SVR_FLOAT32_ROWS

    def _narrowings(self):
        return SVR_NARROWINGS

    def _corners_cost(self, res, loss, y, sample_weight):
        xp = self._ctx.xp
        c = loss.curvature(y - res.info["margins"], xp=xp) > 0
        inside = xp.sum(xp.astype(c, xp.float64) if sample_weight is None else
                        xp.where(c, sample_weight, 0.0))
        (inside,) = fetch_scalars(inside, xp=xp)
        reach = float(self.C) * loss.params["delta"] / 4 * float(inside)
        return reach > SVR_CORNER_GAP * abs(res.objective_history[-1])

    def _lowrank_solve(self, P, y, sample_weight, B, max_iter, start=None, *, margins=None):
        xp = self._ctx.xp
        m, r = P.shape
        B = B + _RIDGE * xp.eye(r, dtype=B.dtype, device=self._ctx.native_device)
        # the targets less their median b₀ (the intercept, the last coefficient, shifted
        # back): z = 0 is then the best constant model, whose gradient scales the stopping
        # rule ``‖∇F‖ <= tol ‖∇F(0)‖``, and the intercept's penalty ½ ε (b − b₀)² is centred
        # on b₀ (the exact path's fallback too), so targets shifted by c fit as the centred
        # ones, b shifted by c. From b = 0, targets 50 ± 1 (fuzz seed 1111, trial 22: 12,000
        # rows, C = 100, ε = 1, ``gamma=0.003``) put every row far outside the tube at z = 0,
        # and a point twice the minimum's norm with every row inside the tube passed the test
        # (R² 0.26 against scikit-learn's 0.91; now 0.93). The test is as strict as for the
        # centred targets: friedman1 (targets 14 ± 5) at 20,000 rows 0.93 → 1.24 s, R² 0.9414 →
        # 0.9415; friedman2 0.13 → 0.084 s
        b0 = self._intercept_anchor(y, sample_weight)
        if start is not None and b0:
            start = xp.concat([start[:-1], start[-1:] - b0])
        t = y - b0 if b0 else y
        opts = NewtonOptions(tol=float(self.tol), max_iter=max_iter,
                             balance_tol=SVR_BALANCE_TOL,
                             min_iter=int(start is not None), crawl_steps=SVR_CRAWL_STEPS,
                             crawl_step=SVR_CRAWL_STEP,
                             presolve=_lowrank_presolve(m, r, start is not None))
        kw = dict(C=float(self.C), B=B, task="regression", sample_weight=sample_weight,
                  verbose=self.verbose, xp=xp)
        res = semismooth_newton(P, t, self._losses(), z0=start, options=opts,
                                margins0=None if margins is None or not b0 else margins - b0,
                                **kw)
        if res.info["stalled"]:  # (SVR_CRAWL_STEPS: wide Huber pieces first, from there)
            self._log.info("the low-rank Newton steps crawled (%d steps of at most %g): "
                           "solved again from Huber losses as wide as the targets' spread",
                           SVR_CRAWL_STEPS, SVR_CRAWL_STEP)
            more = semismooth_newton(
                P, t, self._losses(continuation=True, targets=t), z0=res.coef,
                margins0=res.info["margins"], options=dataclasses.replace(
                    opts, max_iter=max(1, max_iter - res.n_iter), min_iter=1, presolve=None,
                    crawl_steps=None), **kw)
            more.n_iter += res.n_iter
            res = more
        if b0:
            coef = xp.astype(res.coef, xp.float64)
            res.coef = xp.concat([coef[:-1], coef[-1:] + b0])
            if res.info.get("margins") is not None:
                res.info["margins"] = res.info["margins"] + b0
        return res

    def _intercept_anchor(self, y, sample_weight):
        """The median of the targets of positive weight (the best constant model of the
        ε-insensitive loss, near enough): the low-rank path's origin (:meth:`_lowrank_solve`)
        and the centre of its intercept penalty."""
        xp = self._ctx.xp
        t = y if sample_weight is None else xp.take(y, xp.nonzero(sample_weight > 0)[0])
        if int(t.shape[0]) == 0:
            return 0.0
        t = xp.sort(xp.astype(t, xp.float64))
        n = int(t.shape[0])
        (mid,) = fetch_scalars((t[(n - 1) // 2] + t[n // 2]) / 2, xp=xp)
        return float(mid)

    def _output_change(self, old, new, problems):
        """``(changed, gained)`` between two sets of training predictions, on the rows of
        :meth:`_training_outputs`: ``‖Δf‖² / ‖y − ȳ‖²`` (the share of the targets' variance
        that changed, on R²'s scale) and the training R² gained, ``(‖y − f_old‖² − ‖y −
        f_new‖²) / ‖y − ȳ‖²`` (:data:`SVR_AUTO_RANK_GAIN`); both 0 for constant targets,
        which leave nothing to fit. Not on the predictions' own variance: where they are
        nearly constant that ratio is rounding over rounding (y ≡ 2 grew to 2,000 landmarks,
        0.95 and 0.83 "changed")."""
        xp = self._ctx.xp
        y = problems[0][1][::_sample_step(int(problems[0][1].shape[0]))]
        d, before, after, v = fetch_scalars(
            xp.sum((new[:, 0] - old[:, 0]) ** 2), xp.sum((y - old[:, 0]) ** 2),
            xp.sum((y - new[:, 0]) ** 2), xp.sum((y - xp.mean(y)) ** 2), xp=xp)
        if float(v) == 0.0:
            return 0.0, 0.0
        return float(d) / float(v), (float(before) - float(after)) / float(v)

    def _after_fit(self, shared):
        super()._after_fit(shared)
        if self.solver_ == "lowrank":
            self.dual_coef_ = self._ctx.xp.reshape(self.pair_coef_[:, 0], (1, -1))


__all__ = ["FLOAT32_RBF_ROUNDING", "HINGE_SMOOTHING", "LOCAL_KERNEL_LEVEL", "LOCAL_REFINE_MAX_ROWS",
           "PARTITION_ROWS", "SVC", "SVR", "SVR_CORNER"]
