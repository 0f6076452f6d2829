import sys

from kubelet.app import main

sys.exit(main())
