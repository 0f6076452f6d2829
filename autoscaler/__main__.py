import sys

from autoscaler.app import main

sys.exit(main())
