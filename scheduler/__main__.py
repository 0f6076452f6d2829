import sys

from scheduler.app import main

sys.exit(main())
