"""Running kemuctl in-process against a FakeClient."""

from __future__ import annotations

import io
from dataclasses import dataclass

from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.ctl.main import run

NOW = 1_700_000_000.0


@dataclass
class Result:
    rc: int
    out: str
    err: str


def fake(*objects: object) -> FakeClient:
    return FakeClient(*objects, clock=FakeClock(now=NOW))  # type: ignore[arg-type]


async def ctl(client: FakeClient, *argv: str, stdin: str = "") -> Result:
    out, err = io.StringIO(), io.StringIO()
    rc = await run(
        list(argv),
        client=client,
        out=out,
        err=err,
        stdin=io.StringIO(stdin),
        clock=client.clock,
        environ={},
    )
    return Result(rc, out.getvalue(), err.getvalue())
