"""Tests of the LS-DC losses (UniSVM paper, Table 5, eqs. (18)-(22))."""

import math
import warnings

import array_api_strict
import numpy as np
import pytest

from svmgpu.backend import to_device
from svmgpu.losses import LOSSES, Loss, get_loss, nonconvex_exp_M
from svmgpu.testing import assert_allclose, assert_array_equal

# (task, name, params, kinks, tight) -- kinks: points where psi' is discontinuous or psi'' jumps
# (finite differences avoid them); tight: sup psi'' / (2 A_min), 1 when Table 5's A is optimal.
CASES = [
    ("classification", "least_squares", {}, [], 1.0),
    ("classification", "truncated_least_squares", {}, [-math.sqrt(2), math.sqrt(2)], 1.0),
    ("classification", "truncated_least_squares", {"a": 0.5}, [-0.5**0.5, 0.5**0.5], 1.0),
    ("classification", "squared_hinge", {}, [0.0], 1.0),
    ("classification", "truncated_squared_hinge", {}, [0.0, math.sqrt(2)], 1.0),
    ("classification", "smooth_hinge", {}, [], 1.0),
    ("classification", "smooth_hinge", {"p": 1.0}, [], 1.0),
    ("classification", "huber_hinge", {}, [-0.5, 0.5], 1.0),
    ("classification", "huber_hinge", {"delta": 2.0}, [-2.0, 2.0], 1.0),
    ("classification", "smooth_ramp", {}, [0.0, 1.0, 2.0], 1.0),
    ("classification", "smooth_ramp", {"a": 1.0}, [0.0, 0.5, 1.0], 1.0),
    ("classification", "smooth_ramp_log", {}, [], 1.0),
    ("classification", "smooth_ramp_log", {"a": 1.0, "p": 8.0}, [], 0.9986),
    ("classification", "nonconvex_exp", {}, [0.0], 1.0),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 2.0, "c": 4.0}, [], 1.0),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 3.0, "c": 4.0}, [], 1.0),
    ("classification", "nonconvex_exp", {"a": 1.0, "b": 0.5, "c": 2.5}, [0.0], 1.0),
    ("classification", "nonconvex_exp", {"a": 1.0, "b": 2.0, "c": 10.0}, [], 1.0),
    ("regression", "least_squares", {}, [], 1.0),
    ("regression", "truncated_least_squares", {}, [-math.sqrt(2), math.sqrt(2)], 1.0),
    # epsilon = 0.1, p = 100: the two sigmoid bumps of psi'' do not overlap, sup psi'' ~ p/4
    ("regression", "smooth_epsilon_insensitive", {}, [], 0.5),
    ("regression", "smooth_epsilon_insensitive", {"epsilon": 0.0, "p": 10.0}, [], 1.0),
    ("regression", "huber", {}, [-0.1, 0.1], 1.0),
    ("regression", "huber", {"delta": 1.5}, [-1.5, 1.5], 1.0),
    ("regression", "smooth_absolute", {}, [], 1.0),
    ("regression", "smooth_absolute", {"p": 3.0}, [], 1.0),
    ("regression", "truncated_huber", {}, [-2.05, -0.1, 0.1, 2.05], 1.0),
    # a < delta / 2: truncated inside the quadratic zone, at |u| = sqrt(2 delta a)
    ("regression", "truncated_huber", {"delta": 1.0, "a": 0.18}, [-0.6, 0.6], 1.0),
]
IDS = [f"{t[:3]}-{n}-" + "-".join(f"{k}{v:g}" for k, v in p.items()) for t, n, p, _, _ in CASES]
BOUNDED = {"truncated_least_squares", "truncated_squared_hinge", "smooth_ramp",
           "smooth_ramp_log", "nonconvex_exp", "truncated_huber"}
QUADRATIC_GROWTH = {"least_squares", "squared_hinge"}


def _loss(case):
    task, name, params = case[:3]
    return get_loss(name, task, **params)


def _second_differences(f, u, h):
    v = f(u)
    return (v[2:] - 2.0 * v[1:-1] + v[:-2]) / h**2


@pytest.mark.parametrize("task,name,params", [
    ("classification", "huber_hinge", {"delta": 0.3}),
    ("regression", "huber", {"delta": 0.2}),
    ("regression", "huber_epsilon_insensitive", {"epsilon": 0.5, "delta": 0.2}),
    ("regression", "huber_epsilon_insensitive", {"epsilon": 0.2, "delta": 0.2})])
def test_knots_are_where_the_pieces_change(task, name, params):
    """``knots()``: ψ is one quadratic between neighbouring knots (and beyond the last ones),
    and a different one across each knot."""
    loss = get_loss(name, task, **params)
    k = np.array(loss.knots())
    assert np.all(np.diff(k) >= 0)
    edges = np.unique(np.concatenate([[k[0] - 3.0], k, [k[-1] + 3.0]]))
    fits = []
    for a, b in zip(edges[:-1], edges[1:]):
        u = np.linspace(a, b, 41)[1:-1]
        c = np.polyfit(u, loss.value(u), 2)
        assert_allclose(np.polyval(c, u), loss.value(u), rtol=0, atol=1e-12)
        fits.append(c)
    for c0, c1 in zip(fits[:-1], fits[1:]):
        assert np.max(np.abs(c0 - c1)) > 1e-3


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_knots_are_the_kinks_or_none(case):
    knots = _loss(case).knots()
    assert knots is None or list(knots) == pytest.approx(case[3], abs=1e-15)
    assert knots is not None or case[1] not in ("huber_hinge", "huber")


# ------------------------------------------------------------------------------ names, API
def test_registry_names():
    assert set(LOSSES) == {"classification", "regression"}
    assert set(LOSSES["classification"]) == {
        "least_squares", "truncated_least_squares", "squared_hinge", "truncated_squared_hinge",
        "huber_hinge", "smooth_hinge", "smooth_ramp", "smooth_ramp_log", "nonconvex_exp"}
    assert set(LOSSES["regression"]) == {
        "least_squares", "truncated_least_squares", "smooth_epsilon_insensitive", "huber",
        "smooth_absolute", "truncated_huber", "huber_epsilon_insensitive"}
    for task, names in LOSSES.items():
        for name, cls in names.items():
            loss = get_loss(name, task)
            assert isinstance(loss, Loss) and isinstance(loss, cls)
            assert loss.name == name and loss.task == task
            assert loss.convex == (name not in BOUNDED)
            assert isinstance(loss.A_min, float) and loss.A_min > 0
            assert all(isinstance(v, float) for v in loss.params.values())


def test_defaults_from_the_paper():
    # Section 5.2 (UniSVM1-10 and regression UniSVM1-6), Section 5.1.2 (a = 2)
    assert get_loss("truncated_squared_hinge").params == {"a": 2.0}
    assert get_loss("truncated_least_squares").params == {"a": 2.0}
    assert get_loss("smooth_hinge").params == {"p": 10.0}
    assert get_loss("smooth_ramp").params == {"a": 2.0}
    assert get_loss("smooth_ramp_log").params == {"a": 2.0, "p": 10.0}
    assert get_loss("nonconvex_exp").params == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert get_loss("smooth_epsilon_insensitive", "regression").params == {"epsilon": 0.1,
                                                                           "p": 100.0}
    assert get_loss("huber", "regression").params == {"delta": 0.1}
    assert get_loss("smooth_absolute", "regression").params == {"p": 100.0}
    assert get_loss("truncated_huber", "regression").params == {"delta": 0.1, "a": 2.0}


def test_params_is_a_copy_and_repr_round_trips():
    loss = get_loss("smooth_ramp_log", a=1.5, p=4)
    loss.params["a"] = 99.0
    assert loss.params == {"a": 1.5, "p": 4.0}
    again = eval(repr(loss), {"get_loss": get_loss})
    assert (again.name, again.task, again.params) == (loss.name, loss.task, loss.params)


def test_get_loss_accepts_an_instance():
    loss = get_loss("huber", "regression", delta=0.5)
    assert get_loss(loss, "regression") is loss
    with pytest.raises(ValueError, match="task"):
        get_loss(loss, "classification")
    with pytest.raises(ValueError, match="parameters"):
        get_loss(loss, "regression", delta=1.0)


# ------------------------------------------------------------------------------ A_min
@pytest.mark.parametrize("task,name,params,expected", [
    ("classification", "least_squares", {}, 1.0),
    ("classification", "truncated_least_squares", {"a": 5.0}, 1.0),
    ("classification", "squared_hinge", {}, 1.0),
    ("classification", "truncated_squared_hinge", {"a": 0.3}, 1.0),
    ("classification", "smooth_hinge", {"p": 10.0}, 10 / 8),
    ("classification", "smooth_ramp", {"a": 2.0}, 1.0),
    ("classification", "smooth_ramp", {"a": 0.5}, 4.0),
    ("classification", "smooth_ramp_log", {"a": 2.0, "p": 10.0}, 10 / 8),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 2.0, "c": 2.0}, 1.0),  # M(2,2,2) = 2
    ("classification", "nonconvex_exp", {"a": 3.0, "b": 3.0, "c": 2.0}, 1.0),  # loss (12)
    ("classification", "nonconvex_exp", {"a": 5.0, "b": 2.0, "c": 2.0}, 2.5),  # a / b
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 2.0, "c": 4.0}, 4.5707 / 2),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 3.0, "c": 4.0}, 3.7319 / 2),
    ("regression", "least_squares", {}, 1.0),
    ("regression", "truncated_least_squares", {}, 1.0),
    ("regression", "smooth_epsilon_insensitive", {"p": 100.0}, 25.0),
    ("regression", "huber", {"delta": 0.1}, 5.0),
    ("regression", "smooth_absolute", {"p": 100.0}, 25.0),
    ("regression", "truncated_huber", {"delta": 0.25, "a": 1.0}, 2.0),
])
def test_A_min_values(task, name, params, expected):
    # the nonconvex_exp values with c = 4 are the paper's, printed to 4 decimals (App. A.1 (h))
    assert get_loss(name, task, **params).A_min == pytest.approx(expected, rel=2e-5)


def test_M_is_continuous_at_c_2():
    assert nonconvex_exp_M(2.0, 2.0, 2.0) == 2.0
    assert nonconvex_exp_M(2.0, 2.0, 2.0 + 1e-9) == pytest.approx(2.0, rel=1e-6)


def test_A_validation():
    loss = get_loss("smooth_hinge", p=16.0)
    assert loss.A() == loss.A(None) == 2.0
    assert loss.A(2.0) == 2.0 and loss.A(7) == 7.0
    assert isinstance(loss.A(np.float32(3.0)), float)
    for bad in [1.9, 0.0, -1.0, float("nan"), float("inf"), True, "3"]:
        with pytest.raises(ValueError, match=r"A_min = 2\b"):
            loss.A(bad)


# ------------------------------------------------------------------------------ formulas
@pytest.mark.parametrize("task,name,params,u,value,grad", [
    ("classification", "least_squares", {}, 3.0, 9.0, 6.0),
    ("classification", "least_squares", {}, -0.5, 0.25, -1.0),
    ("classification", "truncated_least_squares", {"a": 2.0}, 1.0, 1.0, 2.0),
    ("classification", "truncated_least_squares", {"a": 2.0}, -3.0, 2.0, 0.0),
    ("classification", "squared_hinge", {}, 2.0, 4.0, 4.0),
    ("classification", "squared_hinge", {}, -1.0, 0.0, 0.0),
    ("classification", "truncated_squared_hinge", {"a": 2.0}, 3.0, 2.0, 0.0),  # min(9, 2)
    ("classification", "truncated_squared_hinge", {"a": 4.0}, 3.0, 4.0, 0.0),  # min(9, 4)
    ("classification", "truncated_squared_hinge", {"a": 2.0}, 1.0, 1.0, 2.0),
    ("classification", "truncated_squared_hinge", {"a": 2.0}, -1.0, 0.0, 0.0),
    # Huber hinge, delta = 0.5: (u + δ)²/(4δ) inside, u right of δ, 0 left of -δ
    ("classification", "huber_hinge", {"delta": 0.5}, 0.0, 0.125, 0.5),
    ("classification", "huber_hinge", {"delta": 0.5}, 2.0, 2.0, 1.0),
    ("classification", "huber_hinge", {"delta": 0.5}, -0.7, 0.0, 0.0),
    # log(1 + e^(pu)) / p
    ("classification", "smooth_hinge", {"p": 10.0}, 0.0, math.log(2) / 10, 0.5),
    ("classification", "smooth_hinge", {"p": 10.0}, 1.0, 1 + math.log1p(math.exp(-10)) / 10,
     1 / (1 + math.exp(-10))),
    ("classification", "smooth_hinge", {"p": 2.0}, -1.0, math.log1p(math.exp(-2)) / 2,
     1 / (1 + math.exp(2))),
    # (18), a = 2: (2/a) u^2 = u^2 left of 1, 2 - (2 - u)^2 right of 1
    ("classification", "smooth_ramp", {"a": 2.0}, 0.5, 0.25, 1.0),
    ("classification", "smooth_ramp", {"a": 2.0}, 1.0, 1.0, 2.0),
    ("classification", "smooth_ramp", {"a": 2.0}, 1.5, 1.75, 1.0),
    ("classification", "smooth_ramp", {"a": 2.0}, 3.0, 2.0, 0.0),
    ("classification", "smooth_ramp", {"a": 2.0}, -1.0, 0.0, 0.0),
    ("classification", "smooth_ramp", {"a": 4.0}, 1.0, 0.5, 1.0),  # (2/4) 1^2, (4/4) 1
    # (19), a = 2, p = 10: psi(1) = log((1 + e^10) / (1 + e^-10)) / 10 = 1 exactly
    ("classification", "smooth_ramp_log", {"a": 2.0, "p": 10.0}, 1.0, 1.0, math.tanh(5)),
    ("classification", "smooth_ramp_log", {"a": 2.0, "p": 10.0}, 0.0,
     math.log(2 / (1 + math.exp(-20))) / 10, 0.5 - 1 / (1 + math.exp(20))),
    ("classification", "smooth_ramp_log", {"a": 1.0, "p": 1.0}, 3.0,
     math.log((1 + math.exp(3)) / (1 + math.exp(2))),
     1 / (1 + math.exp(-3)) - 1 / (1 + math.exp(-2))),
    # (20): a (1 - exp(-u_+^c / b)), derivative (a c / b) u^(c-1) exp(-u^c / b)
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 2.0, "c": 2.0}, 1.0,
     2 * (1 - math.exp(-0.5)), 2 * math.exp(-0.5)),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 3.0, "c": 4.0}, 2.0,
     2 * (1 - math.exp(-16 / 3)), 2 * 4 / 3 * 8 * math.exp(-16 / 3)),
    ("classification", "nonconvex_exp", {"a": 2.0, "b": 3.0, "c": 4.0}, -2.0, 0.0, 0.0),
    ("regression", "least_squares", {}, -2.0, 4.0, -4.0),
    ("regression", "truncated_least_squares", {"a": 2.0}, 1.2, 1.44, 2.4),
    ("regression", "truncated_least_squares", {"a": 2.0}, 1.5, 2.0, 0.0),
    # (22), eps = 0.1, p = 100
    ("regression", "smooth_epsilon_insensitive", {"epsilon": 0.1, "p": 100.0}, 0.0,
     2 * math.log1p(math.exp(-10)) / 100, 0.0),
    ("regression", "smooth_epsilon_insensitive", {"epsilon": 0.1, "p": 100.0}, 0.5,
     0.4 + (math.log1p(math.exp(-40)) + math.log1p(math.exp(-60))) / 100,
     1 / (1 + math.exp(-40)) - 1 / (1 + math.exp(60))),
    ("regression", "smooth_epsilon_insensitive", {"epsilon": 0.5, "p": 2.0}, -1.0,
     (math.log1p(math.exp(1)) + math.log1p(math.exp(-3))) / 2,
     1 / (1 + math.exp(3)) - 1 / (1 + math.exp(-1))),
    ("regression", "huber", {"delta": 0.1}, 0.05, 0.0125, 0.5),
    ("regression", "huber", {"delta": 0.1}, 1.0, 0.95, 1.0),
    ("regression", "huber", {"delta": 0.1}, -2.0, 1.95, -1.0),
    ("regression", "smooth_absolute", {"p": 100.0}, 0.0, 2 * math.log(2) / 100, 0.0),
    ("regression", "smooth_absolute", {"p": 2.0}, -1.0,
     (math.log1p(math.exp(2)) + math.log1p(math.exp(-2))) / 2, math.tanh(-1.0)),
    ("regression", "truncated_huber", {"delta": 0.1, "a": 2.0}, 1.0, 0.95, 1.0),
    ("regression", "truncated_huber", {"delta": 0.1, "a": 2.0}, -2.0, 1.95, -1.0),
    ("regression", "truncated_huber", {"delta": 0.1, "a": 2.0}, 2.04, 1.99, 1.0),
    ("regression", "truncated_huber", {"delta": 0.1, "a": 2.0}, 3.0, 2.0, 0.0),
    ("regression", "truncated_huber", {"delta": 0.1, "a": 2.0}, 0.05, 0.0125, 0.5),
    # (|u| − ε)₊ with Huber corners: flat, the corner's middle, beyond (ε = 0.2, δ = 0.1)
    ("regression", "huber_epsilon_insensitive", {"epsilon": 0.2, "delta": 0.1}, 0.05, 0.0, 0.0),
    ("regression", "huber_epsilon_insensitive", {"epsilon": 0.2, "delta": 0.1}, 0.2, 0.025, 0.5),
    ("regression", "huber_epsilon_insensitive", {"epsilon": 0.2, "delta": 0.1}, -1.0, 0.8, -1.0),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hand_computed_values(task, name, params, u, value, grad, dtype):
    loss = get_loss(name, task, **params)
    x = np.array([u], dtype=dtype)
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=2e-6, atol=1e-6)
    assert_allclose(loss.value(x), [value], dtype=dtype, shape=(1,), **tol)
    assert_allclose(loss.grad(x), [grad], dtype=dtype, shape=(1,), **tol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_grad_matches_central_differences(case):
    loss, kinks = _loss(case), case[3]
    h = 1e-6
    u = np.linspace(-4.0, 4.0, 1601) + 1e-3 / 7  # off the kinks of the default parameters
    if kinks:
        u = u[np.min(np.abs(u[:, None] - np.array(kinks)[None, :]), axis=1) > 1e-4]
    fd = (loss.value(u + h) - loss.value(u - h)) / (2 * h)
    assert_allclose(loss.grad(u), fd, rtol=1e-6, atol=1e-6 * max(1.0, loss.A_min))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_value_continuous(case):
    # no jumps (the only discontinuities allowed are of psi'): |psi(u + h) - psi(u)| <= L h
    loss = _loss(case)
    u = np.linspace(-5.0, 5.0, 100001)
    jumps = np.abs(np.diff(loss.value(u)))
    slope = np.maximum(np.abs(loss.grad(u[1:])), np.abs(loss.grad(u[:-1])))
    assert np.all(jumps <= (slope + 2 * loss.A_min * 1e-4 + 1e-9) * (u[1] - u[0]))


# ------------------------------------------------------------------------------ LS-DC property
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lsdc_decomposition_convex_at_A_min(case):
    loss, tight = _loss(case), case[4]
    A = loss.A()
    h = 1e-3
    u = np.arange(-6000, 6001) * h + h / 3
    d2_psi = _second_differences(loss.value, u, h)
    # A u^2 - psi(u) convex: 2A - psi'' >= 0 (up to rounding in the second differences)
    assert np.min(2.0 * A - d2_psi) >= -1e-5 * (1.0 + A)
    # Table 5's A against the numerical sup psi'' / 2: the bound is valid, and tight as stated
    assert np.max(d2_psi) / (2.0 * A) == pytest.approx(tight, rel=2e-3, abs=2e-3)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_smaller_A_breaks_convexity(case):
    loss, tight = _loss(case), case[4]
    h = 1e-3
    u = np.arange(-6000, 6001) * h + h / 3
    d2_psi = _second_differences(loss.value, u, h)
    # below the tight constant A u^2 - psi(u) has a negative second derivative somewhere
    A = 0.5 * tight * loss.A_min
    assert np.min(2.0 * A - d2_psi) < -0.5 * tight * loss.A_min


def test_smooth_epsilon_insensitive_bound_is_conservative_for_large_p_epsilon():
    # psi'' = p s(1-s) at p(u +- eps): with p eps >> 1 the bumps do not add up and
    # sup psi'' ~ p/4, so A = p/8 already works; Table 5's p/4 is valid but 2x larger.
    loss = get_loss("smooth_epsilon_insensitive", "regression", epsilon=0.1, p=100.0)
    assert loss.A_min == 25.0
    h = 1e-4
    u = np.arange(-5000, 5001) * h
    d2 = _second_differences(loss.value, u, h)
    assert np.min(2 * 12.6 - d2) >= 0 > np.min(2 * 0.45 * 25.0 - d2)


@pytest.mark.parametrize("abc", [(1.0, 1.0, 2.2), (2.0, 0.3, 3.0), (0.5, 5.0, 6.0),
                                 (1.0, 1.0, 25.0)])
def test_M_matches_numerical_sup_of_second_derivative(abc):
    a, b, c = abc
    loss = get_loss("nonconvex_exp", a=a, b=b, c=c)
    u = np.linspace(0.0, 3.0 * b ** (1 / c), 200001)
    h = u[1] - u[0]
    psi2 = np.diff(loss.grad(u)) / h  # psi'' at the midpoints
    assert np.max(psi2) == pytest.approx(nonconvex_exp_M(a, b, c), rel=1e-6)
    assert loss.A_min == 0.5 * nonconvex_exp_M(a, b, c)


# ------------------------------------------------------------------------------ numerics
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_huge_arguments_are_stable(case, dtype):
    loss, name = _loss(case), case[1]
    big = float(np.finfo(dtype).max)
    u = np.array([-np.inf, -big, -1e30, -1e6, 1e6, 1e30, big, np.inf], dtype=dtype)
    if name in QUADRATIC_GROWTH:  # u^2 genuinely overflows: only the infinities
        u = np.array([-np.inf, -1e6, 1e6, np.inf], dtype=dtype)
    # underflow of exp(-large) to 0 is intended (numpy ignores it by default)
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        value, grad = loss.value(u), loss.grad(u)
    assert value.dtype == grad.dtype == np.dtype(dtype)
    assert not np.any(np.isnan(value)) and not np.any(np.isnan(grad))
    if name not in QUADRATIC_GROWTH:  # (2u and u^2 are infinite at u = +-inf)
        assert np.all(np.isfinite(grad)) and np.all(np.isfinite(value[np.isfinite(u)]))
    if name in BOUNDED:
        assert_array_equal(np.isfinite(value), True)
        # saturated at a for u -> +inf (both tails for the symmetric truncated losses) ...
        symmetric = name in {"truncated_least_squares", "truncated_huber"}
        sat = (np.abs(u) > 0) if symmetric else (u > 0)
        assert_allclose(value[sat], loss.params["a"], rtol=1e-6)
        assert_array_equal(grad[sat], 0.0)
        # ... and exactly 0 for u -> -inf (hinge-type losses)
        assert_array_equal(value[~sat], 0.0)
        assert_array_equal(grad[~sat], 0.0)


def test_linear_tails():
    u = np.array([-1e30, -np.inf, 1e30, np.inf])
    assert_array_equal(get_loss("smooth_hinge").value(u), [0, 0, 1e30, np.inf])
    assert_array_equal(get_loss("smooth_hinge").grad(u), [0, 0, 1, 1])
    for name in ["huber", "smooth_absolute", "smooth_epsilon_insensitive"]:
        loss = get_loss(name, "regression")
        assert_allclose(loss.value(u), np.abs(u), rtol=1e-15)
        assert_array_equal(loss.grad(u), [-1, -1, 1, 1])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float32_in_float32_out(case):
    loss = _loss(case)
    u64 = np.linspace(-4.0, 4.0, 801)
    u32 = u64.astype(np.float32)
    ref_u = u32.astype(np.float64)  # compare on the same (rounded) inputs
    scale = max(1.0, loss.A_min)
    for method in (loss.value, loss.grad):
        out = method(u32)
        assert out.dtype == np.float32 and out.shape == u32.shape
        # kinks of truncation are where psi' jumps: a rounding can land on either side
        ok = np.abs(method(ref_u) - out) <= 1e-5 * scale * (1.0 + np.abs(method(ref_u)))
        assert np.mean(ok) > 0.995


def test_integer_and_multidimensional_input():
    loss = get_loss("squared_hinge")
    out = loss.value(np.array([[-1, 2], [3, 0]]))
    assert out.dtype == np.float64 and out.shape == (2, 2)
    assert_array_equal(out, [[0.0, 4.0], [9.0, 0.0]])
    with pytest.raises(TypeError):
        loss.value(np.array([1 + 2j]))


# ------------------------------------------------------------------------------ backends
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_array_api_strict(case, dtype):
    loss = _loss(case)
    u = np.linspace(-4.0, 4.0, 41).astype(dtype)
    us = array_api_strict.asarray(u, dtype=getattr(array_api_strict, dtype))
    for method in (loss.value, loss.grad):
        out = method(us)
        assert isinstance(out, type(us)) and out.dtype == us.dtype and out.shape == us.shape
        rtol = 1e-14 if dtype == "float64" else 1e-6
        assert_allclose(np.from_dlpack(out), method(u), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", CASES[::3], ids=IDS[::3])
def test_device_arrays(device, case):
    loss = _loss(case)
    u = np.linspace(-4.0, 4.0, 41)
    for dtype in ("float32", "float64"):
        ud = to_device(u.astype(dtype), device)
        for method in (loss.value, loss.grad):
            assert_allclose(method(ud), method(u.astype(dtype)), device=device, dtype=dtype,
                            shape=u.shape, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ errors
def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid names: .*squared_hinge.*truncated_squared_hinge"):
        get_loss("hinge")
    with pytest.raises(ValueError, match="smooth_absolute.*truncated_huber"):
        get_loss("absolute", task="regression")
    with pytest.raises(ValueError, match="regression loss: pass task='regression'"):
        get_loss("huber")
    with pytest.raises(ValueError, match="task"):
        get_loss("huber", task="ranking")


@pytest.mark.parametrize("name,task,params,match", [
    ("truncated_squared_hinge", "classification", {"a": 0.0}, r"'a'.*> 0"),
    ("truncated_least_squares", "regression", {"a": -1.0}, r"'a'.*> 0"),
    ("smooth_hinge", "classification", {"p": 0}, r"'p'.*> 0"),
    ("smooth_ramp", "classification", {"a": -2.0}, r"'a'.*> 0"),
    ("smooth_ramp_log", "classification", {"p": -1.0}, r"'p'.*> 0"),
    ("nonconvex_exp", "classification", {"b": 0.0}, r"'b'.*> 0"),
    ("nonconvex_exp", "classification", {"c": 1.9}, r"'c'.*>= 2"),
    ("smooth_epsilon_insensitive", "regression", {"epsilon": -0.1}, r"'epsilon'.*>= 0"),
    ("huber", "regression", {"delta": 0.0}, r"'delta'.*> 0"),
    ("smooth_absolute", "regression", {"p": float("inf")}, r"'p'.*finite"),
    ("truncated_huber", "regression", {"delta": float("nan")}, r"'delta'.*finite"),
    ("truncated_huber", "regression", {"a": "2"}, r"'a'.*real number"),
    ("smooth_hinge", "classification", {"p": True}, r"'p'.*real number"),
    ("squared_hinge", "classification", {"a": 2.0}, r"unknown parameter.*'a'.*none"),
    ("smooth_ramp_log", "classification", {"delta": 2.0}, r"'delta'.*valid parameters: a, p"),
])
def test_bad_parameters(name, task, params, match):
    with pytest.raises(ValueError, match=match):
        get_loss(name, task, **params)


def test_loss_class_rejects_wrong_task():
    from svmgpu.losses import Huber, SquaredHinge

    with pytest.raises(ValueError, match="regression"):
        Huber(task="classification")
    with pytest.raises(ValueError, match="classification"):
        SquaredHinge(task="regression")


def test_losses_need_no_data_dependent_shapes(monkeypatch):
    """Every loss runs without boolean-mask indexing or ``nonzero``: on a GPU each is a device
    synchronisation. array-api-compat's generic ``clip`` (the one CuPy gets) uses both, four
    reads per Newton step on an H100. The losses see array-api-strict with boolean indexing and
    data-dependent shapes disabled (it raises on either), its ``clip`` replaced by that generic
    one (which also fails there on its ``out[()] = x``)."""
    import array_api_compat
    import array_api_strict as xs
    from array_api_compat.common._aliases import clip as compat_clip

    from svmgpu.backend import clip

    class StrictWithCompatClip:
        def __getattr__(self, name):
            return getattr(xs, name)

        @staticmethod
        def clip(x, /, min=None, max=None):  # noqa: A002
            return compat_clip(x, min, max, xp=xs)

    proxy, strict_array = StrictWithCompatClip(), type(xs.asarray(0.0))
    real = array_api_compat.array_namespace
    monkeypatch.setattr(array_api_compat, "array_namespace",
                        lambda *a, **k: proxy if isinstance(a[0], strict_array) else real(*a, **k))
    u_np = np.linspace(-3.0, 3.0, 61)
    with xs.ArrayAPIStrictFlags(boolean_indexing=False, data_dependent_shapes=False):
        u = xs.asarray(u_np)
        checked = 0
        for task, names in LOSSES.items():
            for name in names:
                loss = ref = get_loss(name, task=task)
                checked += 1
                assert_allclose(np.asarray(loss.value(u)), ref.value(u_np), rtol=1e-12)
                assert_allclose(np.asarray(loss.grad(u)), ref.grad(u_np), rtol=1e-12)
                if loss.piecewise_quadratic:
                    assert_allclose(np.asarray(loss.curvature(u)),
                                               ref.curvature(u_np), rtol=1e-12)
        assert checked == sum(len(v) for v in LOSSES.values()) >= 14
        got = clip(u, min=-1.0, max=2.0, xp=proxy)
        assert_array_equal(np.asarray(got), np.clip(u_np, -1.0, 2.0))
    x32 = np.array([np.nan, -2.0, 0.5, 9.0], dtype=np.float32)
    out = clip(x32, min=0.0, max=1.0, xp=np)
    assert out.dtype == np.float32 and np.isnan(out[0])
    assert_array_equal(out[1:], [0.0, 0.5, 1.0])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_curvature_is_the_second_derivative(case):
    """``curvature`` (Newton's ψ'') against central differences of ``grad`` away from the
    kinks, clipped at 0 where ψ is concave (the curvature of the convex part Newton uses): every
    loss has one."""
    loss, kinks = _loss(case), case[3]
    u = np.linspace(-3.0, 3.0, 1201)
    u = u[np.all(np.abs(u[:, None] - np.asarray(kinks + [99.0])[None, :]) > 1e-3, axis=1)]
    h = 1e-6
    num = np.maximum((loss.grad(u + h) - loss.grad(u - h)) / (2 * h), 0.0)
    assert np.all(loss.curvature(u) >= 0)
    assert np.max(loss.curvature(u)) <= 2 * loss.A_min * (1 + 1e-12)  # sup ψ'' <= 2A (15)
    assert_allclose(loss.curvature(u), num, rtol=1e-5, atol=1e-5 * loss.A_min)
