"""`kemuctl clock`: the cluster clock (kemu only). `kemuctl clock` prints its mode and time and,
in virtual time, its rate and the timers the components hold; `kemuctl clock rate N` sets how
fast virtual time flows (N virtual seconds per wall second; 0 holds it; max: the event-driven
clock, which jumps to the next timer whenever the cluster is quiescent); `kemuctl clock advance
DURATION` runs the cluster as at max until DURATION of virtual time has passed, then holds it,
and returns then."""

from __future__ import annotations

import argparse

from kemu.api.v1 import clock_pb2
from kemu.ctl.common import Context, CtlError
from kemu.ctl.printers import dump_json, dump_yaml
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.duration import DurationError, parse_duration
from kemu.machinery.errors import Invalid
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.virtual_time import ClockMode, parse_rate


def clock_dict(status: clock_pb2.ClockStatus) -> JSONObject:
    """`-o json`: {"mode", "now"} in real time; with "rate" and "timers" in virtual time."""
    out: JSONObject = {
        "mode": status.mode,
        "now": format_time(timestamp(status.now), "milli"),
    }
    if status.mode == ClockMode.VIRTUAL.value:
        segment = status.segment
        out["rate"] = "max" if segment.event_driven else _number(segment.rate)
        out["timers"] = status.timers
    return out


def _number(value: float) -> int | float:
    return int(value) if value == int(value) else value


async def cmd_clock(ctx: Context, args: argparse.Namespace) -> int:
    if args.output not in (None, "json", "yaml"):
        raise CtlError(f"--output must be 'yaml' or 'json', got {args.output!r}")
    if args.verb is None:
        if args.value is not None:
            raise CtlError(f"unexpected argument {args.value!r}: did you mean 'clock rate N'?")
        status = await ctx.client.clock_status()
    elif args.verb == "advance":
        if args.value is None:
            raise CtlError("clock advance: a duration is required (e.g. 10m)")
        try:
            seconds = parse_duration(args.value)
        except DurationError as e:
            raise CtlError(f"clock advance: {e}") from None
        if seconds < 0:
            raise CtlError(f"clock advance: {args.value} is negative")
        status = await ctx.client.advance_clock(seconds)
    else:  # rate
        if args.value is None:
            raise CtlError("clock rate: a rate is required (a number >= 0; 0 holds the clock)")
        try:
            rate = parse_rate(args.value)
        except Invalid as e:
            raise CtlError(f"clock rate: {e.causes[0].message}") from None
        status = await ctx.client.set_clock_rate(rate)
    data = clock_dict(status)
    if args.output == "json":
        ctx.print(dump_json(data))
    elif args.output == "yaml":
        ctx.print(dump_yaml(data))
    else:
        width = max(len(k) for k in data) + 2
        for key, value in data.items():
            ctx.print(f"{(key.capitalize() + ':').ljust(width)}{value}")
    return 0
