"""``python -m tollway``: the ``tollway`` command."""

import sys

from tollway.cli import main

sys.exit(main())
