"""A tiny component for the runner's signal tests, run as a subprocess.

Usage: signal_child.py MODE GRACE. Prints "ready <port>" once running, "draining" when
ctx.stopping is set, then per MODE: "drain" returns after a short drain ("drained"); "stuck"
ignores the request and prints "cancelled" when cancelled. Every SIGUSR2 prints "debug N" (N
from 1) and sets GET /debug/count to {"signals": N}.
"""

from __future__ import annotations

import sys

import anyio

from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, cleanup_scope, run_component


def main(argv: list[str]) -> int:
    mode, grace = argv[0], float(argv[1])
    options = ComponentOptions.for_tests("child", metrics_port=0, shutdown_grace_period=grace)

    async def body(ctx: ComponentContext) -> None:
        signals = 0

        def on_debug_signal() -> None:
            nonlocal signals
            signals += 1
            print(f"debug {signals}", flush=True)

        ctx.on_debug_signal(on_debug_signal)
        ctx.add_debug_handler("count", lambda _q: {"signals": signals})
        print(f"ready {ctx.metrics_port}", flush=True)
        await ctx.stopping.wait()
        print("draining", flush=True)
        if mode == "drain":
            await anyio.sleep(0.05)
            print("drained", flush=True)
            return
        try:
            await anyio.sleep_forever()
        finally:
            with cleanup_scope(1):
                await anyio.sleep(0.01)
                print("cancelled", flush=True)

    return run_component("child", options, body)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
