"""`python -m kemu.ctl`: the same as the `kemuctl` console script."""

from __future__ import annotations

import sys

from kemu.ctl.main import main

if __name__ == "__main__":
    sys.exit(main())
