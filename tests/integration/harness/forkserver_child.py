"""A module the fork server's tests run as `python -m tests.integration.harness.forkserver_child ARG`:
it prints what a process can see of how it was started, then `exit CODE`, `sleep` (until a
signal) or `raise` (an uncaught exception)."""

import gc
import os
import random
import signal
import sys
import time


def main() -> int:
    print(f"argv={sys.argv[1:]}")
    print(f"env={os.environ.get('FORKSERVER_TEST', '')}")
    print(f"cwd={os.getcwd()}")
    print(f"sid={os.getsid(0)} pid={os.getpid()}")
    print(f"random={random.getrandbits(64)}")
    print(f"sigterm_default={signal.getsignal(signal.SIGTERM) == signal.SIG_DFL}")
    print(f"frozen={gc.get_freeze_count()}")
    sys.stdout.flush()
    action = sys.argv[1]
    if action == "sleep":
        while True:
            time.sleep(60)
    if action == "raise":
        raise RuntimeError("uncaught in the child")
    return int(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
