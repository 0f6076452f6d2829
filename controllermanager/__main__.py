import sys

from controllermanager.app import main

sys.exit(main())
