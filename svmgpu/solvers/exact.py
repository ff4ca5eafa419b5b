"""The exact kernel SVM in the kernel's own coordinates: primal Newton with an unpenalized
intercept (Chapelle 2007).

O. Chapelle, "Training a support vector machine in the primal", Neural Computation 19(5), 2007,
Sections 3-4: with ``f = K α + b``, the primal objective

    F(α, b) = ½ αᵀ K α + C Σᵢ sᵢ ψ(rᵢ),   rᵢ = 1 − yᵢ fᵢ (classification),  rᵢ = yᵢ − fᵢ (regression)

for a convex piecewise-quadratic loss ψ (the Huber hinge that stands in for the hinge, the
squared hinge, ...) is minimized by Newton steps that solve a linear system over the rows in the
loss's quadratic pieces only. On the current pieces ψ'(r) = aᵢ + cᵢ r (cᵢ = ψ''); stationarity
``α = C s σ ψ'(r)`` (σᵢ = yᵢ for classification, 1 for regression) and ``Σ α = 0`` (the
intercept) give, with Q the rows of positive curvature and F the others:

    α_F = C s_F σ_F a_F                                  (bounded or zero: fixed by their piece)
    (K_QQ + diag(1 / (C s_Q c_Q))) α_Q + b 1 = σ_Q (a_Q / c_Q + t_Q) − K_QF α_F,   1ᵀα_Q = −1ᵀα_F

(t = 1 for classification, y for regression): an LS-SVM system of size |Q| + 1, Chapelle's
(12) with the bias row. Its solution is the semi-smooth Newton step; a backtracking line search
on F with Armijo's sufficient decrease (:data:`_ARMIJO`) keeps every step a descent and breaks
the cycles of full steps that swap rows between pieces, and the iteration ends, typically in a
handful of steps, when the pieces stop changing. With the Huber hinge of a small corner, Q
holds the points near the margin only, so a step costs |Q|³/3 for the factorization and one
m × m product ``K d``.

The start: α = 0 and b = 0 by default (the first step's system holds only the rows whose margin
falls in a quadratic piece), or the LS-SVM solution (every row on one quadratic piece), which a
continuation from wide corners starts from, or the corners (every row on the Huber hinge's
corner), where a presolve says that most rows end there (``corner_start``).
"""

from __future__ import annotations

import logging
import math
import time

from svmgpu._log import fields, get_logger
from svmgpu.backend import (
    LinAlgError,
    Workspace,
    add_diagonal,
    cho_factor,
    cho_solve,
    fetch_scalars,
    fetch_vector,
    is_cupy,
    is_numpy,
    matmul,
    matvec_in_dtype,
    product_in_float64,
    set_rows,
    small_blas,
    solve_triangular,
    symmetric_matvec,
    take_block,
    take_block_times,
    take_blocks,
    take_entries,
    vecdot,
)
from svmgpu.kernels import KernelRows
from svmgpu.losses import get_loss
from svmgpu.solvers._linesearch import armijo
from svmgpu.solvers._result import SolverResult

_log = get_logger("exact")

#: Rows above which the zero start is replaced by the solution on every
#: :data:`_PRESOLVE_STRIDE`-th row (recursively, down to this size): its support vectors sit
#: where the full problem's do, so the full problem's first active sets are near their final
#: size instead of growing through a few steps with thousands of rows (on a 9,417-row Covtype
#: region, C = 32, γ = 32: 3.6 s instead of 10.5 s of solve; bench/README.md).
PRESOLVE_MIN_ROWS = 2000
_PRESOLVE_STRIDE = 4

#: Rows from which the presolve takes every second row instead (its own presolve every fourth
#: again, below this size): the full problem then starts nearer its pieces and takes fewer of
#: its costly steps (|Q| ≈ 2,400 at 20,000 rows). Second fits, alternating (session 19): at
#: 20,000 rows make_classification 2.62–2.68 → 2.13–2.15 s, ijcnn1's first 20,000 rows
#: 1.25–1.88 → 0.89–1.05 s, Covtype (class 2 against the rest) 5.1 → 3.0–4.4 s; at 15,000
#: make_classification 1.88–2.24 → 1.68–1.87 s, SVR on friedman1 82 → 71 and friedman3 40 →
#: 31 Newton steps (times within the machine's noise); at 12,500 and 10,000 rows it was slower
#: (1.06 → 1.34 s, 0.56–0.66 → 0.70–0.75 s).
PRESOLVE_HALF_ROWS = 15_000


#: The presolve's share of rows in quadratic pieces (the Huber hinge's corners: margins within
#: δ of 1) at its solution from which ``corner_start`` starts the full problem from the
#: corners (every row on the loss's piece at the kink, one factorization of the whole kernel
#: matrix) instead of from the presolve's solution. Noisy labels at a large C make most rows
#: free support vectors on the margin (the model interpolates them); from the presolve's
#: scattered solution the Newton steps then move thousands of rows between pieces, halved to
#: 1/8–1/4 for twenty and more steps, while the corners' system is nearly the solution's.
#: Session 32, ``make_classification`` (4,000 rows, 50 features, 30 % of the labels flipped,
#: C = 10; the presolve's last system held 92 % of its rows, the solution's 85 %): 41 Newton
#: steps (20 of them the presolve's) in 5.9–6.7 s → 23 steps (3 after the corners) in
#: 2.4–2.6 s, 3,396 support vectors against 3,399 and 72.0 % test accuracy either way
#: (scikit-learn: 1.67 s, 71.5 %).
#: Below the share the corners are far from the solution: a problem whose solution holds 45 %
#: of its rows in the corners (11,000 rows, C = 10, 30 % flipped) took 26 steps of 1/8–1/2
#: from the corners.
#: 0.8 until session 62. The refinements' probes of 0.77–0.80 restarted from the presolve's
#: solution and crawled there (the first ten steps 2⁻⁷–2⁻⁴, 30–44 steps on systems of
#: 4,000–5,800 rows), where from the corners a pair of more than
#: :data:`svmgpu.estimators.svc.SMO_SYSTEM_ROWS` rows goes to SMO at once and a smaller one
#: took 6 steps against 19. Medium fuzz trials, one fit each, old → new, the same scores: seed
#: 7373's trial 10 (three classes of 11,000 rows, 30 features, C = 100; probes 0.775, 0.791)
#: 28.6 → 15.1 s, its trial 11 (C = 10; 0.790) 12.0 → 7.4 s, seed 5050's trial 14 (0.793)
#: 18.4 → 9.8 s, seed 2020's trial 16 (0.768–0.800) 33.9 → 26.3 s; seed 3838's trial 16 (one
#: pair of ten at 0.792) 6.8 → 8.2 s, and 10.4 → 10.9 s logged (that pair 0.5 → 0.3 s: the
#: VM's spread), its trial 0 (0.70–0.73) unchanged. No probe of the other classification
#: fits of 6,000 rows or more (71 of mixed seeds 77, 5353, 4848, 808, 7272, 6161 and 7171;
#: 60 of medium seeds 505, 1313, 2525, 4747 and 21; probes 0.19–0.996) fell in 0.75–0.8.
CORNER_START_SHARE = 0.75
#: From a given start (``corner_start``, more than :data:`PRESOLVE_MIN_ROWS` rows), the first
#: this many Newton steps each halved to at most :data:`_DAMPED_STEP` suggest that regime: the
#: presolve is then solved as a probe, and the problem restarts from the corners where its
#: last system holds :data:`CORNER_START_SHARE` of its rows, else from the presolve's
#: solution (the exact path's own start either way; from the given start where the presolve
#: stalled), the probe's steps counted in ``n_presolve_iter``. SVC's refinement from a
#: low-rank model (11,000 rows, 50 features, 30 % of the labels flipped, C = 10): steps of
#: 1/8, 1/8, 1/16, ...; 47.5 s from the low-rank start, 25.0 s from the presolve's corners.
#: Below the share the given start had gone on until session 46, and its solution was thrown
#: away: medium fuzz seed 1515's trial 15 (14,000 rows of 5 features, three classes, C = 100,
#: balanced class weights; a pair of 9,316 candidates whose first steps were 2⁻¹⁰, 2⁻⁷ and
#: 2⁻⁸) took 79 steps from the given start, Newton systems of up to 4,805 rows and 6.0 s, and
#: 52 from the presolve's solution, 2.3 s (the fit 9.0 → 4.2–4.7 s, scikit-learn 3.7 s).
#: Over 18 probed trials of five seeds the same predictions (99.95–100 %), 909's trial 25
#: 20.4 → 15.9 s, 1111's trial 4 17.6 → 13.2 s, 1515's trial 3 5.8 → 5.1 s, 1313's trial 19
#: 16.7 → 15.3 s, the others within ±10 %. A start whose first steps are 1/4 and 1/2 (20
#: features, C = 1) is not probed: there the presolve took 3.1 s against 2.3 s from the
#: low-rank start.
_DAMPED_STEPS = 3
_DAMPED_STEP = 0.25

#: The loss whose minimum starts a classification problem near the hard margin (``C ·
#: max(s) · k`` above :data:`HARD_MARGIN_FIRST_C`, k = max(1, max Kᵢᵢ): ``(K, C)`` is ``(K /
#: k, C k)``) from α = 0, ``exact_newton(corner_start=True)``: its ψ' is continuous, so a
#: row past the margin takes α in proportion to its violation instead of the bound C s, some 10⁵ times the
#: α ~ C / k of the solution, where the Huber hinge's steps were cut to 1/16 and below while
#: the support set grew a few rows a step. The 'poly' kernel at gamma=3 on 40 standardized
#: features, C = 0.05 (fuzz seed 77, trial 5, 6,000 rows): 7 steps (9 of them the presolve's)
#: and 5 of the Huber hinge, 1.6 s, against 146 (8) and 11.5 s from the presolve's solution;
#: the same minimum. On 600 such rows 5 + 2 steps against 239 from α = 0.
HARD_MARGIN_FIRST = "squared_hinge"
#: Rows above which the squared hinge's presolve (every fourth row) is solved first, as a
#: probe (and its solution starts the squared hinge's problem, as the presolve does above
#: :data:`PRESOLVE_MIN_ROWS`): where at least :data:`HARD_MARGIN_MAX_SHARE` of its rows lie
#: past the margin beyond the Huber hinge's corner (r > δ) at its minimum, the squared hinge
#: does not start the problem. It pays near the hard margin, where its violators sit a hair
#: past the margin (in the Huber hinge's corners, where that loss's steps crawl); where many
#: rows violate the margin by more, the labels are noisy for C: the Huber hinge puts those
#: rows at the bound, out of its Newton systems, while the squared hinge's systems hold them
#: and its minimum saves the Huber hinge a few steps of small systems. Session 45, each
#: problem captured and solved alone (the squared hinge first / the Huber hinge alone / the
#: probe's choice, seconds): a fuzz case of seed 1010 (trial 27: six classes of 1,000 rows,
#: 3 features, 10 % of the labels flipped, ``gamma=0.003``, C = 100), its pairs' probes
#: 0.76–0.81 past δ (0.06–0.08 in the corners), 0.09–0.17 / 0.012–0.017 / 0.023–0.034, the
#: fit 2.9 → 0.51 s, the same model (scikit-learn 0.58 s); fuzz seed 77's trial 9 (regions
#: of 1,385 and 1,818 rows at ``gamma=3``, C = 100) 0.43 and 0.63 past δ, 0.17 / 0.11 / 0.13
#: and 0.41 / 0.17 / 0.18. Kept, at 0.00–0.09 past δ: ``make_classification`` 5,000 rows at
#: C = 100 and 1,000 (0.71 / 1.08 / 0.73, 0.48 / 1.75 / 0.48), 1,500 rows at C = 1,000 (0.099
#: / 0.123 / 0.063: from the probe's solution instead of α = 0), fuzz seed 77's trial 5
#: (0.58 / 2.47 / 0.58), its trial 21 (the refinement's problems of 6,444 and 6,844 rows,
#: 78–85 % of the probe's rows violating the margin, all within δ: 1.17 / 3.43 / 1.28),
#: its trial 28 (regions of 1,116 and 1,313 rows, every row violating within δ: 0.02–0.03 /
#: 0.12–0.15 / 0.02–0.03) and trial 9's regions of 1,017 and 1,116 rows (the Huber hinge
#: alone stalled on the first). Not below: a problem that small pays little for the squared
#: hinge's systems, and the probe's rows would be too few to say.
HARD_MARGIN_PROBE_ROWS = 1000
HARD_MARGIN_MAX_SHARE = 0.25
#: ``C · max(s) · k`` above which :data:`HARD_MARGIN_FIRST` starts the problem (k = max(1,
#: max Kᵢᵢ)). RBF kernels count too (session 39, medians of three or five fits, the same
#: accuracies): ``make_classification`` 5,000 rows at C = 100 1.14 → 0.73 s, C = 300
#: 1.52 → 0.89 s, C = 1,000 1.96 → 0.60 s; digits at C = 100 207 → 136 ms, C = 10⁴
#: 664 → 165 ms; breast cancer at C = 1,000 11.2 → 6.8 ms. Below, the squared hinge's solve
#: costs more than it saves: with the bound at 5, C = 10 took 0.51 → 0.88 s (5,000 rows) and
#: 0.86 → 1.80 s (10,000 rows), C = 30 0.72 → 0.88 s.
HARD_MARGIN_FIRST_C = 50.0

#: Rows from which SVR's corner probe reads its share on every fourth row first
#: (:func:`_svr_corner_probe`).
SVR_PROBE_ROWS = 800
#: The share of SVR's rows consistent in the corners from which its corner probe takes the
#: corner start on fewer than :data:`SVR_PROBE_ROWS` rows (:data:`CORNER_START_SHARE` from
#: them). There the probe has factored the whole problem already, and where the first steps
#: from α = 0 were damped its corners start closer than those steps go on from. Session 60,
#: fits alternating in one process (medians of 3 rounds, 0.8 → 0.4; targets standardized,
#: ε = 0.1): ``make_regression`` (10 features, noise 5) at 200 rows, C = 1 / 10 / 100: 6.0 →
#: 4.0, 31.2 → 5.4, 40.3 → 26.8 ms; at 400 rows 11.2 → 6.5, 24.5 → 12.1, 113.6 → 19.0 ms;
#: friedman1 at 400 rows, C = 10 / 100: 36.4 → 11.1, 194.7 → 23.0 ms (5,847 Newton and SMO
#: steps against 23); 36 synthetic fits at 400 and 600 rows (ε 0.01–1, targets of spread
#: 6–800, C 0.05–100) took the same steps either way. From 800 rows the threshold
#: also gates the whole problem's factorization, and at C = 1 0.4 lost there (friedman1 at
#: 1,500 rows 64 → 102 ms, where the whole probe ran and was not taken).
SVR_SMALL_CORNER_SHARE = 0.4


def _presolve_stride(m):
    """The presolve's stride on m rows: 2 from :data:`PRESOLVE_HALF_ROWS`, else
    :data:`_PRESOLVE_STRIDE`."""
    return 2 if m >= PRESOLVE_HALF_ROWS else _PRESOLVE_STRIDE

#: Evaluations of the intercept's derivative at most (:func:`_intercept_search`).
_MAX_INTERCEPT_STEPS = 200

#: A float32 K's iteration ends (not converged, ``info["rounding"]``) after this many steps in
#: a row that keep the active set and lower F by less than ``_FLAT_DECREASE`` (relative):
#: Covtype regions at γ = 2 (4,000–7,800 rows, C = 32) otherwise ran to max_iter = 1,000 with
#: F rising by 4e-8 a step and the residual held above tol by float32 products. A float64 K's
#: ends so too (``info["rounding"]``): converged where the steps were full (each solved the
#: same pieces' system again, and its rounding held the residual above tol), else stalled
#: (``info["stalled"]``; :data:`_CRAWL_STEPS` steps below ``_ARMIJO_MIN_STEP`` stall it as
#: before). A fuzz case (SVR, the
#: linear kernel on 6,000 rows of 10 features, noise-free targets, C = 100, ε = 0.1, at SVR's
#: narrowest corners δ = 0.0002: curvature C / (2δ) = 2.5e5 on 11 rows of a rank-10 K_QQ)
#: repeated one full step at the residual 0.0031 (tol's 0.0025) for 1,000 steps, 0.42 s of a
#: 0.43 s fit, and warned that it had not converged; scikit-learn 0.024 s, the same R².
_FLAT_STEPS = 5
_FLAT_DECREASE = 1e-9
#: A float32 K's Newton steps end (``info["rounding"]``, not converged: the caller goes on
#: from there on the float64 matrix) where its last ``_FLAT_WINDOW`` accepted steps lowered F
#: by at most ``_FLAT_WINDOW_DECREASE`` of it in all, whatever its active set did: the
#: float32 products' own rounding (:data:`_FLAT_STEPS` asks the same active set, and rows
#: swapping at the kink by a row or two a step reset it). Mixed fuzz seed 77's trial 9
#: (12,000 rows of 3 features, C = 100, ``gamma=3``, sample and class weights; the refinement's
#: second round, 7,187 rows) crept 30 steps of 1e-10 to 1e-7 of F each (about 1 s of 31 ms
#: steps, the active set 1,793–1,797 rows) before the float64 matrix's 3 steps converged.
_FLAT_WINDOW = 8
_FLAT_WINDOW_DECREASE = 1e-7

#: The largest C that scales the stopping rule's tolerance (``max |α − C s σ ψ'(r)| ≤ tol ·
#: min(C, this) · max(s)``): above it, in the hard-margin regime, α is far below C at most
#: support vectors, and a tolerance relative to C let α of non-support rows reach tol · C.
#: Separable data, 600 rows: at C = 10⁸ relative to C the fit passed with an objective 56 %
#: above the optimum and 86.8 % test accuracy for 92.2 %. Up to 100 the rule is unchanged
#: (tuned ijcnn1 and Covtype's regions at C = 32: an absolute tolerance cost 16–20 % more time
#: for the same accuracy).
#: On the kernel's own scale (session 39): ``(K, C)`` is the problem ``(K / k, C k)`` (α times
#: k), k = max(1, max Kᵢᵢ), so the rule is ``tol · min(C, this / k) · max(s)``. The 'poly'
#: kernel at gamma=3 on 40 standardized features (k ~ 10⁷, C = 0.05, α ~ 10⁻⁷): relative to C
#: the corners' and the LS-SVM's starts passed it at once, their objective 5.3 % above the
#: minimum; on the kernel's scale they reach it in 7–8 steps. RBF (k = 1): unchanged.
_TOL_SCALE_MAX = 100.0

#: The line search's sufficient decrease (Armijo's rule), up to ``C · max(s)`` =
#: :data:`_ARMIJO_MAX_C`: a step ``t`` is taken when F falls by at least ``_ARMIJO · t ·
#: |F'(0)|`` along the Newton direction. A full step whose rows stay on their pieces falls by
#: ``|F'(0)| / 2`` (the minimizer of the quadratic model), so any value below ½ keeps the
#: full steps near the solution (the usual globalization of semi-smooth Newton methods,
#: σ ∈ (0, ½)). Until session 24 any decrease was taken (σ = 0), and full steps could cycle:
#: in the refinement of make_classification at 20,000 rows (8,479 candidates), steps 4–9 of
#: 13 each swapped about 250 rows between pieces and back, F falling by 0.2–5 % of |F'(0)|,
#: until a step happened to be halved. Newton steps at C = 1 (σ = 0 / 0.1 / 0.25 / 0.4; the
#: same test predictions): digits' 45 pairs 560 / 467 / 385 / 362, make_classification
#: 5,000 rows 27 / 19 / 19 / 18, 10,000 rows 38 / 29 / 27 / 24 and the refinement at 20,000
#: 13 / 8 / 9 / 8, friedman1 (SVR) 2,000 rows 31 / 26 / 24 / 22 and 10,000 rows 86 / 75 / 59 /
#: 55, the image-like stand-in's refinement (45 pairs) 579 / – / 466 / 442 (15.7 / – / 13.3 /
#: 11.7 s), tuned ijcnn1's regions (C = 32) 1,775 / – / 1,452 / 1,432. All of digits at C =
#: 10 / 30 / 100: 927 → 565, 1,015 → 627, 1,079 → 1,177 (its 1,347 training rows at C = 100:
#: 1,065 → 633).
_ARMIJO = 0.4
#: Above this ``C · max(s)`` the line search takes any decrease (σ = 0): near the hard
#: margin a row entering a corner adds curvature C / (2δ), the quadratic model holds for
#: short steps only, and the sufficient decrease kept the steps short. Separable data (600
#: rows) at C = 10⁴ / 10⁶ / 10⁸: 129 / 314 / 790 steps with σ = 0, 140 / 388 / over 1,000
#: with σ = 0.4; all of digits at C = 1,000 / 10⁴: 1,563 / 3,012 against 2,178 / 4,224 (its
#: 1,347 training rows at C = 1,000: 1,554 against 673; the steps vary that much with the
#: rows there). The bound is the stopping rule's (:data:`_TOL_SCALE_MAX`).
_ARMIJO_MAX_C = _TOL_SCALE_MAX
#: The step below which the line search takes the longest step that lowered F at all, where
#: none lowered it by the sufficient decrease (rounding near the solution, a float32 K).
_ARMIJO_MIN_STEP = 2.0 ** -10

#: Steps in a row shorter than :data:`_ARMIJO_MIN_STEP` that lower F by at most
#: :data:`_FLAT_DECREASE` of it, after which the iteration counts as stalled
#: (``info["stalled"]``: the caller's continuation from wider corners takes over). There the
#: Newton direction does not describe F (rows at the corners' knots, none inside a quadratic
#: piece): a one-vs-one pair of 773 random labels (747 against 26 rows, C = 0.1) crawled at
#: F = 6.4285675 by steps of 2⁻²³ for its 1,000 steps (1.6 s; scikit-learn fits it in 14 ms),
#: F falling by 4e-13 of itself a step, where the continuation converges in a few dozen.
#: Short steps of a stiff problem lower F by far more (SVR's narrowed corners at C = 100:
#: 1e-6 to 1e-3 a step), and above :data:`_ARMIJO_MAX_C`, where any decrease is taken near
#: the hard margin, the rule is off (at C = 10⁶ the continuation ended 57 % above the
#: minimum that the short steps reach).
_CRAWL_STEPS = 5

#: Steps in a row from a given start with no row in a quadratic piece of ψ (an empty Newton
#: system: α is set by the pieces alone and each step a line search between them), after
#: which the iteration counts as stalled (``info["stalled"]``: the caller solves again from
#: its own start, :meth:`svmgpu.SVC._exact_solve`). Mixed fuzz seed 2121's trial 21 (six
#: classes of 12,000 rows, 40 features, the 'poly' kernel at ``gamma=3``, C = 1: the
#: hard-margin regime at the kernel's scale, about 10⁶): the refinement's pairs, from the
#: low-rank model's start (its landmarks holding little of the kernel), took hundreds of such
#: steps of 2⁻¹⁰ to 1/2 each, past the fuzz sweep's 283 s; from their own start (the squared
#: hinge first, :data:`HARD_MARGIN_FIRST`) the fit took 18 s.
_EMPTY_STEPS = 10

#: A step of at most this length counts towards ``exact_newton``'s ``short_steps`` stall: the
#: Newton direction then describes F over a small part of the step only (a fuzz case, session
#: 38: SVR on 600 rows of 200 features, targets of spread 100, ε = 0.01, C = 100; from α = 0,
#: with corners 0.002 wide, 2 of the 600 rows in a quadratic piece and steps of 2⁻¹⁰ to 2⁻⁴
#: lowering F by 0.01–5 % each, for 1,000 steps, 1.3 s, unconverged, R² 0.6464 against
#: scikit-learn's 0.6569; stalled after ten, SVR's continuation from wide Huber losses
#: converged in 141 steps in all, 0.26 s, R² 0.6569). Only where ``C · max(s) · max Kᵢᵢ`` is
#: at most :data:`_ARMIJO_MAX_C`: beyond, in the hard-margin regime at the kernel's own scale
#: (the 'poly' kernel at ``gamma=3`` on 40 standardized features, C = 0.05, Kᵢᵢ ~ 10⁵), α
#: stays far below C, and the continuation's LS-SVM start passed the stopping rule (relative
#: to C) away from the minimum: F 0.00058 against 0.00017 and 91.6 % against scikit-learn's
#: 93.6 % on 600 rows; the short steps reach the minimum there (294 steps, 0.6 s).
#: 2⁻⁶ until session 51: mixed fuzz seed 2929's trial 28 (SVR, 6,000 rows of 200 features,
#: the 'poly' kernel at ``gamma="scale"``, C = 1; flagged slow) crawled by steps of 2⁻⁵ with
#: a 2⁻⁶ or 2⁻⁷ every few, so never ten in a row at 2⁻⁶: a presolve of about 170 steps and
#: about 160 more over systems of 4,000–4,700 rows, 30 s against scikit-learn's 2.0 s, R²
#: 0.4087 either; at 2⁻⁵ SMO takes over after ten (``SMO_MAX_ROWS``): 3.7 s. Mixed seeds
#: 2929, 2121 and 2222 (135 trials), medium 2828 (12) and nine earlier crawls and stalls
#: (seeds 202 t15 and t45, 101 t43, 909 t12, 1818 t3, 2121 t43, 606 t39, 2222 t38, 1616 t33):
#: the same scores, no other time changed beyond the VM's noise.
SHORT_STEP = 2.0 ** -5
#: A step of at most this many times :data:`SHORT_STEP` neither counts towards the
#: ``short_steps`` stall nor ends the run of short steps (:func:`_short_run`): crawls that
#: alternate steps of 2⁻⁵ and 2⁻⁴ had never stalled. Mixed fuzz seed 1818's trial 10 (SVR,
#: 12,000 rows of 200 features, the 'poly' kernel at ``gamma=0.003``, C = 1, ε = 0.01,
#: solved exactly on every row; scikit-learn 13.8 s): 55 steps over systems of about 3,500
#: rows, 40 of them alternating so, before SMO (converged in 12,675 iterations): 31 → 22 s,
#: the same R²; its trial 31 (SVC, 12,000 × 10, RBF at ``gamma=3``, C = 10) 27 → 20.5 s,
#: trial 1 9.4 → 7.9 s. Eleven mixed seeds (1818, 2929, 4848, 2121, 909, 606, 101, 2222, 3131,
#: 77, 1616; 538 fits) 411 → 404 s in all, and medium 3838's and 2020's first eight trials
#: 107 → 109 s: every score the same, no other trial's Newton steps changed (the times of
#: the others within this VM's spread, ±15 % a fit).
SHORT_KEEP = 2.0

#: A step of at most this length counts towards ``exact_newton``'s ``hard_short_steps`` stall
#: in the hard-margin regime (where ``short_steps`` is off: :data:`SHORT_STEP`). Steps of
#: 2⁻⁸–2⁻⁶ still converge in tens (SVR, 600 rows of 200 features, the 'linear' kernel, C = 1:
#: 0.09 s, where SMO's 48,000 iterations over three narrowings took 3.5 s); shorter ones
#: crawl for hundreds (mixed fuzz seed 2121's trial 43: 587 steps, 14.4 s; SMO 0.8 s).
HARD_SHORT_STEP = 2.0 ** -9

#: Steps of the line search's halving at most (a Newton step of a convex piecewise-quadratic
#: problem is accepted whole almost always).
_MAX_HALVINGS = 30

#: Where a caller passes ``max_system`` (its other method for large systems: SVC's SMO), the
#: iteration also ends as ``info["large"]`` once its first :data:`_DAMPED_STEPS` steps were
#: each at most :data:`DAMPED_SYSTEM_STEP` and the last one's system held at least this many
#: rows: a factorization of 4,000 rows costs 21 GFlop (about 0.2 s here), and damped first
#: steps say that many more follow (the rows change pieces by the thousand). Medium fuzz seed
#: 6262's trial 6 (11,000 rows of 5 features, RBF at ``gamma=1``, C = 1, 20 % of the labels
#: flipped, refined on every row; scikit-learn 1.7 s): steps of 1/4, 1/2, 1/4 on systems of
#: 1,250–4,951 rows, then ten more of up to 5,869 rows, 4.7 s of a 5.2 s fit; by SMO after
#: the third step 5.2 → 3.5 s, and 6.4–7.0 → 4.5–5.2 s in a slower phase of this VM
#: (scikit-learn 2.2 s), the same predictions. It fired in no other fit of 72 medium fuzz
#: trials (seeds 6262, 7373, 2020, 3838, 505, 4747), 44 mixed ones of 12,000 rows (seeds 77,
#: 5353, 4848, 808, 7272, 6161, 7171, 2121, 1818) or the benchmark's sets; the problems whose
#: systems of 4,000–5,000 rows made ``SMO_SYSTEM_ROWS`` = 4,000 slower (its notes: medium
#: seed 3434's trials 7 and 8) take full first steps.
DAMPED_SYSTEM_ROWS = 4000
DAMPED_SYSTEM_STEP = 0.5


def _objective(alpha_K_alpha, r, s, loss, C, *, xp):
    """F from ``αᵀKα`` and the residuals (``s`` None: unit weights)."""
    v = loss.value(r, xp=xp)
    return 0.5 * alpha_K_alpha + C * float(xp.sum(v if s is None else s * v))


def _intercept_search(Ka, t, sig, s, loss, C, *, xp, b0=0.0):
    """The intercept minimizing ``C Σ s ψ(t − σ (Kα + b))`` for fixed α.

    Its derivative ``g(b) = −C Σ s σ ψ'(r(b))`` is continuous, piecewise linear and
    non-decreasing (ψ convex, piecewise quadratic and C¹), with slope ``C Σ s σ² ψ''(r(b))``
    on each piece: Newton's iteration lands on the root from the root's piece, a doubling step
    crosses flat pieces, and a bracket with bisection guards the rest (a handful of
    evaluations where bisection alone took about 45 on digits' pairs)."""
    ss, ss2 = s * sig, s * sig * sig

    def slope(b):
        u = t - sig * (Ka + b)
        return fetch_scalars(-xp.sum(ss * loss.grad(u, xp=xp)),
                             xp.sum(ss2 * loss.curvature(u, xp=xp)), xp=xp)

    tol = 1e-13 * fetch_scalars(xp.sum(s), xp=xp)[0]
    lo, hi, jump = -math.inf, math.inf, 1.0
    b = b0
    for _ in range(_MAX_INTERCEPT_STEPS):
        g, h = slope(b)
        if abs(g) <= tol or not math.isfinite(b) or abs(b) > 1e300:
            return b
        if g < 0:
            lo = b
        else:
            hi = b
        if hi - lo <= 1e-15 * max(1.0, abs(b)):
            return b
        if h > 0:
            cand = b - g / h
        else:  # a flat piece: step outward, doubling
            cand = b + (jump if g < 0 else -jump)
            jump *= 2.0
        if not lo < cand < hi:
            cand = 0.5 * (lo + hi)
        b = cand
    return b


def exact_newton(K, y, loss, *, C, xp, task="classification", sample_weight=None, tol=1e-3,
                 max_iter=200, start=None, presolve="auto", groups=None, corner_start=False,
                 short_steps=None, corners_of=None, hard_short_steps=None, max_system=None,
                 space=None):
    """Minimize ``½ αᵀKα + C Σ sᵢ ψ(rᵢ)`` over ``α`` and an unpenalized intercept ``b``.

    Parameters
    ----------
    K : array of shape (m, m), or :class:`~svmgpu.kernels.KernelRows`
        The kernel matrix of the training rows (symmetric positive semi-definite). A float32
        K stays float32 (its products too: half their memory traffic); α, the margins and the
        Newton systems are float64 either way, and a full step that keeps the pieces ends the
        iteration once the residual is below √eps₃₂ (the products' rounding). A KernelRows
        computes the rows the steps read (the rows where α changes: its support and the rows
        near the margin) when they first read them; the iteration is the same.
    y : array of shape (m,)
        Labels in {−1, +1} (classification) or real targets (regression).
    loss : Loss
        A convex piecewise-quadratic loss of the registry (``loss.piecewise_quadratic``).
    C : float
        The loss weight.
    xp : namespace
    task : {"classification", "regression"}
    sample_weight : array of shape (m,), optional
        Non-negative weights ``sᵢ``; rows of weight 0 get ``αᵢ = 0``.
    tol : float
        Stop when ``max |α − C s σ ψ'(r)| ≤ tol · min(C, 100 / k) · max(s)``, k the larger of
        1 and K's largest diagonal entry (the stationarity of α on the kernel's scale;
        ``Σα = 0`` holds at every iterate; :data:`_TOL_SCALE_MAX`).
    max_iter : int
        Newton steps at most.
    start : None, "ls_svm", "corners" or tuple (alpha, b)
        The starting point: None is ``α = 0, b = 0`` (the first step puts every row on the
        piece its margin says); "ls_svm" the LS-SVM solution, every row on one quadratic piece
        (an m × m factorization, several times the cost of the zero start on thousands of
        rows, but the start a continuation needs); "corners" (classification) the Newton
        step's solution with every row on the loss's piece at the kink ``r = 0`` (the Huber
        hinge's corner: the LS-SVM of weights ``C s / (2δ)`` and targets ``y (1 + δ)``; an
        m × m factorization, in float32 for a float32 K); for the regression loss
        ``huber_epsilon_insensitive`` (no groups) every row in the corner of its residual's
        sign under the LS-SVM of the same weights (:func:`_svr_corners`: one factorization,
        two solves); a tuple ``(alpha, b)``, any point (the
        problem is unconstrained in α and b; ``Σ alpha = 0`` holds at its minimum, and after
        the first full step: a start that breaks it, such as ``C s y ψ'(r)`` at another
        model's residuals, is fine).
    presolve : bool or "auto"
        With ``start=None`` and more than :data:`PRESOLVE_MIN_ROWS` rows, start from the
        solution of the same problem on every fourth row (every second from
        :data:`PRESOLVE_HALF_ROWS`; solved the same way, recursively; α = 0 on the other
        rows). Only the start changes. "auto": True (it was for classification only until
        session 14). Measured (one process, alternating): make_classification 5,000
        rows 0.55 s either way, 20,000 rows 8.5 s against 10–14 s, a Covtype region 4.4 s
        against 9.1 s. Regression (SVR's defaults, 20,000 rows, session 14): friedman2 (noise
        0) 35.4 → 0.7 s and friedman3 62 → 19 s, where from α = 0 the steps of 1/256 to 1/2 let
        the pieces' system grow to 12,000 rows before it shrank to 1,100; friedman1 (96 % of the
        rows support vectors) 1.8 → 2.0 s.

    Returns
    -------
    SolverResult
        ``coef`` is α (shape (m,), float64, the decision function ``f = K α + b``);
        ``info["intercept"]`` is b, ``info["margins"]`` the decision values on the training
        rows, ``info["active"]`` |Q| per step, ``info["n_presolve_iter"]`` the steps of the
        presolves, ``info["stalled"]`` whether it stopped because
        no step along the Newton direction lowered F, or :data:`_CRAWL_STEPS` short steps in
        a row left it level (too few rows in quadratic pieces for the curvature to guide it:
        a wider smoothing, then the narrow one from its solution, helps; :class:`svmgpu.SVC`
        does that), ``info["rounding"]`` whether the
        iteration ended with F moving by rounding only (:data:`_FLAT_STEPS`): a float32 K's
        not converged (continuing from its solution with K in float64 ends it, as
        :class:`svmgpu.SVC` does), a float64 K's converged (full steps that kept the active
        set: the same system solved again).
    groups : array of shape (m,), optional
        Integers 0 … k − 1: k problems solved at once, each over its own rows with its own
        intercept, K holding their kernel matrices as diagonal blocks (zero between rows of
        different groups). Their Newton systems are one factorization and their steps one
        line search on the sum of their objectives, so that k small problems (one-vs-one
        pairs of a few dozen rows) cost the array calls of one; each problem's stopping rule
        is its own (``s`` scaled by its own ``max(s)``). No presolve. Then
        ``info["intercept"]`` is a list of the k intercepts and ``objective_history`` lists
        the k objectives at each iterate.
    corner_start : bool
        With the presolve (classification, a loss with curvature at its kink): start from
        "corners" where the presolve's last Newton system held at least
        :data:`CORNER_START_SHARE` of its rows (the presolve's own presolve likewise), else
        from the presolve's solution. From a given start (a tuple, more than
        :data:`PRESOLVE_MIN_ROWS` rows) whose first :data:`_DAMPED_STEPS` steps are each
        :data:`_DAMPED_STEP` or shorter, the presolve is solved as a probe (its steps counted
        in ``info["n_presolve_iter"]``) and the iteration restarts from "corners" where its
        share says so, else from the presolve's solution. The corners' whole K is computed (a
        :class:`~svmgpu.kernels.KernelRows` too) and copied once in its dtype for the
        factorization; ``info["corners"]`` says whether it was. Regression with
        ``huber_epsilon_insensitive`` (no groups): the presolve's share decides likewise
        (SVR's corners, :func:`_svr_corners`), and from α = 0 (a problem of at most
        :data:`PRESOLVE_MIN_ROWS` rows, the presolve's own) whose first
        :data:`_DAMPED_STEPS` steps are :data:`_DAMPED_STEP` or shorter the corner start is
        taken where it places :data:`CORNER_START_SHARE` of the rows consistently
        (:func:`_svr_corner_probe`); from α = 0 or the presolve's solution whose first
        :data:`_DAMPED_STEPS` steps are each :data:`_ARMIJO_MIN_STEP` (2⁻¹⁰) or shorter,
        whatever its share. Classification near the hard margin (``C · max(s) ·
        k`` above :data:`HARD_MARGIN_FIRST_C`, k = max(1, max Kᵢᵢ)) with ``start=None``:
        from the minimum of :data:`HARD_MARGIN_FIRST` (the squared hinge, with its presolve;
        its steps counted in ``info["n_presolve_iter"]``), unless its presolve (the probe,
        above :data:`HARD_MARGIN_PROBE_ROWS` rows) leaves :data:`HARD_MARGIN_MAX_SHARE` of
        its rows past the margin beyond the loss's corners, or its minimum leaves
        :data:`CORNER_START_SHARE` of the rows within the loss's quadratic pieces
        (:func:`_plateau`): then the presolve's start, as without it.
    corners_of : Loss, optional
        A narrowing's wider loss (``huber_epsilon_insensitive`` of the same ε, or ``huber``,
        with wider corners; its solution the ``start``): the first Newton step keeps the rows
        in its corners in this loss's corners of the same sign (:func:`_narrowed_corners`),
        where from the start's residuals most of them would leave the narrower corners (a
        fuzz case: 107 steps → 1).
    short_steps : int, optional
        With Armijo's sufficient decrease (C · max(s) at most :data:`_ARMIJO_MAX_C`): this
        many accepted steps in a row of at most :data:`SHORT_STEP` end the iteration as
        stalled (``info["stalled"]``), where the pieces' curvature describes F over too short
        a part of each step for Newton's method (a caller's continuation from wider losses
        converges there: :class:`svmgpu.SVR`). None: only :data:`_CRAWL_STEPS` steps that
        leave F level stall it. Not for the stages of a continuation, whose steps are short
        while they converge (the fuzz case of :data:`SHORT_STEP`: 26 and 33 steps, most of
        them short, at Huber widths 0.1 and 0.01), nor for the presolve, whose steps cost a
        sixteenth of the problem's and whose solution starts it nearer (a fuzz case, the
        'poly' kernel at ``gamma=3``, C = 0.05, 6,000 rows: the presolve's 375 short steps,
        then 67 in the problem, 14 s; with the presolve cut, the problem's own steps from
        α = 0 stalled too, and the continuation's LS-SVM start, 4.7 s, was not the
        minimum).
    hard_short_steps : int, optional
        ``short_steps`` where it does not apply (``C · max(s) · k`` above
        :data:`_ARMIJO_MAX_C`, k = max(1, max Kᵢᵢ): the hard-margin regime at the kernel's
        scale), counting steps of at most :data:`HARD_SHORT_STEP`, for a caller that solves a
        problem whose Newton iteration crawls there by another method
        (:func:`svmgpu.solvers.smo.smo`). None: no limit there. ``info["crawled"]`` says
        whether the short steps ended the iteration (``short_steps``, or these).
    max_system : int, optional
        A Newton system of more rows (the pieces' system of a step, or the whole K of an
        LS-SVM or corner start) is not factored: the iteration ends there as stalled, with
        ``info["large"]`` True, for a caller that solves such problems by another method
        (:class:`svmgpu.SVC`'s SMO: :data:`svmgpu.estimators.svc.SMO_SYSTEM_ROWS`, or
        :data:`~svmgpu.estimators.svc.SMO_SOFT_SYSTEM_ROWS` at a small C); so too
        where the first steps are damped on a system of :data:`DAMPED_SYSTEM_ROWS` rows or
        more (``info["damped_system"]``, its rows; None otherwise), and where the squared
        hinge's first solve (:data:`HARD_MARGIN_FIRST`) meets either. The presolve keeps its
        own systems. None: no limit.
    space : Workspace, optional
        The buffers of the Newton systems' large blocks (:class:`~svmgpu.backend.Workspace`,
        with ``reserve``), from a caller that solves problem after problem and keeps them
        between its calls: their pages are touched once for all (a refinement's one-vs-one
        pairs: :meth:`svmgpu.SVC._refine`), widened to this K's m² elements where it was made
        for fewer (:func:`newton_space`). Nothing returned lives in them. None: buffers of
        this call's own (a restart from a probe's start keeps its own either way).
    """
    with small_blas(K.shape[0], xp=xp):  # a small problem's products and factors: one thread
        return _exact_newton(K, y, loss, C=C, xp=xp, task=task, sample_weight=sample_weight,
                             tol=tol, max_iter=max_iter, start=start, presolve=presolve,
                             groups=groups, corner_start=corner_start, short_steps=short_steps,
                             corners_of=corners_of, hard_short_steps=hard_short_steps,
                             max_system=max_system, space=space)


def newton_space(m, *, xp):
    """The :class:`~svmgpu.backend.Workspace` of :func:`exact_newton`'s Newton systems on
    kernel matrices of up to m rows (``space``): each buffer's address space for m² elements
    reserved at once, blocks of fewer than :data:`_REUSED_BYTES` left to glibc's heap. A
    :class:`~svmgpu.kernels.KernelRows` of the same caller may keep its row store there too."""
    return Workspace(xp, most=m * m, least=_REUSED_BYTES, reserve=True)


def _plateau(first, y, loss, m, *, xp):
    """Whether the solution ``first`` of :data:`HARD_MARGIN_FIRST` (classification, labels
    ``y``) leaves at least :data:`CORNER_START_SHARE` of the rows in ``loss``'s quadratic
    pieces, on a problem of more than :data:`PRESOLVE_MIN_ROWS` rows: then it does not start
    ``loss``'s problem, whose first Newton system would hold those rows (the presolve's start
    and its own corner rule instead). The squared hinge's support vectors each take an α in
    proportion to their violation, and where the decision function plateaus at the margin
    (separable clusters wider than the kernel's reach) most rows sit a hair past it: a fuzz
    case of seed 909 (6,000 rows of one informative feature, ``gamma=3``, C = 100, balanced
    class weights) left 5,596 rows within δ of the Huber hinge's kink, whose float64
    factorization took 0.60 s of a 1.25 s fit (76 Newton steps); from the presolve 0.13 s,
    68 steps, 63 support vectors against 62 (the same test accuracy, 1.0; scikit-learn
    0.02 s)."""
    if m <= PRESOLVE_MIN_ROWS:
        return False
    r = 1.0 - y * first.info["margins"]
    (n,) = fetch_scalars(xp.count_nonzero(loss.curvature(r, xp=xp) > 0), xp=xp)
    return n >= CORNER_START_SHARE * m


def _presolve(K, y, loss, *, C, xp, task, sample_weight, tol, max_iter, corner_start=False,
              past=None):
    """``((alpha, b), steps, share)``: the solution on every fourth row (every second from
    :data:`PRESOLVE_HALF_ROWS`), scattered into the rows (zero elsewhere; ``Σ alpha = 0``
    holds), or None when it stalled; ``share`` the share of its rows in its last Newton
    system (0 where it had none), or with ``past`` (a classification loss) the share of its
    rows past the margin beyond ``past``'s corners (r > 0 where ``past`` has no curvature) at
    its solution."""
    m = K.shape[0]
    dev = _device(K)
    stride = _presolve_stride(m)
    sub = xp.arange(0, m, stride, device=dev)
    Ks = _strided(K, stride, xp=xp)
    ws = None if sample_weight is None else xp.take(sample_weight, sub)
    res = _exact_newton(Ks, xp.take(y, sub), loss, C=C, xp=xp, task=task, sample_weight=ws,
                        tol=tol, max_iter=max_iter, start=None, presolve=True, groups=None,
                        corner_start=corner_start)
    steps = res.n_iter + res.info["n_presolve_iter"]
    active = res.info["active"]
    share = active[-1] / int(sub.shape[0]) if active else 0.0
    if past is not None:
        r = 1.0 - xp.astype(xp.take(y, sub), xp.float64) * res.info["margins"]
        (n,) = fetch_scalars(xp.count_nonzero((r > 0) & (past.curvature(r, xp=xp) == 0)),
                             xp=xp)
        share = n / int(sub.shape[0])
    if res.info["stalled"]:
        return None, steps, share
    alpha = _scatter(sub, xp.astype(res.coef, xp.float64), m, xp=xp, dev=dev)
    return (alpha, res.info["intercept"]), steps, share


#: Newton systems of at least this order, over a float32 K, are factored in float32 and each
#: solve refined once in float64 against the system itself (iterative refinement, Moler 1967:
#: the error of a solve falls from ``κ ε₃₂`` to about ``(κ ε₃₂)²``). K's entries are float32
#: already, so the float64 system holds nothing a float32 factor misses but the rounding of
#: its diagonal. ``potrf`` on this 2-core CPU (no AVX-512), float64 against float32: order
#: 1,000 13.7 / 3.9 ms, 2,000 40.7 / 20.0 ms, 2,300 68 / 31 ms. In the refinement of
#: ``make_classification`` at 20,000 rows (8 systems of 543–2,283 rows) the factorizations
#: took 0.21 s instead of 0.38 s, the solves 0.08 s more (two float32 solves and a float64
#: product each); the test predictions and support vectors the same.
MIXED_MIN_ORDER = 512

#: A float32 Newton system's solves from its own factor are refined in float64
#: (:class:`_Factor`) only where the bound ``eps₃₂ κ`` on their relative error exceeds this,
#: ``κ ≤ (|Q| max Kᵢᵢ + max d) / min d`` (K_QQ is positive semi-definite: its largest
#: eigenvalue is at most its trace).
#: Below it the unrefined step is an inexact Newton step within 1 % of the exact one, and the
#: iteration corrects it (each step's residuals are float64's, from Kα). At the Huber hinge's
#: d = 2δ / (C s) that is C s ≤ about 5 for systems of 2,300 rows. Session 34,
#: ``make_classification`` at 20,000 rows (C = 1, systems of up to 2,300 rows): 0.47 → 0.43 s,
#: the same 13 Newton steps, accuracy and support vectors (5,594 against 5,593). The solves
#: of an updated system (:class:`_Updated`) are refined always: unrefined, with
#: ``UPDATE_SHARE`` 0.5, that problem's steps circled at the same 2,281 rows until a float64
#: factorization ended them, where refined they converged in four.
REFINE_SOLVE_ERROR = 1e-2

#: Bytes from which a Newton system's blocks are written into buffers reused step after step
#: (:class:`~svmgpu.backend.Workspace`); smaller ones come from glibc's heap, reused anyway.
_REUSED_BYTES = 1 << 20


class _Factor:
    """The factor of one Newton system ``M = K + diag(d)``: for ``low`` (a float32 K's system
    of :data:`MIXED_MIN_ORDER` rows or more) the float32 factor of M's float32 copy (in
    ``space``'s buffer "low", where given: a :class:`~svmgpu.backend.Workspace`), K and d kept
    for the refinement of each solve in float64 (:meth:`solve`); K is only read (it may be a
    view of a larger block). Else the float64 Cholesky factor of M, formed in K (float64,
    overwritten), or with ``keep`` in ``space``'s buffer "base" (a copy: K's buffer is the next
    step's, and the factor a base of :class:`_Updated` solves). A float32 copy that is not
    positive definite (rounding of a near-singular M) is factored in float64 instead.
    ``refine=False``: a float32 factor's solves are not refined (:data:`REFINE_SOLVE_ERROR`).

    ``own``: K (C-ordered, in the factor's dtype) is the caller's to give up: the factor is
    formed in it, with no copy, wherever the solves do not read K (unrefined), the caller
    keeping K's buffer from later writes while the factor is in use (a kept base's buffer is
    not the next step's: :func:`exact_newton` alternates two). ``reread()`` then gives K again
    for the float64 factor that a float32 one which failed needs."""

    refine = True  # (a float32 factor's solves refined in float64: REFINE_SOLVE_ERROR)
    iterative = False  # (solved by conjugate gradients, not factored: CG_MAX_DOMINANCE)

    def __init__(self, K, d, *, low, xp, space=None, keep=False, refine=True, own=False,
                 reread=None):
        self.xp, self.K, self.d, self.refine = xp, None, d, refine
        if _dominance(K, d, xp=xp) <= CG_MAX_DOMINANCE:
            self.iterative, self.K = True, K
            self._later = dict(low=low, space=space, keep=keep, refine=refine, own=own,
                               reread=reread)
            return
        self._factor(K, d, low=low, xp=xp, space=space, keep=keep, refine=refine, own=own,
                     reread=reread)

    def _factor(self, K, d, *, low, xp, space, keep, refine, own, reread):
        """The Cholesky factor of ``K + diag(d)`` (see the class)."""
        if low:
            in_place = own and not refine and K.dtype == xp.float32
            try:
                M32 = K if in_place else xp.astype(K, xp.float32) if space is None else \
                    space.astype("low", K, xp.float32)
                self.L = cho_factor(add_diagonal(M32, xp.astype(d, xp.float32), xp=xp),
                                    lower=True, overwrite=True, xp=xp)
                self.K = K
                return
            except LinAlgError:
                K = xp.astype(reread() if in_place else K, xp.float64, copy=True)
        elif keep and space is not None and not (own and K.dtype == xp.float64):
            K = space.astype("base", K, xp.float64)
        self.L = cho_factor(add_diagonal(K, d, xp=xp), lower=True, overwrite=True, xp=xp)

    def _raw(self, B):
        """``M⁻¹ B`` by the factor alone, in its dtype (B in that dtype)."""
        return cho_solve(self.L, B, xp=self.xp)

    def solve(self, B):
        """``M⁻¹ B`` (float64 B, one or more columns)."""
        xp = self.xp
        if self.iterative:
            x = _conjugate_gradients(self.K, self.d, B, xp=xp)
            if x is not None:
                return x
            K, self.iterative = self.K, False  # (not converged: factored after all)
            self.K = None
            self._factor(K, self.d, xp=xp, **self._later)
        if self.K is None:
            return self._raw(B)
        f32, f64 = xp.float32, xp.float64
        x = xp.astype(self._raw(xp.astype(B, f32)), f64)
        if not self.refine:
            return x
        dx = self.d[:, None] * x if x.ndim == 2 else self.d * x
        r = B - product_in_float64(self.K, x, xp=xp) - dx  # (the residual in float64: one
        return x + xp.astype(self._raw(xp.astype(r, f32)), f64)  # refinement)


#: A Newton system whose rows Q differ from those of the last factored one (its base B, of at
#: least :data:`UPDATE_MIN_ORDER` rows) in ``a`` rows added and ``r`` dropped (a row whose
#: curvature changed counts as both) is solved from B's factor where ``a + 2 r`` is at most
#: this share of Q's rows (:class:`_Updated`: ``|B|² (a + 2r)`` flops of triangular solves
#: against ``|Q|³ / 3`` for a factorization); else Q is factored and becomes the base.
#: Session 33, the exact problem of a noisy set's refinement (11,000 rows, 20 features, 30 % of
#: the labels flipped, C = 10; systems of up to 4,600 rows): 8.1–8.9 s with no updates,
#: 5.5–6.6 s at 0.125, 5.8–6.7 s at 0.0625, 6.6–6.7 s at 0.25, 6.9–7.4 s at 0.4.
UPDATE_SHARE = 0.125
#: The least order of a factored system kept as a base for :class:`_Updated` solves (below,
#: a factorization costs less than the gathers and calls an update makes).
UPDATE_MIN_ORDER = 512


#: A Newton system ``M = K_QQ + diag(d)`` whose rows are diagonally dominant (each row's
#: off-diagonal entries summing in magnitude to at most this share of its diagonal entry,
#: in :data:`_DOMINANCE_ROWS` evenly spaced rows) of at least :data:`CG_MIN_ORDER` rows is
#: solved by conjugate gradients preconditioned by its diagonal instead of a Cholesky factor
#: (Hestenes and Stiefel 1952; Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed.,
#: 2003, §9.2): by Gershgorin's theorem the preconditioned matrix's eigenvalues lie in
#: ``[1 − ρ, 1 + ρ]``, so each iteration shrinks the error by about ``ρ / (1 + √(1 − ρ²))``,
#: one product with M against ``|Q| / 3`` of them for a factorization. Where it has not
#: converged in :data:`CG_MAX_ITER` iterations (the sampled rows missed a coupled one), M is
#: factored after all. A kernel whose values between rows are far below 1 (RBF at a
#: ``gamma`` far above the rows' spacing) puts most rows in the Newton system: fuzz
#: refinements of 14,000 rows of 30 features at ``gamma=1`` (off-diagonal row sums 1e-8 at
#: the median, 1e-3 at most) factored systems of 7,098 and 14,000 rows, 5.1 s of 10 s.
#: From 512 rows (1,024 until session 68): mixed fuzz seed 9191's trial 22 (six classes of
#: 2,500 rows, RBF at ``gamma=3``, C = 10, balanced weights; 15 pairs of about 830 rows, most
#: rows in each system) factored 130 systems, 1.3 s of its 1.83 s fit: 0.57 s (scikit-learn
#: 0.22 s), the same scores; `make_classification` at 5,000 and 10,000 rows, digits, breast
#: cancer and friedman1 at 2,000 rows (systems of 512–1,024 rows that are not dominant: the
#: sampled rows' check only) within 2 % either way; mixed seeds 6868, 7171 and 9191: no score
#: changed, 13.6 / 8.9 / 27.1 → 13.0 / 7.7 / 24.6 s in all.
CG_MAX_DOMINANCE = 0.25
CG_MIN_ORDER = 512
CG_MAX_ITER = 40
#: The relative residual at which the conjugate gradients stop (an inexact Newton step, as an
#: unrefined float32 factor's: :data:`REFINE_SOLVE_ERROR`).
CG_TOL = 1e-8
#: The relative residual to which a float32 K's iterations go with float32 products, before
#: each refinement against the float64 residual (at most :data:`_CG_ROUNDS` rounds).
CG_LOW_TOL = 1e-5
_CG_ROUNDS = 3
_DOMINANCE_ROWS = 64


def _dominance(K, d, *, xp):
    """The largest ``Σ_{j≠i} |K_ij| / (K_ii + d_i)`` over :data:`_DOMINANCE_ROWS` evenly spaced
    rows of ``K``, or inf below :data:`CG_MIN_ORDER` rows (:data:`CG_MAX_DOMINANCE`)."""
    n = int(K.shape[0])
    if n < CG_MIN_ORDER:
        return math.inf
    rows = xp.arange(0, n, max(1, n // _DOMINANCE_ROWS), device=_device(d))
    return _rows_dominance(xp.take(K, rows, axis=0), rows, xp.take(d, rows), xp=xp)


def _rows_dominance(R, rows, d, *, xp):
    """The largest ``Σ_{j≠i} |K_ij| / (K_ii + d_i)`` over K's rows ``rows`` (``R``, those rows
    whole), inf where it is not a number."""
    diag = xp.astype(take_entries(R, xp.arange(int(rows.shape[0]), dtype=rows.dtype,
                                               device=_device(d)), rows, xp=xp), xp.float64)
    off = xp.sum(xp.abs(xp.astype(R, xp.float64)), axis=1) - xp.abs(diag)
    (rho,) = fetch_scalars(xp.max(off / (diag + d)), xp=xp)
    return rho if rho == rho else math.inf  # (NaN: not dominant)


def kernel_dominance(K, *, xp):
    """The largest ``Σ_{j≠i} |K_ij| / K_ii`` over :data:`_DOMINANCE_ROWS` evenly spaced rows of
    K (an array or a :class:`~svmgpu.kernels.KernelRows`, whose rows are computed): at most
    :data:`CG_MAX_DOMINANCE`, every Newton system of K (and the corner start's) is solved by
    conjugate gradients, a few products instead of a factorization."""
    n = int(K.shape[0])
    dev = _device(K)
    rows = xp.arange(0, n, max(1, n // _DOMINANCE_ROWS), dtype=xp.int64, device=dev)
    if isinstance(K, KernelRows):  # (not held: a whole K asked for later is its store)
        R = K.sample(rows)
    else:
        R = xp.take(K, rows, axis=0)
    return _rows_dominance(R, rows, xp.zeros((int(rows.shape[0]),), dtype=xp.float64,
                                             device=dev), xp=xp)


def _conjugate_gradients(K, d, B, *, xp):
    """``(K + diag(d))⁻¹ B`` (float64, one or more columns) by conjugate gradients
    preconditioned by the diagonal (:data:`CG_MAX_DOMINANCE`); None where some column's
    relative residual is still above :data:`CG_TOL` after :data:`CG_MAX_ITER` iterations. A
    float32 K's iterations multiply in float32 (:func:`~svmgpu.backend.matvec_in_dtype`) to
    :data:`CG_LOW_TOL`, refined against the float64 residual over K's own entries
    (:func:`~svmgpu.backend.product_in_float64`; iterative refinement, as the float32 factors'
    solves): a float64 product of a float32 block converts it a chunk at a time, 3–4 times
    a float32 product's time (12,000 rows: 6.5 s of an 11 s fit)."""
    vec = B.ndim == 1
    B = B[:, None] if vec else B
    inv = 1.0 / (xp.astype(xp.linalg.diagonal(K), xp.float64) + d)[:, None]
    D = d[:, None]
    low = K.dtype == xp.float32

    def exact(V):
        return product_in_float64(K, V, xp=xp) + D * V

    def fast(V):
        return matvec_in_dtype(K, V, xp=xp) + D * V

    if not low:
        X = _cg(exact, inv, B, CG_TOL, xp=xp)
        return X if X is None or not vec else X[:, 0]
    stop = CG_TOL * xp.sqrt(xp.sum(B * B, axis=0))
    X, R = None, B
    for _ in range(_CG_ROUNDS):
        dX = _cg(fast, inv, R, CG_LOW_TOL, xp=xp)
        if dX is None:
            return None
        X = dX if X is None else X + dX
        R = B - exact(X)
        (done,) = fetch_scalars(xp.all(xp.sqrt(xp.sum(R * R, axis=0)) <= stop), xp=xp)
        if done:
            return X[:, 0] if vec else X
    return None


def _cg(times, inv, B, tol, *, xp):
    """Preconditioned conjugate gradients for ``times(X) = B`` (columns), the preconditioner
    ``inv`` (a column), from the preconditioner's solution, to a relative residual of ``tol``
    (each column's, by the recurrence), or None after :data:`CG_MAX_ITER` iterations."""
    stop = tol * xp.sqrt(xp.sum(B * B, axis=0))
    X = inv * B
    R = B - times(X)
    Z = inv * R
    P, rz = Z, xp.sum(R * Z, axis=0)
    for _ in range(CG_MAX_ITER + 1):
        (done,) = fetch_scalars(xp.all(xp.sqrt(xp.sum(R * R, axis=0)) <= stop), xp=xp)
        if done:
            return X
        Q = times(P)
        a = rz / xp.sum(P * Q, axis=0)
        X, R = X + a * P, R - a * Q
        Z = inv * R
        rz, rz_old = xp.sum(R * Z, axis=0), rz
        P = Z + (rz / rz_old) * P
    return None


def _refines(KQQ, d, *, xp):
    """Whether the float32 solves of the system ``KQQ + diag(d)`` are refined in float64
    (:data:`REFINE_SOLVE_ERROR`)."""
    n = int(KQQ.shape[0])
    kmax, dmax, dmin = fetch_scalars(xp.max(xp.linalg.diagonal(KQQ)), xp.max(d), xp.min(d),
                                     xp=xp)
    return float(xp.finfo(xp.float32).eps) * (n * kmax + dmax) > REFINE_SOLVE_ERROR * dmin


def _updates_pay(xp):
    """Whether :class:`_Updated` solves can pay in namespace ``xp``: NumPy and CuPy have
    triangular solves; elsewhere :func:`~svmgpu.backend.solve_triangular` is a general (LU)
    solve, |B|³ a call, dearer than the factorization it would save (array-api-strict's
    device1: a test's exact solves took 62 s instead of 13)."""
    return is_numpy(xp) or is_cupy(xp)


class _Base:
    """The last factored Newton system of an :func:`exact_newton` solve: its :class:`_Factor`,
    rows B (problem rows, ascending), their ``d``, and each problem row's position in B
    (−1: not in B)."""

    def __init__(self, factor, B, d, m, *, xp, dev):
        self.factor, self.B, self.d = factor, B, d
        self.pos = set_rows(xp.full((m,), -1, dtype=xp.int64, device=dev), B,
                            xp.arange(B.shape[0], dtype=xp.int64, device=dev), xp=xp)

    def update(self, Q, d, KQQ, A, at, *, xp):
        """An :class:`_Updated` solver of the system on rows Q (``d``, and ``KQQ`` its kernel
        block; ``A[at]`` K's rows Q), or None where Q differs from B in too many rows
        (:data:`UPDATE_SHARE`) or the update's own factors fail."""
        n, nQ = int(self.B.shape[0]), int(Q.shape[0])
        p = xp.take(self.pos, Q)
        same = (p >= 0) & (xp.take(self.d, xp.where(p >= 0, p, xp.zeros_like(p))) == d)
        kept_q, new_q = xp.nonzero(same)[0], xp.nonzero(~same)[0]
        kept_b = xp.take(p, kept_q)
        a, r = int(new_q.shape[0]), n - int(kept_q.shape[0])
        if a + 2 * r > UPDATE_SHARE * nQ:
            return None
        try:
            return _Updated(self.factor, KQQ, d, kept_q, kept_b, new_q, self.B, A,
                            xp.take(at, new_q), xp=xp)
        except LinAlgError:  # (a Schur complement that rounding left indefinite)
            return None


class _Updated(_Factor):
    """``M_Q⁻¹`` for a Newton system ``M_Q = K_QQ + diag(d_Q)`` from the factor ``L Lᵀ`` of an
    earlier one on rows B, where Q keeps most of B's rows (with their d) and adds a few,
    ``A``: bordering and constraints instead of a factorization (Golub and Van Loan, "Matrix
    Computations", 4th ed., 2013, §6.5: updating a factorization when rows are added or
    deleted; here with triangular solves only, no rotations).

    The system over B ∪ A, ``[[M_B, G], [Gᵀ, H]]`` with ``G = K_BA`` and ``H = K_AA +
    diag(d_A)``, is solved by its Schur complement ``S = H − WᵀW`` (``W = L⁻¹G``); the rows
    R of B that left Q are held at 0 by multipliers, ``T = E_Rᵀ M⁻¹ E_R`` (``Y = M⁻¹ E_R``
    solved once). Both the extended matrix and T are positive definite, and the rows of Q
    get the solution of ``M_Q`` itself. Cost: ``|B|² (a + 2 r)`` for W and Y, and two
    triangular solves of B's order a right-hand side, against ``|Q|³ / 3`` for a factor. In
    a float32 base each solve is refined in float64 against ``KQQ`` and ``d`` (as
    :class:`_Factor`'s)."""

    def __init__(self, base, KQQ, d, kept_q, kept_b, new_q, B, A, at_new, *, xp):
        self.xp, self.d, self.L = xp, d, base.L
        self.K = None if base.K is None else KQQ
        L = base.L[0]
        dt, dev, n = L.dtype, _device(d), int(B.shape[0])
        a = int(new_q.shape[0])
        # Q-order blocks ↔ [B; A]: B's rows take Q's rows where kept (else a zero row appended
        # to the block), and Q's rows come back from [B's kept rows; A]
        self._fill = set_rows(xp.full((n,), int(d.shape[0]), dtype=xp.int64, device=dev),
                              kept_b, kept_q, xp=xp)
        self._kept_b, self._new_q = kept_b, new_q
        self._back = xp.argsort(xp.concat([kept_q, new_q]))
        self._drop = xp.nonzero(self._fill == int(d.shape[0]))[0]  # (B's rows not kept)
        r = int(self._drop.shape[0])
        # one forward pass over L for G = K_BA and R's one-hot columns E
        E = xp.astype(self._drop[None, :] == xp.arange(n, device=dev)[:, None], dt)
        if a:
            E = xp.concat([xp.astype(xp.matrix_transpose(take_block(A, at_new, B, xp=xp)), dt),
                           E], axis=1)
        F = solve_triangular(L, E, lower=True, xp=xp) if a + r else None
        self.W, self.LS, self.Y, self.LT = None, None, None, None
        if a:
            self.W = F[:, :a]
            H = xp.astype(xp.take(xp.take(KQQ, new_q, axis=0), new_q, axis=1), dt)
            S = add_diagonal(H - matmul(xp.matrix_transpose(self.W), self.W, xp=xp),
                             xp.astype(xp.take(d, new_q), dt), xp=xp)
            self.LS = cho_factor(S, lower=True, overwrite=True, xp=xp)
        if r:  # (M⁻¹ E over [B; A], from its forward half)
            self.Y = self._backward(F[:, a:], xp.zeros((a, r), dtype=dt, device=dev))
            self.LT = cho_factor(xp.take(self.Y[0], self._drop, axis=0), lower=True,
                                 overwrite=True, xp=xp)

    def _backward(self, w, VA):
        """The solution over [B; A] for right-hand sides (VB; VA), given ``w = L⁻¹ VB``."""
        xp, L = self.xp, self.L[0]
        if self.W is None:
            return solve_triangular(L, w, lower=True, trans=1, xp=xp), VA
        zA = cho_solve(self.LS, VA - matmul(xp.matrix_transpose(self.W), w, xp=xp), xp=xp)
        return solve_triangular(L, w - matmul(self.W, zA, xp=xp), lower=True, trans=1,
                                xp=xp), zA

    def _raw(self, V):
        xp = self.xp
        vec = V.ndim == 1
        if vec:
            V = V[:, None]
        k = V.shape[1]
        padded = xp.concat([V, xp.zeros((1, k), dtype=V.dtype, device=_device(V))])
        w = solve_triangular(self.L[0], xp.take(padded, self._fill, axis=0), lower=True, xp=xp)
        zB, zA = self._backward(w, xp.take(V, self._new_q, axis=0))
        if self.Y is not None:
            lam = cho_solve(self.LT, xp.take(zB, self._drop, axis=0), xp=xp)
            zB = zB - matmul(self.Y[0], lam, xp=xp)
            zA = zA - matmul(self.Y[1], lam, xp=xp)
        x = xp.take(xp.concat([xp.take(zB, self._kept_b, axis=0), zA]), self._back, axis=0)
        return x[:, 0] if vec else x


class _Intercepts:
    """The intercepts of one solve: one (``groups`` None), or one per group of rows, each
    group a problem of its own over a block of K (:func:`exact_newton`'s ``groups``). Host
    lists of k floats; the methods give them per row and the sums over each group."""

    def __init__(self, groups, s, *, xp, dev):
        self.xp, self.dev, self.groups = xp, dev, groups
        self.G, self.row_scale, self._members = None, None, None
        self.k = 1
        if groups is None:
            return
        low, top = fetch_scalars(xp.min(groups), xp.max(groups), xp=xp)
        self.k = int(top) + 1
        self.G = xp.astype(groups[:, None] == xp.arange(self.k, device=dev)[None, :],
                           xp.float64)  # (m, k): the rows of each group
        (empty,) = fetch_scalars(xp.sum(xp.astype(xp.sum(self.G, axis=0) == 0, xp.float64)),
                                 xp=xp)
        if low < 0 or empty:
            raise ValueError(f"groups must number the problems 0, 1, ..., k - 1, each with a "
                             f"row; got values from {low:g} to {top:g}"
                             + (f", {int(empty)} of them without a row" if empty else ""))
        if s is not None:  # (each problem's stopping rule scales by its own max(s))
            self.row_scale = self.spread(fetch_scalars(
                *(xp.max(xp.take(s, self.members(g))) for g in range(self.k)), xp=xp))

    def members(self, g):
        """The rows of group g (an index array; computed when first asked)."""
        if self._members is None:
            self._members = [self.xp.nonzero(self.groups == j)[0] for j in range(self.k)]
        return self._members[g]

    def spread(self, b):
        """The intercepts ``b`` (k floats) at the rows: a float, or an (m,) array."""
        if self.G is None:
            return b[0]
        xp = self.xp
        return matmul(self.G, xp.asarray(b, dtype=xp.float64, device=self.dev), xp=xp)

    def solve(self, L, Q, rhs, alpha_F, ones):
        """The Newton system's α on the rows Q (their :class:`_Factor` L, right-hand side
        ``rhs``) and the intercepts that make each group's ``Σ α = 0`` with ``α_F`` on the
        other rows: None for a group without a row in Q (its intercept is free of the
        system)."""
        xp = self.xp
        if self.G is None:
            x = L.solve(xp.stack([ones, rhs], axis=1))
            sums = xp.sum(x, axis=0)
            sum1, sum2, sumF = fetch_scalars(sums[0], sums[1], xp.sum(alpha_F), xp=xp)
            b = (sum2 + sumF) / sum1
            return x[:, 1] - b * x[:, 0], [b]
        k = self.k
        GQ = xp.take(self.G, Q, axis=0)
        x = L.solve(xp.concat([GQ, rhs[:, None]], axis=1))
        # (K's blocks are the groups': M⁻¹ G's column g is zero outside group g, so each
        # group's Σ α = 0 is one equation in its own intercept)
        Gt = xp.matrix_transpose(GQ)
        v = fetch_vector(xp.concat([xp.sum(GQ * x[:, :k], axis=0), matmul(Gt, x[:, k], xp=xp),
                                    matmul(xp.matrix_transpose(self.G), alpha_F, xp=xp)]),
                         xp=xp)
        b = [(v[k + g] + v[2 * k + g]) / v[g] if v[g] > 0 else None for g in range(k)]
        bv = xp.asarray([0.0 if t is None else t for t in b], dtype=xp.float64,
                        device=self.dev)
        return x[:, k] - matmul(x[:, :k], bv, xp=xp), b

    def rows(self, g, *arrays):
        """The arrays (each an (m,) array or a float) on group g's rows."""
        if self.G is None:
            return arrays
        j = self.members(g)
        return tuple(a if isinstance(a, float) else self.xp.take(a, j) for a in arrays)


def _exact_newton(K, y, loss, *, C, xp, task, sample_weight, tol, max_iter, start, presolve,
                  groups, corner_start=False, short_steps=None, corners_of=None,
                  hard_short_steps=None, max_system=None, space=None):
    if not loss.piecewise_quadratic or not loss.convex:
        raise ValueError(f"exact_newton needs a convex piecewise-quadratic loss; got "
                         f"{loss.name!r}")
    if corners_of is not None:
        _check_corners_of(corners_of, loss)
    t0 = time.perf_counter()
    f64 = xp.float64
    dev = _device(K)
    lazy = K if isinstance(K, KernelRows) else None  # (rows computed as they are needed)
    if lazy is None and K.dtype != xp.float32:  # (a float32 K stays float32: its products too)
        K = xp.astype(K, f64, copy=False)
    m = K.shape[0]

    def rows_of(idx):
        """``(A, at)``: an array whose rows ``at`` are K's rows ``idx`` (K itself and idx, or
        a lazy K's row store and the slots of those rows, computed now where they were not)."""
        if lazy is None:
            return K, idx
        at = lazy.compute(idx)
        return lazy.store[:lazy.computed, ...], at  # (the rows computed so far)

    def times(v, support=None):
        """``K v`` in float64 for ``v`` zero outside the rows ``support`` (None: unknown)."""
        if support is None:
            if lazy is None:
                return matvec_in_dtype(K, v, xp=xp)
            support = xp.nonzero(v != 0)[0]
        if lazy is None:
            return symmetric_matvec(K, v, support, xp=xp)
        A, at = rows_of(support)
        return symmetric_matvec(A, v, support, rows=at, xp=xp)

    y = xp.astype(y, f64)
    cls = task == "classification"
    ones = xp.ones((m,), dtype=f64, device=dev)
    sig, tgt = (y, 1.0) if cls else (ones, y)
    s = None if sample_weight is None else xp.astype(sample_weight, f64)  # (None: unit)
    s_max = 1.0 if s is None else float(xp.max(s))
    k_max = max(max_diagonal(K, xp=xp), 1.0)  # (the kernel's scale, where above 1: (K, C)
    # is the problem (K / k, C k))
    if groups is not None and tuple(groups.shape) != (m,):
        raise ValueError(f"groups must have shape ({m},), a problem number per row of K; got "
                         f"{tuple(groups.shape)}")
    grp = _Intercepts(groups, s, xp=xp, dev=dev)
    unit = s_max if grp.row_scale is None else 1.0  # (the stopping rule's scale of s)
    C = float(C)
    n_pre = 0
    if presolve not in (True, False, "auto"):
        raise ValueError(f"presolve must be True, False or 'auto', got {presolve!r}")
    if presolve == "auto":
        presolve = True
    given = isinstance(start, tuple)  # (a start of the caller's, not the presolve's)
    corners = None  # (the loss's piece at the kink, (a, c): the "corners" start; evaluated
    # only where it can be taken: the presolve's rule and the probe need more rows than
    # PRESOLVE_MIN_ROWS and no groups, so small problems pay no host read for it)
    can_probe = corner_start and m > PRESOLVE_MIN_ROWS and groups is None
    if cls and (can_probe or isinstance(start, str) and start == "corners"):
        a0, c0 = fetch_scalars(*(v(xp.zeros((1,), dtype=f64, device=dev), xp=xp)[0]
                                 for v in (loss.grad, loss.curvature)), xp=xp)
        corners = (a0, c0) if c0 > 0 else None
    if not cls and groups is None and loss.name == "huber_epsilon_insensitive" and (
            corner_start or isinstance(start, str) and start == "corners"):
        corners = "svr"  # (each row in the corner its residual's sign says: _svr_corners)
    if isinstance(start, str) and start == "corners" and corners is None:
        raise ValueError(f"start='corners' needs a classification loss with curvature at its "
                         f"kink, or the regression loss 'huber_epsilon_insensitive' (no "
                         f"groups); got {loss.name!r} for {task}")
    first_large = False  # (the squared hinge's first solve met a system past max_system)
    damped_system = None  # (the rows of the system whose damped first steps ended it)
    if cls and corner_start and C * s_max * k_max > HARD_MARGIN_FIRST_C and start is None \
            and loss.name != HARD_MARGIN_FIRST:  # (the squared hinge first)
        hard, first_start, first_presolve, share = get_loss(HARD_MARGIN_FIRST), None, \
            presolve, 0.0
        if m > HARD_MARGIN_PROBE_ROWS and groups is None and presolve:  # (its presolve
            # first: the probe of its violators' share)
            first_start, more, share = _presolve(K, y, hard, C=C, xp=xp, task=task,
                                                 sample_weight=sample_weight, tol=tol,
                                                 max_iter=max_iter, past=loss)
            n_pre += more
            first_presolve = False
        if share < HARD_MARGIN_MAX_SHARE:
            first = _exact_newton(K, y, hard, C=C, xp=xp, task=task,
                                  sample_weight=sample_weight, tol=tol, max_iter=max_iter,
                                  start=first_start, presolve=first_presolve, groups=groups,
                                  max_system=None if max_system is None else
                                  min(max_system, DAMPED_SYSTEM_ROWS))
            n_pre += first.n_iter + first.info["n_presolve_iter"]
            first_large = first.info["large"]  # (its systems past max_system, or past
            # DAMPED_SYSTEM_ROWS: a start that costs factorizations of that size, to be
            # followed by the loss's own steps, is dearer than the caller's method. Mixed fuzz
            # seed 8282's trial 12, three pairs of 8,000 rows of 40 features, 'poly' at C = 10:
            # its systems 5,845 → 4,272 rows in six steps (4.0 s), the loss's steps from its
            # minimum then damped on 4,185 rows and SMO all the same; another pair 4,975 →
            # 3,468 rows (1.5 s), then 18 damped steps (2.7 s); 14.2 → 6.0 s with SMO at
            # once, the same scores (scikit-learn 4.6 s); it changed no other of 100 mixed
            # trials of seeds 8181 and 7878, 49 of 8282 and 36 medium of 8080, 7777, 7373.
            # The caller's other method for this loss too. Until session 62 this solve had no
            # bound: medium fuzz seed 505's trial 10, 14,000 rows refined whole at C = 100,
            # RBF at gamma=1, factored five systems of up to 13,444 rows, 29.4 s → 6.1 s by SMO
            # (scikit-learn 12 s); 2020's trial 9 6.9 → 5.9 s, 505's trial 6 4.6 → 5.0 s, mixed
            # 77's trial 28 (12,000 rows, 200 features, gamma=3) 14.8 → 9.5 s, the same
            # scores; it fired in no other of 72 medium and 44 mixed fits of 12,000 rows)
            if first_large:
                _log.debug(fields(hard_margin_first_large=m))
                damped_system = first.info["damped_system"]  # (why, for the caller's log)
            if not first.info["stalled"] and not _plateau(first, y, loss, m, xp=xp):
                start = (first.coef, first.info["intercept"])
    if start is None and presolve and m > PRESOLVE_MIN_ROWS and groups is None and \
            not first_large:
        start, more, share = _presolve(K, y, loss, C=C, xp=xp, task=task,
                                       sample_weight=sample_weight, tol=tol,
                                       max_iter=max_iter, corner_start=corner_start)
        n_pre += more
        if corners is not None and share >= CORNER_START_SHARE:
            start = "corners"
    # (the LS-SVM starts' systems: a float32 K's factored in float32, its solves refined in
    # float64, as the Newton systems'. The continuation's LS-SVM start had factored it in
    # float64, a float64 copy of K first: on a fuzz refinement of 6,844 rows at C = 10, 0.66 s
    # for the copy and 1.1 s for the factorization, of a 9.1 s fit)
    low_start = K.dtype == xp.float32 and m >= MIXED_MIN_ORDER
    # (a whole-K start past max_system: not factored, the caller's other method instead)
    large = max_system is not None and isinstance(start, str) and m > max_system or first_large
    if large:
        start = None
    if start is None:
        alpha, b = xp.zeros((m,), dtype=f64, device=dev), [0.0] * grp.k
        if not cls:  # (regression: b the best intercept of α = 0, where targets offset
            # beyond the tube from b = 0 left every row on a linear piece: a fuzz case of
            # session 38, targets 50 ± 1, ε = 1, stalled from b = 0 into a continuation whose
            # LS-SVM start on 6,000 rows took 2.2 s of a 2.6 s fit)
            b = [_intercept_search(*grp.rows(j, alpha, tgt, sig, ones if s is None else s),
                                   loss, C, xp=xp) for j in range(grp.k)]
    elif isinstance(start, str) and start == "ls_svm":
        alpha, b = _ls_svm(K if lazy is None else lazy.full(), tgt * sig,
                           C * (ones if s is None else s), grp, xp=xp, low=low_start)
    elif isinstance(start, str) and start == "corners" and corners == "svr":
        alpha, b, _ = _svr_corners(K if lazy is None else lazy.full(), y, loss,
                                   C * (ones if s is None else s), grp, xp=xp, low=low_start)
    elif isinstance(start, str) and start == "corners":  # (ψ'(r) = a + c r on the corners:
        # the Newton system of every row there, Chapelle's (12) over all rows)
        a0, c0 = corners
        alpha, b = _ls_svm(K if lazy is None else lazy.full(), (tgt + a0 / c0) * sig,
                           C * c0 * (ones if s is None else s), grp, xp=xp, low=low_start)
    else:
        alpha = xp.astype(start[0], f64)
        b = [float(start[1])] if groups is None else [float(t) for t in start[1]]
    Ka = times(alpha)
    history, active = [], []
    # (the Newton systems' large blocks in buffers reused step after step: Workspace)
    if space is None:
        space = newton_space(m, xp=xp)
    else:  # (a caller's problem with more rows than its last: the reservation grows)
        space.widen(m * m)
    converged, stalled, n_iter = False, False, 0
    prev_Q = -1
    base, n_factor = None, 0  # (the last factored system kept for updates: _Updated)
    free = [True] * grp.k  # (groups whose last step had no row in a quadratic piece)
    # a full step that kept the pieces solved their system: the residual left is rounding,
    # which a float32 K's products leave near 1e-6 C (they would stall a tighter tol)
    settled = 1e-12 if K.dtype == f64 else math.sqrt(float(xp.finfo(K.dtype).eps))
    low_factor = K.dtype == xp.float32  # (its systems' factors in float32: _Factor)
    accepted = None  # (r, αᵀKα, F) at the last accepted point, from its line search
    flat, rounding = 0, False  # (steps in a row that moved F by rounding only)
    levels = []  # (F at each accepted point: _FLAT_WINDOW)
    full = 0  # (full steps in a row among them)
    crawl = 0  # (short steps in a row that left F level: _CRAWL_STEPS)
    short = 0  # (steps in a row of at most SHORT_STEP, HARD_SHORT_STEP where stiff)
    empty = 0  # (steps in a row without a row in a quadratic piece: _EMPTY_STEPS)
    weighted = None if s is None else xp.astype(s > 0, f64)  # (weight 0: no curvature)
    Css = C * sig if s is None else C * s * sig  # α = C s σ ψ'(r) at the optimum
    sigma = _ARMIJO if C * s_max <= _ARMIJO_MAX_C else 0.0  # (the line search's decrease)
    stop = tol * min(C, _TOL_SCALE_MAX / k_max) * unit  # (_TOL_SCALE_MAX)
    stiff = sigma == 0.0 or C * s_max * k_max > _ARMIJO_MAX_C
    if stiff:  # (no Armijo rule, or the hard-margin regime at the kernel's own scale: see
        short_steps = hard_short_steps  # SHORT_STEP; a caller's other solver there)
    crawled = False
    zeros = xp.zeros((m,), dtype=f64, device=dev)
    knots = loss.knots()
    steps = []  # (the line search's steps)
    # (a given start whose first steps are damped: probed for the corner start)
    probe = corners is not None and can_probe and given
    # (SVR from α = 0 whose first steps are damped: its corner start tried, kept where its
    # share says so; on small problems and the presolve's, where no presolve decides. From
    # α = 0 or the presolve's solution whose first steps are each 2⁻¹⁰ or shorter: the
    # corner start, whatever its share, where a step moves a thousandth of the way or less:
    # near the hard margin with a diagonal-dominant K, each row taking its own α, and the
    # presolve's solution on a quarter of the rows saying little of the others (a fuzz
    # case of seed 606: the 'poly' kernel at gamma=3 on 200 features, its diagonal
    # 10⁷–6·10⁸ and off-diagonal entries below 10⁷; C = 1, ε = 1 for targets of spread 1,
    # 2,500 rows, 36 % of them in the corners at the solution, none on a linear piece:
    # steps of 10⁻⁸ from the presolve's solution, then 10⁻⁴–10⁻², the support set growing
    # a row a step, a stall after 181 steps and a continuation unconverged after 2,344
    # steps, 7.7 s, R² 0.128 against scikit-learn's 0.0954 in 0.11 s; the presolve's own
    # first steps from α = 0 were 10⁻⁸, its corner start's share 0.38. From the corners 3
    # steps, scikit-learn's R²)
    svr_probe = corners == "svr" and not given and not isinstance(start, str)
    from_presolve = svr_probe and start is not None

    def restart(point, corners=True):
        """The problem again from a probe's start ``point`` (the corners, or the presolve's
        solution: ``corners=False``), the steps so far counted."""
        res = _exact_newton(K, y, loss, C=C, xp=xp, task=task, sample_weight=sample_weight,
                            tol=tol, max_iter=max_iter, start=point, presolve=False,
                            groups=None, short_steps=short_steps,
                            hard_short_steps=hard_short_steps, max_system=max_system)
        res.n_iter += n_iter
        res.info["n_presolve_iter"] += n_pre
        res.info["corners"] = corners
        return res

    for n_iter in range(1, max_iter + 1):
        if large:
            stalled, n_iter = True, 0
            break
        r = tgt - sig * (Ka + grp.spread(b)) if accepted is None else accepted[0]
        g = loss.grad(r, xp=xp)
        c = loss.curvature(r, xp=xp)
        if weighted is not None:
            c = c * weighted
        gap = xp.abs(alpha - Css * g)
        if grp.row_scale is not None:
            gap = gap / grp.row_scale
        if accepted is None:
            residual, aKa = fetch_scalars(xp.max(gap), vecdot(alpha, Ka, xp=xp), xp=xp)
            obj = _objective(aKa, r, s, loss, C, xp=xp)
        else:
            (residual,) = fetch_scalars(xp.max(gap), xp=xp)
            aKa, obj = accepted[1], accepted[2]
        history.append(obj if groups is None else (alpha, Ka, r))  # (groups: at the end)
        if residual <= stop:
            converged = True
            n_iter -= 1
            break
        a = g - c * r  # ψ'(r) = a + c r on the current pieces
        if corners_of is not None and n_iter == 1:  # (the start's rows in the wider corners
            # of corners_of: in this loss's corner of their residual's sign, ψ'(r) = c (r ∓ (ε
            # − δ)), its curvature c = 1 / (2δ))
            a, c = _narrowed_corners(r, a, c, corners_of, loss, weighted, xp=xp)
        inQ = c > 0
        Q = xp.nonzero(inQ)[0]
        alpha_new = xp.where(inQ, zeros, Css * a)
        nQ = int(Q.shape[0])
        if max_system is not None and nQ > max_system:  # (max_system: not factored)
            large = stalled = True
            n_iter -= 1
            break
        active.append(nQ)
        empty = empty + 1 if given and nQ == 0 else 0
        if empty >= _EMPTY_STEPS:  # (a given start's pieces, not Newton: _EMPTY_STEPS)
            stalled = True
            break
        b_new = [None] * grp.k
        if nQ:
            cQ = xp.take(c, Q)
            CscQ = C * cQ if s is None else C * xp.take(s, Q) * cQ
            # K α_new on Q = (Kα)_Q + K_Q,E (α_new − α)_E, E the rows whose α changes: those of
            # Q and of F that changed piece (few but in the first steps). One pass over Q's
            # rows gathers the blocks K_QQ and K_Q,(E ∖ Q) (take_blocks: K_QQ then factored
            # where it lies, no copy); where E is a large part of the rows, Q's
            # whole rows are read instead, a chunk at a time (a copy of rows is faster than a
            # gather of scattered entries: Covtype regions of 1,800 rows, 4.5 s against 3.9 s),
            # and multiplied by the whole of α_new − α.
            delta = alpha_new - alpha
            extra = xp.nonzero((delta != 0) & ~inQ)[0]
            E = None  # (the rows where d may be nonzero, where they are few)
            A, at = rows_of(Q)
            low = low_factor and nQ >= MIXED_MIN_ORDER  # (K_QQ kept in float32: _Factor)
            dt = K.dtype if low else f64
            # (K_QQ in a buffer of its own, factored there: one of two, so that the next
            # steps' blocks leave the factor of a kept base alone, the base made at the last
            # factorization, in the other)
            mine = f"M{n_factor % 2}-{'low' if dt == xp.float32 else 'f64'}"
            if 3 * (nQ + int(extra.shape[0])) < m:
                E = xp.concat([Q, extra])
                nX = int(extra.shape[0])
                KQQ, KQX = take_blocks(A, at, (Q, extra), xp=xp, out=(
                    space.empty(mine if A.dtype == dt else "KQQ", (nQ * nQ,), A.dtype),
                    space.empty("KQX", (nQ * nX,), A.dtype)))
                KQd = matvec_in_dtype(KQQ, xp.take(delta, Q), xp=xp)
                if nX:
                    KQd = KQd + matvec_in_dtype(KQX, xp.take(delta, extra), xp=xp)
                del KQX
                if KQQ.dtype != dt:
                    KQQ = space.astype(mine, KQQ, dt)
            else:  # (Q's rows read once: their product with δ and their columns Q)
                KQd, KQQ = take_block_times(A, at, Q, delta, xp=xp, dtype=dt,
                                            out=space.empty(mine, (nQ, nQ), dt))
            tQ = tgt if cls else xp.take(tgt, Q)
            rhs = xp.take(sig, Q) * (xp.take(a, Q) / cQ + tQ) - xp.take(Ka, Q) - KQd
            dQ = 1.0 / CscQ
            L = None if base is None else base.update(Q, dQ, KQQ, A, at, xp=xp)
            if L is None:
                keep = nQ >= UPDATE_MIN_ORDER and groups is None and _updates_pay(xp)
                # (an updated system's solves stay refined: its Schur complement and
                # constraints add float32 rounding that REFINE_SOLVE_ERROR's bound omits)
                L = _Factor(KQQ, dQ, low=low, xp=xp, space=space, keep=keep,
                            refine=low and _refines(KQQ, dQ, xp=xp), own=True,
                            reread=lambda A=A, at=at, Q=Q: take_block(A, at, Q, xp=xp))
                base = _Base(L, Q, dQ, m, xp=xp, dev=dev) if keep and not L.iterative \
                    else None  # (an iterative solve is no base for updates)
                n_factor += 1
            del KQQ
            alpha_Q, b_new = grp.solve(L, Q, rhs, alpha_new, ones[:nQ])
            alpha_new = set_rows(alpha_new, Q, alpha_Q, xp=xp)  # (0 on Q)
            d = alpha_new - alpha  # (zero outside Q and the rows of F that changed piece)
            Kd = times(d, E)
        else:  # no row in a quadratic piece: α is fixed by the pieces
            d = alpha_new - alpha
            Kd = times(d)
        free = [t is None for t in b_new]
        if any(free):  # b of a problem without a row in a quadratic piece: a 1-D search
            Kn = Ka + Kd
            for j in range(grp.k):
                if free[j]:
                    b_new[j] = _intercept_search(
                        *grp.rows(j, Kn, tgt, sig, ones if s is None else s), loss, C, xp=xp,
                        b0=b[j])
        db = [bn - bo for bn, bo in zip(b_new, b, strict=True)]
        u = sig * (Kd + grp.spread(db))  # (the residuals along the step: r − step u)
        # F'(0) along (d, db): αᵀK d − C Σ s ψ'(r) u; and the rows the full step moves to
        # another piece of ψ (where the step's system was of the pieces at r: not a
        # narrowing's first step)
        kept = knots is not None and not (corners_of is not None and n_iter == 1)
        q1, q2, gu, *moved = fetch_scalars(
            vecdot(d, Ka, xp=xp), vecdot(d, Kd, xp=xp),
            vecdot(g if s is None else s * g, u, xp=xp),
            *((_moved(r, u, knots, weighted, xp=xp),) if kept else ()), xp=xp)
        phi, trials = _along(r, u, aKa, q1, q2, s, loss, C, xp=xp)
        if moved and moved[0] == 0:  # (every row on its piece from t = 0 to 1: F along the
            # step is the quadratic of those pieces, whose minimum the step reaches, so F(1) <
            # F(0) in exact arithmetic and the line search's test holds: taken whole where
            # rounding hides the decrease. A float32 K's pair of 3,986 rows of a mixed fuzz
            # trial, 8181's 30th, ended its steps of 2⁻¹¹ at 2.8 tol, then the float64 redo)
            phi(1.0)
            step, decreased = 1.0, True
        else:
            step, _, _, decreased = armijo(phi, obj + 1e-12 * abs(obj),
                                           min(q1 - C * gu, 0.0), sigma=sigma,
                                           max_backtracks=_MAX_HALVINGS - 1,
                                           fallback_below=_ARMIJO_MIN_STEP)
        if not decreased:  # no decrease along the step: the pieces' curvature says too
            stalled = True  # little here
            break
        accepted = trials[step]  # (the next step starts from this point)
        steps.append(step)
        if svr_probe and len(steps) == _DAMPED_STEPS:
            svr_probe = False
            if max(steps) <= _ARMIJO_MIN_STEP:
                corner = "corners"
            elif from_presolve or max(steps) > _DAMPED_STEP:
                corner = None
            else:
                corner = _svr_corner_probe(K, y, loss, C * (ones if s is None else s), grp, s,
                                           xp=xp, dev=dev)
            if corner is not None:
                return restart(corner)
        if probe and len(steps) == _DAMPED_STEPS:
            probe = False
            if max(steps) <= _DAMPED_STEP:  # (a poor start: the presolve, solved as a
                # probe, says whether the corners or its own solution start the problem again)
                pre_start, more, share = _presolve(K, y, loss, C=C, xp=xp, task=task,
                                                   sample_weight=sample_weight, tol=tol,
                                                   max_iter=max_iter, corner_start=True)
                n_pre += more
                _log.debug(fields(probe=share, steps=more, damped=steps))
                if share >= CORNER_START_SHARE:
                    return restart("corners")
                if pre_start is not None:  # (the exact path's own start: _DAMPED_STEPS)
                    return restart(pre_start, corners=False)
        if max_system is not None and len(steps) == _DAMPED_STEPS and \
                max(steps) <= DAMPED_SYSTEM_STEP and nQ >= DAMPED_SYSTEM_ROWS:
            _log.debug(fields(damped_system=nQ, steps=steps))  # (the caller's other method:
            large = stalled = True  # DAMPED_SYSTEM_ROWS)
            damped_system = nQ
            break
        alpha = alpha + step * d
        Ka = Ka + step * Kd
        b = [bo + step * t for bo, t in zip(b, db, strict=True)]
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(fields(it=n_iter, objective=obj, residual=residual, active=nQ,
                              step=step))
        if step == 1.0 and nQ == prev_Q and residual <= settled * C * unit:
            converged = True
            break
        # a float32 K's products can leave the residual above tol on a hard problem while
        # the objective moves by rounding only: end there (not converged; the caller
        # refines in float64) instead of running to max_iter. In float64 the Newton systems'
        # own rounding can (_FLAT_STEPS): full steps that keep the active set and leave F
        # level solved the same pieces' system again (converged); shorter ones stalled
        level = obj - accepted[2] <= _FLAT_DECREASE * abs(obj)  # (F moved by rounding)
        flat = flat + 1 if nQ == prev_Q and level else 0
        full = full + 1 if flat and step == 1.0 else 0
        crawl = crawl + 1 if sigma > 0 and step < _ARMIJO_MIN_STEP and level else 0
        if flat >= _FLAT_STEPS and (K.dtype != f64 or crawl < _CRAWL_STEPS):
            rounding = True
            converged = K.dtype == f64 and full >= _FLAT_STEPS
            stalled = K.dtype == f64 and not converged
            break
        levels.append(accepted[2])
        if K.dtype != f64 and len(levels) > _FLAT_WINDOW and levels[-1 - _FLAT_WINDOW] - \
                levels[-1] <= _FLAT_WINDOW_DECREASE * abs(levels[-1]):
            _log.debug(fields(flat_window=levels[-1 - _FLAT_WINDOW] - levels[-1], it=n_iter))
            rounding = True
            break
        short = _short_run(short, step, stiff)
        if crawl >= _CRAWL_STEPS or short_steps is not None and short >= short_steps:
            stalled = True
            crawled = short_steps is not None and short >= short_steps
            break
        prev_Q = nQ
    if converged:  # (after a step with rows in quadratic pieces they stay there and fix b;
        # after one without, b may be free: its middle)
        r = tgt - sig * (Ka + grp.spread(b))
        for j in range(grp.k):
            if free[j]:
                b[j] += _central_intercept(*grp.rows(j, r, sig), None if s is None else
                                           grp.rows(j, s)[0], loss, xp=xp)
    margins = Ka + grp.spread(b)
    if not all(math.isfinite(t) for t in b):
        raise FloatingPointError("the exact solver's intercept is not finite: scale the "
                                 "features or lower C")
    return SolverResult(coef=alpha, n_iter=n_iter, converged=converged,
                        objective_history=history if groups is None else
                        _group_objectives(history, s, loss, C, grp, xp=xp),
                        timings={"solve": time.perf_counter() - t0},
                        info={"intercept": b[0] if groups is None else b, "margins": margins,
                              "active": active, "stalled": stalled, "n_presolve_iter": n_pre,
                              "rounding": rounding, "factorizations": n_factor,
                              "crawled": crawled, "large": large,
                              "damped_system": damped_system, "first_large": first_large,
                              "corners": isinstance(start, str) and start == "corners"})


def _moved(r, u, knots, weighted, *, xp):
    """The number of rows (of positive weight: ``weighted`` 1, or None for all) whose residual
    ``r`` and ``r − u`` lie on different pieces of a loss whose pieces change at ``knots``."""
    e = r - u
    moved = xp.zeros(r.shape, dtype=xp.bool, device=_device(r))
    for k in knots:
        moved = moved | ((r >= k) != (e >= k))
    if weighted is not None:
        moved = moved & (weighted > 0)
    return xp.count_nonzero(moved)


def _short_run(short, step, stiff):
    """The short steps in a row after a step of ``step`` (``short`` before it): a step of at
    most :data:`SHORT_STEP` counts, one of at most :data:`SHORT_KEEP` times that keeps the
    count, a longer one ends the run; in the hard-margin regime (``stiff``) steps of at most
    :data:`HARD_SHORT_STEP` count and any other ends it."""
    if stiff:
        return short + 1 if step <= HARD_SHORT_STEP else 0
    return short + 1 if step <= SHORT_STEP else short if step <= SHORT_KEEP * SHORT_STEP else 0


def _along(r, u, aKa, q1, q2, s, loss, C, *, xp):
    """``(φ, trials)``: F along the Newton step (residuals ``r − t u``, ``αᵀKα`` the quadratic
    ``aKa + 2 t q1 + t² q2``) for :func:`~svmgpu.solvers._linesearch.armijo`, and the
    ``(r, αᵀKα, F)`` of each step it tried, by step."""
    trials = {}

    def phi(t):
        r_t, quad = r - t * u, aKa + 2.0 * t * q1 + t * t * q2
        trials[t] = (r_t, quad, _objective(quad, r_t, s, loss, C, xp=xp))
        return trials[t][2]

    return phi, trials


def _group_objectives(iterates, s, loss, C, grp, *, xp):
    """Each group's objective ``½ α_gᵀ K_gg α_g + C Σ_g s ψ(r)`` (K block-diagonal by group) at
    each iterate ``(α, Kα, r)``: a list of k floats per iterate, computed at once."""
    if not iterates:
        return []
    A, KA, R = (xp.stack([t[j] for t in iterates], axis=0) for j in range(3))
    V = loss.value(R, xp=xp)
    E = 0.5 * A * KA + C * (V if s is None else s[None, :] * V)
    k = grp.k
    v = fetch_vector(xp.reshape(matmul(E, grp.G, xp=xp), (-1,)), xp=xp)
    return [v[t * k:(t + 1) * k] for t in range(len(iterates))]


def _central_intercept(r, sig, s, loss, *, xp):
    """The shift of b to the middle of the interval of intercepts that are optimal with α,
    where the residuals ``r`` of every row of positive weight sit on linear pieces of ψ (0 where
    a row sits in a quadratic piece, or where ψ gives no :meth:`~svmgpu.losses.Loss.knots`).

    There α is fixed by the pieces and F's derivative in b is 0 until a row reaches a knot:
    any b of that interval is optimal. LIBSVM takes its middle (``calculate_rho`` without free
    support vectors: ρ = (ub + lb) / 2), and so does this, so that a fit whose every support
    vector is bounded (a small C, balanced classes or class weights) predicts as scikit-learn's
    instead of from wherever the iteration left b. The Huber corners are symmetric about the
    hinge's kinks, so the middle is LIBSVM's for the smoothed loss too."""
    knots = loss.knots()
    if knots is None:
        return 0.0
    f64 = xp.float64
    inf = xp.full(r.shape, math.inf, dtype=f64, device=getattr(r, "device", None))
    keep = None if s is None else s > 0
    c = loss.curvature(r, xp=xp)
    lo, hi = -inf, inf  # the knots below and above each residual
    for k in knots:
        lo = xp.where(r >= k, k, lo)
    for k in reversed(knots):
        hi = xp.where(r <= k, k, hi)
    below, above = r - lo, hi - r  # (how far r may fall or rise on its piece)
    up = xp.where(sig > 0, below, above)  # (b + t moves r by −σ t)
    down = xp.where(sig > 0, above, below)
    if keep is not None:
        c, up, down = xp.where(keep, c, 0.0), xp.where(keep, up, inf), xp.where(keep, down, inf)
    quadratic, t_up, t_down = fetch_scalars(xp.max(c), xp.min(up), xp.min(down), xp=xp)
    if quadratic > 0 or not (math.isfinite(t_up) and math.isfinite(t_down)):
        return 0.0
    return 0.5 * (t_up - t_down)


def _ls_svm(K, target, w, grp, *, xp, low=False):
    """``(α, [b, ...])`` of the LS-SVM ``(K + diag(1/w)) α + b = target``, ``Σ α = 0``
    (Suykens; an intercept and ``Σ α = 0`` per group of ``grp``, :class:`_Intercepts`): the
    Newton start with every row of positive weight on one quadratic piece, the Newton system
    of those rows (rows of weight 0 get α = 0). ``low``: a float32 K's system factored in
    float32, each solve refined in float64 (:class:`_Factor`; K read, not copied in
    float64)."""
    solve = _ls_svm_system(K, w, grp, xp=xp, low=low)
    return solve(target)


def _ls_svm_system(K, w, grp, *, xp, low=False):
    """The LS-SVM system of :func:`_ls_svm` factored once: a function of the targets giving
    ``(α, [b, ...])`` (``α`` zero at the rows of weight 0)."""
    m, f64 = K.shape[0], xp.float64
    dev = getattr(K, "device", None)
    Q = xp.nonzero(w > 0)[0]
    nQ = int(Q.shape[0])
    M = K if nQ == m else take_block(K, Q, Q, xp=xp)
    L = _Factor(M if low else xp.astype(M, f64, copy=True), 1.0 / xp.take(w, Q), low=low, xp=xp)
    zeros = xp.zeros((m,), dtype=f64, device=dev)
    ones = xp.ones((nQ,), dtype=f64, device=dev)

    def solve(target):
        alpha_Q, b = grp.solve(L, Q, xp.take(target, Q), zeros, ones)
        return set_rows(zeros, Q, alpha_Q, xp=xp), [0.0 if t is None else t for t in b]

    return solve


def _svr_corners(K, y, loss, Cs, grp, *, xp, low=False):
    """``(α, [b], share)``: the Newton step's solution with every row of positive weight in
    one corner of the ε-insensitive loss with Huber corners (``ψ'(r) = c (r − σ (ε − δ))``,
    ``c = 1 / (2δ)``: the LS-SVM of weights ``C s c`` (``Cs``: C times the row weights) and
    targets ``y − σ (ε − δ)``), the
    corner ``σ = ±1`` of each row the sign of its residual under the LS-SVM of the same weights
    on the targets ``y`` (that residual is ``α / w``: the same factorization, one more solve).
    ``share``: the share of those rows whose α then lies inside its corner's range
    (``0 < σ α < C s``), those the start placed consistently. SVR's regime of the corner start:
    targets a smooth function can pass within ε of (a fuzz case, 6,000 rows, noise-free targets
    of spread 1, ε = 0.01, C = 10: 89 % of the rows free support vectors on the tube's edges;
    the same signs as scikit-learn's solution at 98.3 % of the rows, 3 Newton steps from
    here against 304 from α = 0)."""
    eps, delta = float(loss.params["epsilon"]), float(loss.params["delta"])
    solve = _ls_svm_system(K, Cs * (0.5 / delta), grp, xp=xp, low=low)
    a0, _ = solve(y)
    sgn = _signs(a0, xp=xp)  # (the residuals' signs)
    alpha, b = solve(y - (eps - delta) * sgn)
    ta = sgn * alpha
    inside, rows = fetch_scalars(xp.sum(xp.astype((ta > 0) & (ta < Cs), xp.float64)),
                                 xp.sum(xp.astype(Cs > 0, xp.float64)), xp=xp)
    return alpha, b, inside / max(rows, 1.0)


def _strided(K, stride, *, xp):
    """K's every ``stride``-th row and column, a copy (a
    :class:`~svmgpu.kernels.KernelRows`' own strided rows)."""
    # (a strided copy: a gather of the rows then the columns copied 5,000 whole rows of a
    # 20,000-row K first, 400 MB of fresh memory, 1.1 s of a 3.5 s fit)
    return K.strided(stride) if isinstance(K, KernelRows) else \
        xp.asarray(K[::stride, ::stride], copy=True)


def _svr_corner_probe(K, y, loss, Cs, grp, s, *, xp, dev):
    """SVR's corner start for a problem whose first Newton steps from α = 0 were damped
    (:func:`_svr_corners`): ``(alpha, b)``, or None where fewer than
    :data:`CORNER_START_SHARE` of the rows sit consistently in its corners
    (:data:`SVR_SMALL_CORNER_SHARE` below :data:`SVR_PROBE_ROWS` rows). From
    :data:`SVR_PROBE_ROWS` rows the share is read first on every fourth row (a sixty-fourth
    of the factorization): friedman1 (2,000 rows, noise 1, SVR's defaults) shares 7 %, and
    the whole problem's corner start had cost 0.08 s of a 0.06 s fit."""
    m = K.shape[0]
    low = K.dtype == xp.float32 and m >= MIXED_MIN_ORDER

    def dense(A):
        return A.full() if isinstance(A, KernelRows) else A

    if m >= SVR_PROBE_ROWS:
        sub = xp.arange(0, m, 4, device=dev)
        _, _, share = _svr_corners(dense(_strided(K, 4, xp=xp)), xp.take(y, sub), loss,
                                   xp.take(Cs, sub), _Intercepts(
                                       None, None if s is None else xp.take(s, sub), xp=xp,
                                       dev=dev), xp=xp, low=low)
        _log.debug(fields(svr_corners_quarter=share))
        if share < CORNER_START_SHARE:
            return None
    alpha, b, share = _svr_corners(dense(K), y, loss, Cs, grp, xp=xp, low=low)
    _log.debug(fields(svr_corners=share))
    need = SVR_SMALL_CORNER_SHARE if m < SVR_PROBE_ROWS else CORNER_START_SHARE
    return (alpha, b[0]) if share >= need else None


def _check_corners_of(wide, loss):
    """``exact_newton(corners_of=wide)``'s loss: ``loss`` itself ('huber' or
    'huber_epsilon_insensitive') of the same ε, else a ValueError."""
    eps = float(loss.params.get("epsilon", 0.0))
    if wide.name != loss.name or loss.name not in ("huber", "huber_epsilon_insensitive") or \
            float(wide.params.get("epsilon", 0.0)) != eps:
        raise ValueError(f"corners_of must be the loss {loss.name!r} with the same epsilon "
                         f"and wider corners ('huber' or 'huber_epsilon_insensitive'); got "
                         f"{wide.name!r} {wide.params}")


def _signs(v, *, xp):
    """±1 (float64) by the sign of ``v``, 0 counted as +."""
    return 1.0 - 2.0 * xp.astype(v < 0, xp.float64)


def _narrowed_corners(r, a, c, wide, loss, weighted, *, xp):
    """``(a, c)`` of the first Newton step of a narrowing (``exact_newton(corners_of=)``):
    the rows whose residuals ``r`` lie in the quadratic pieces of ``wide`` (``loss`` with wider
    Huber corners: the ε-insensitive loss of the same ε, or the Huber loss) are placed in
    ``loss``'s quadratic piece of the same sign, ``ψ'(r) = c (r ∓ (ε − δ))`` with
    ``c = 1 / (2δ)`` (the Huber loss: ``ψ'(r) = r / δ``); the others keep ``(a, c)`` (their
    pieces under ``loss``; ``wide`` checked by :func:`_check_corners_of`)."""
    inside = wide.curvature(r, xp=xp) > 0
    if weighted is not None:
        inside = inside & (weighted > 0)
    delta = float(loss.params["delta"])
    if loss.name == "huber":
        return xp.where(inside, xp.zeros_like(a), a), \
            xp.where(inside, xp.full_like(c, 1.0 / delta), c)
    eps, sgn = float(loss.params["epsilon"]), _signs(r, xp=xp)
    cq = 0.5 / delta
    return xp.where(inside, -cq * (eps - delta) * sgn, a), xp.where(inside, xp.full_like(c, cq), c)


def max_diagonal(K, *, xp):
    """The largest diagonal entry of K (a :class:`~svmgpu.kernels.KernelRows` from its
    kernel's ``diag``, no row computed): a host float."""
    d = K.kernel.diag(K.X) if isinstance(K, KernelRows) else xp.linalg.diagonal(K)
    return float(fetch_scalars(xp.max(d), xp=xp)[0])


def _device(K):
    """The device of K (an array or :class:`~svmgpu.kernels.KernelRows`)."""
    return getattr(K.store if isinstance(K, KernelRows) else K, "device", None)


def _scatter(idx, values, m, *, xp, dev):
    """An (m,) float64 vector with ``values`` at ``idx`` and zeros elsewhere."""
    return set_rows(xp.zeros((m,), dtype=xp.float64, device=dev), idx, values, xp=xp)


__all__ = ["exact_newton", "kernel_dominance", "max_diagonal", "newton_space"]
