"""Sphinx configuration: the API reference from the numpydoc docstrings, the Markdown pages
through MyST. Build: ``sphinx-build -W --keep-going -b html docs docs/_build/html``."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's svmgpu, installed or not
os.environ.setdefault("MPLBACKEND", "Agg")

import svmgpu  # noqa: E402

project = "svmgpu"
author = "the svmgpu authors"
copyright = "the svmgpu authors"  # noqa: A001 - Sphinx's name
release = svmgpu.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
templates_path = []

# MyST: $…$ and $$…$$ math (as GitHub renders it), anchors for section links.
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# autodoc: a module page documents the names of its __all__ (imported ones included).
autodoc_default_options = {
    "members": True,
    "member-order": "bysource",
    # scikit-learn's metadata-routing methods: documented by scikit-learn
    "exclude-members": "get_metadata_routing, set_fit_request, set_score_request, "
                       "set_predict_request, set_decision_function_request",
}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections say the types
autosummary_generate = False  # the reference pages are written by hand, no stub files

# numpydoc: methods are documented by autodoc, not listed again as autosummary stubs.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "alabaster"
html_static_path = []
html_theme_options = {"description": "Kernel SVM solvers on CPU and GPU, written once against the "
                                     "Python array API.",
                      "fixed_sidebar": True}
# No search index of the API text, no source copies: keeps the build short.
html_copy_source = False
html_show_sourcelink = False



# ``.. module-members:: svmgpu.backend``: an autosummary table of the module's ``__all__``,
# then one autodoc entry per name, so a reference page documents every public name without
# copying the lists of ``__all__`` by hand.
def _member_lines(modname):
    import importlib
    import inspect

    module = importlib.import_module(modname)
    names = sorted((n for n in module.__all__ if not n.startswith("_")), key=str.lower)
    lines = [f".. currentmodule:: {modname}", "", ".. autosummary::", ""]
    lines += [f"   {n}" for n in names] + [""]
    for n in names:
        obj = getattr(module, n)
        if inspect.isclass(obj):
            kind = "autoexception" if issubclass(obj, BaseException) else "autoclass"
        elif callable(obj):
            kind = "autofunction"
        else:
            kind = "autodata"
        lines += [f".. {kind}:: {modname}.{n}", ""]
    return lines


# numpydoc reports docstring problems (an unknown section, which it then drops from the page) as
# Python warnings, which ``-W`` does not see: they are turned into Sphinx warnings here.
def _route_numpydoc_warnings():
    import warnings

    from sphinx.util import logging

    logger = logging.getLogger("numpydoc")
    show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if "numpydoc" in str(filename):
            logger.warning("numpydoc: %s", text)
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning


def setup(app):
    _route_numpydoc_warnings()
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class ModuleMembers(SphinxDirective):
        required_arguments = 1

        def run(self):
            container = nodes.container()
            lines = StringList(_member_lines(self.arguments[0]), source=self.get_source_info()[0])
            self.state.nested_parse(lines, self.content_offset, container)
            return container.children

    app.add_directive("module-members", ModuleMembers)
    return {"parallel_read_safe": True}
