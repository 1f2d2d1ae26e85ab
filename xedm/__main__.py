"""``python -m xedm``: the ``xedm`` command (as ``python -m xedm.cli``)."""

import sys

from .cli import main

sys.exit(main())
