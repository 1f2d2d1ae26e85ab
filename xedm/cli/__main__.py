"""``python -m xedm.cli``: the ``xedm`` command."""

import sys

from . import main

sys.exit(main())
