"""Reference data sets of the papers: Checkerboard, Covtype, LIBSVM/svmlight files.

Generators
----------
make_checkerboard
    Uniform random points in the unit square labelled by the parity of their grid cell.
checkerboard_grid
    The papers' discretized Checkerboard (e.g. Zhou 2013's 200 x 200 integer grid).
flip_labels
    Label noise: flip an exact fraction of binary labels.

Loaders
-------
load_covtype
    UCI ``covtype.data(.gz)`` or LIBSVM ``covtype.libsvm.binary(.bz2)``, from a user path.
load_svmlight, dump_svmlight
    LIBSVM/svmlight text files, plain or compressed.
"""

from ._checkerboard import checkerboard_grid, flip_labels, make_checkerboard
from ._covtype import (
    COVTYPE_LIBSVM_URL,
    COVTYPE_N_FEATURES,
    COVTYPE_N_SAMPLES,
    COVTYPE_UCI_URL,
    load_covtype,
)
from ._svmlight import dump_svmlight, load_svmlight

__all__ = [
    "make_checkerboard",
    "checkerboard_grid",
    "flip_labels",
    "load_covtype",
    "load_svmlight",
    "dump_svmlight",
    "COVTYPE_UCI_URL",
    "COVTYPE_LIBSVM_URL",
    "COVTYPE_N_SAMPLES",
    "COVTYPE_N_FEATURES",
]
