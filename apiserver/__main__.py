import sys

from apiserver.app import main

sys.exit(main())
