"""``python -m optdyn ...``: the command line (see :mod:`optdyn.cli`)."""
import sys

from .cli import main

sys.exit(main())
