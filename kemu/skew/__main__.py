import sys

from kemu.skew.cli import main

sys.exit(main())
