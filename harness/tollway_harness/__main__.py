"""`python -m tollway_harness` is `tollway-harness`."""

from __future__ import annotations

import sys

from tollway_harness.cli import main

sys.exit(main())
