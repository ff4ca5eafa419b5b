"""Every Python block of README.md runs (issue 13, item 7), at reduced sizes: the blocks run in
order in one namespace (later blocks use the quick start's X, y), with the sizes written there
(10⁶ points and the like) scaled down by the table below."""

import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # the path block plots

README = Path(__file__).resolve().parents[1] / "README.md"

#: The README's sizes and the test's.
SIZES = {"10_000_000": "20_000", "1_000_000": "5_000", "200_000": "5_000", "20_000": "1_000"}


def _blocks():
    text = README.read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def _scaled(code):
    return re.sub("|".join(SIZES), lambda m: SIZES[m.group(0)], code)


def test_readme_has_python_blocks():
    assert len(_blocks()) >= 5


def test_every_readme_python_block_runs_at_a_reduced_size(capsys):
    ns = {"X_test": None}
    for k, code in enumerate(_blocks()):
        if "X_test" in code:  # the probability block predicts the quick start's test set
            ns["X_test"] = ns["Xt"]
        try:
            exec(compile(_scaled(code), f"README.md python block {k + 1}", "exec"), ns)
        except Exception as exc:  # noqa: BLE001 - re-raised with the block
            pytest.fail(f"README python block {k + 1} failed: {type(exc).__name__}: {exc}\n"
                        f"{code}")
    # the quick start's promise: the robust loss on 10 % flipped labels stays accurate
    assert ns["clf"].score(ns["Xt"], ns["yt"]) > 0.95
    out = capsys.readouterr().out
    assert out.strip()  # the blocks' prints ran
