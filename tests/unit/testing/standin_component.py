"""A stand-in for a kemu component, for the harness's own tests.

It takes the common component flags (--metrics-port, --emulated-version, --feature-gates) and
ignores the others. /readyz answers 503 until --ready-after seconds have passed, then 200.
SIGTERM makes it exit 0 (or --exit-code-on-term) unless --ignore-sigterm. --die-after exits 3
early, before being ready. --spawn-child starts a grandchild in its process group and prints its
pid, to check that the harness cleans up whole groups.
"""

from __future__ import annotations

import argparse
import http.server
import signal
import subprocess
import sys
import threading
import time
from types import FrameType


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--ready-after", type=float, default=0.0)
    parser.add_argument("--die-after", type=float, default=None)
    parser.add_argument("--exit-code-on-term", type=int, default=0)
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--spawn-child", action="store_true")
    options, unknown = parser.parse_known_args(argv)
    print(f"standin: starting with {argv} (ignored: {unknown})", flush=True)

    started = time.monotonic()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ready = time.monotonic() - started >= options.ready_after
            if self.path == "/readyz":
                code = 200 if ready else 503
            elif self.path in ("/healthz", "/metrics"):
                code = 200
            else:
                code = 404
            body = b"standin_up 1\n" if self.path == "/metrics" else b"ok\n"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", options.metrics_port), Handler)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()

    child = None
    if options.spawn_child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"standin: child pid {child.pid}", flush=True)

    # A flag, not a threading.Event: the handler runs in the main thread, and Event.set()
    # there deadlocks when the signal lands while the main thread's Event.wait() holds the
    # Event's own lock (the harness then killed this stand-in 10 s after its SIGTERM: a CI
    # flake of test_stop_leaves_no_process_and_reports_unclean_exits).
    stop = False

    def on_term(signum: int, frame: FrameType | None) -> None:
        nonlocal stop
        if options.ignore_sigterm:
            print("standin: ignoring SIGTERM", flush=True)
            return
        print("standin: SIGTERM, stopping", flush=True)
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    deadline = None if options.die_after is None else started + options.die_after
    while not stop:
        time.sleep(0.02)
        if deadline is not None and time.monotonic() >= deadline:
            print("standin: fatal: simulated crash before ready", flush=True)
            return 3
    server.shutdown()
    if child is not None:
        child.terminate()
        child.wait()
    return int(options.exit_code_on_term)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
