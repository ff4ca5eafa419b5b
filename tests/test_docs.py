"""Every Python block of README.md and of the documentation pages docs/*.md runs (issue 13,
item 7), at reduced sizes. Each page runs in its own namespace, its blocks in order (later
blocks use the names of earlier ones, e.g. the README's quick-start X, y), with the sizes
written there (10⁶ points and the like) scaled down by the table below. The Sphinx build
itself (``sphinx-build -W``) is run by ``.ci/run``."""

import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # the path blocks plot

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README] + sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)

#: The pages' sizes and the test's.
SIZES = {"10_000_000": "20_000", "1_000_000": "5_000", "200_000": "5_000", "20_000": "1_000"}

#: The user guide: one page per estimator family, each with a runnable example.
GUIDE = ["unisvm.md", "reduced.md", "greedy.md", "path.md", "closed_form.md"]


def _blocks(page):
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def _scaled(code):
    return re.sub(r"(?<![\d_])(?:" + "|".join(SIZES) + r")(?![\d_])",
                  lambda m: SIZES[m.group(0)], code)


def _run(page, ns):
    name = page.relative_to(ROOT)
    for k, code in enumerate(_blocks(page)):
        try:
            exec(compile(_scaled(code), f"{name} python block {k + 1}", "exec"), ns)
        except Exception as exc:  # noqa: BLE001 - re-raised with the block
            pytest.fail(f"{name} python block {k + 1} failed: {type(exc).__name__}: {exc}\n"
                        f"{code}")
    return ns


def test_sizes_are_scaled_whole_numbers_only():
    assert _scaled("make_checkerboard(1_000_000); n = 200_000; m = 120_000") == (
        "make_checkerboard(5_000); n = 5_000; m = 120_000")


def test_readme_and_every_guide_page_have_python_blocks():
    assert len(_blocks(README)) >= 5
    for name in GUIDE:
        assert _blocks(DOCS / name), f"docs/{name} has no python block"


def test_every_readme_python_block_runs_at_a_reduced_size(capsys):
    ns = {"__name__": "readme", "X_test": None}
    for k, code in enumerate(_blocks(README)):
        if "X_test" in code:  # the probability block predicts the quick start's test set
            ns["X_test"] = ns["Xt"]
        try:
            exec(compile(_scaled(code), f"README.md python block {k + 1}", "exec"), ns)
        except Exception as exc:  # noqa: BLE001 - re-raised with the block
            pytest.fail(f"README python block {k + 1} failed: {type(exc).__name__}: {exc}\n"
                        f"{code}")
    # the quick start's promise: the robust loss on 10 % flipped labels stays accurate
    assert ns["clf"].score(ns["Xt"], ns["yt"]) > 0.95
    assert capsys.readouterr().out.strip()  # the blocks' prints ran


@pytest.mark.parametrize("page", [p for p in PAGES if p != README and _blocks(p)],
                         ids=lambda p: str(p.relative_to(DOCS)))
def test_every_docs_python_block_runs_at_a_reduced_size(page, capsys):
    _run(page, {"__name__": f"docs.{page.stem}"})
    out = capsys.readouterr().out
    assert out.strip(), f"{page.name}: its examples print nothing"
    if page.name in GUIDE:  # each guide example prints an accuracy (or an R²)
        assert re.search(r"accuracy|R²", out), out
