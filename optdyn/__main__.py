"""``python -m optdyn ...``: the command line (see :mod:`optdyn.apps.cli`)."""
import sys

from .apps.cli import main

sys.exit(main())
