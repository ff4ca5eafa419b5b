"""The notebooks of ``notebooks/`` run, at small scale, and produce their results.

No Jupyter kernel: each notebook's code cells are joined and executed in a fresh namespace,
in the notebook's directory (so relative paths resolve as in Jupyter), with matplotlib's Agg
backend and the size parameters of the first code cell shrunk through environment variables.
"""

import json
import os
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # (a cluster / notebook runs: see pyproject's markers)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))

#: Small scale: a few thousand points, few solver iterations, a small rank.
SMALL = {"SVMGPU_NB_SCALE_N": "2500", "SVMGPU_NB_MAX_ITER": "25", "SVMGPU_NB_RANK": "80"}


def _load(name):
    return json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))


def _code(nb):
    return [("".join(c["source"]) if isinstance(c["source"], list) else c["source"])
            for c in nb["cells"] if c["cell_type"] == "code"]


def test_notebooks_exist():
    assert ALL == ["01_checkerboard_million.ipynb", "02_covtype.ipynb", "03_paper_tables.ipynb",
                   "04_label_noise.ipynb"]


@pytest.mark.parametrize("name", ALL)
def test_notebook_format(name):
    """Valid nbformat-4 JSON: cells with ids, sources, no stored outputs; the first code cell
    sets the size from SVMGPU_NB_SCALE_N."""
    nb = _load(name)
    assert nb["nbformat"] == 4 and nb["nbformat_minor"] >= 4
    assert nb["metadata"]["kernelspec"]["language"] == "python"
    ids = set()
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert isinstance(cell["source"], (list, str)) and isinstance(cell["metadata"], dict)
        if nb["nbformat_minor"] >= 5:
            assert cell["id"] not in ids
            ids.add(cell["id"])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    assert nb["cells"][0]["cell_type"] == "markdown"
    code = _code(nb)
    assert "SVMGPU_NB_SCALE_N" in code[0]
    for i, src in enumerate(code):  # plain Python: no IPython magics or shell escapes
        assert not any(line.lstrip().startswith(("%", "!")) for line in src.splitlines()), i
        compile(src, f"{name} cell {i}", "exec")


def _run(name, monkeypatch):
    pytest.importorskip("matplotlib", reason="the notebooks plot with matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from threadpoolctl import threadpool_limits

    for k, v in SMALL.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(NOTEBOOKS)
    source = "\n\n".join(_code(_load(name)))
    ns = {"__name__": "__main__"}
    # One BLAS thread: on small problems the thread pools of NumPy's and SciPy's OpenBLAS
    # spin against each other on a 2-core machine, which makes these runs many times slower.
    try:
        with threadpool_limits(1), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(source, name, "exec"), ns)
    finally:
        plt.close("all")
    return ns


def _accuracies_ok(values, low=50.0):
    values = list(values)
    return values and all(low < v <= 100.0 for v in values)


def test_01_checkerboard_million(monkeypatch):
    ns = _run("01_checkerboard_million.ipynb", monkeypatch)
    assert ns["N_SAMPLES"] == 2500
    res = ns["results"]
    assert len(res) == len(ns["LOSSES"]) * len(ns["DEVICES"])
    assert _accuracies_ok(r["accuracy (%)"] for r in res)
    best = {r["loss"]: r["accuracy (%)"] for r in res if r["device"] == "cpu"}
    assert best["squared_hinge"] > 90.0 and best["truncated_squared_hinge"] > 90.0
    if "cuda" in ns["DEVICES"]:
        assert ns["speedups"] and _accuracies_ok(r["accuracy (%)"] for r in ns["results_3m"])


def test_02_covtype(monkeypatch):
    default = NOTEBOOKS / ".." / ".." / "shared" / "data" / "covtype.data.gz"
    if "SVMGPU_COVTYPE" not in os.environ and not default.exists():
        pytest.skip(f"Covtype is not at {default.resolve()} (set SVMGPU_COVTYPE)")
    ns = _run("02_covtype.ipynb", monkeypatch)
    assert ns["N_TRAIN"] == 2500 and ns["RANK"] == 80
    assert ns["X"].min() >= 0.0 and ns["X"].max() <= 1.0  # scaled on the training rows
    assert len(ns["results"]) == 3 and len(ns["sweep"]) == 3
    assert _accuracies_ok((r["accuracy (%)"] for r in ns["results"] + ns["sweep"]), low=60.0)
    assert ns["part"].solver_ == "partition" and _accuracies_ok([ns["partition"]["accuracy (%)"]],
                                                               low=60.0)


def test_03_paper_tables(monkeypatch):
    ns = _run("03_paper_tables.ipynb", monkeypatch)
    assert ns["SMALL"]
    rows = ns["table_unisvm"]
    assert [r["algorithm"] for r in rows] == [f"UniSVM{k}" for k in range(1, 11)]
    assert _accuracies_ok(r["accuracy (%)"] for r in rows)
    if ns["ReducedSVC"] is not None:
        assert len(ns["table_zhou"]) == 16
        assert all(0.0 <= r["error (%)"] < 20.0 for r in ns["table_zhou"])
    if ns["GreedySVC"] is not None:
        assert [r["data"] for r in ns["table_gs"]] == ["Iris", "Wine", "Wdbc"]
        assert all(0.0 <= r[k] < 0.3 for r in ns["table_gs"] for k in ("GS-SVM", "HM-SVM", "SVM"))
    if ns["L2SVMPath"] is not None:
        assert len(ns["table_path"]) == 1
        assert all(10.0 < r["error (%)"] < 30.0 for r in ns["table_path"])  # Bayes: 12.11 %


def test_04_label_noise(monkeypatch):
    ns = _run("04_label_noise.ipynb", monkeypatch)
    acc = ns["acc"]
    assert len(acc) == len(ns["LOSS_NAMES"]) * len(ns["NOISE"]) == 36
    assert _accuracies_ok(acc.values())
    # clean labels are learnt well by the squared hinge
    assert acc["squared_hinge", 0.0] > 90.0
