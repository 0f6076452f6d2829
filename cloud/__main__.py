import sys

from cloud.app import main

sys.exit(main())
