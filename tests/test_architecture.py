"""The package's layers (docs/architecture.md): imports run one way, counting the imports inside
functions, and nothing in the package reaches into bench/."""

import ast
import pathlib

import svmgpu

PACKAGE = pathlib.Path(svmgpu.__file__).parent

#: The layers from the bottom; a unit may import its own layer's modules and those below.
LAYERS = [{"backend", "_log"}, {"kernels", "losses"}, {"lowrank"}, {"solvers"}, {"distributed"},
          {"estimators"}, {"io", "datasets", "testing"}, {"cli", "__main__", "__init__"}]
LEVEL = {unit: k for k, layer in enumerate(LAYERS) for unit in layer}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports():
    """(importing unit, imported unit, file, line) of every svmgpu import, at any depth."""
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                if name.startswith("svmgpu.") and _unit(name) != _unit(module):
                    yield _unit(module), _unit(name), path.name, node.lineno
                if name.split(".")[0] in ("bench", "_common", "_cases"):
                    yield _unit(module), "bench", path.name, node.lineno


def test_every_unit_has_a_layer():
    units = {_unit(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts))
             for p in PACKAGE.rglob("*.py")}
    assert units <= set(LEVEL), units - set(LEVEL)


def test_imports_run_one_way_and_never_into_bench():
    upward = [f"{src} imports {dst} ({f}:{line})" for src, dst, f, line in _imports()
              if dst == "bench" or LEVEL[dst] > LEVEL[src]]
    assert not upward, upward


def test_the_import_graph_has_no_cycle():
    edges = {}
    for src, dst, _, _ in _imports():
        edges.setdefault(src, set()).add(dst)
    state = {}

    def visit(u, path):
        state[u] = "open"
        for v in edges.get(u, ()):
            assert state.get(v) != "open", " -> ".join([*path, v])
            if v not in state:
                visit(v, [*path, v])
        state[u] = "done"

    for u in list(edges):
        if u not in state:
            visit(u, [u])
