"""``python -m svmgpu``: see :mod:`svmgpu.cli`."""

import sys

from svmgpu.cli import main

if __name__ == "__main__":
    sys.exit(main())
