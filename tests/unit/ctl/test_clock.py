"""`kemuctl clock` against a real-time apiserver (the fake is one): the mode and time, and a
rate change refused with the server's reason; bad rates are one error line."""

from __future__ import annotations

import json

import pytest

from tests.unit.ctl.helpers import ctl, fake

pytestmark = pytest.mark.anyio


async def test_clock_prints_the_mode_and_time_of_a_real_time_cluster() -> None:
    done = await ctl(fake(), "clock", "-o", "json")
    assert done.rc == 0, done.err
    assert json.loads(done.out) == {"mode": "real", "now": "2023-11-14T22:13:20.000Z"}
    text = await ctl(fake(), "clock")
    assert text.out.splitlines() == ["Mode: real", "Now:  2023-11-14T22:13:20.000Z"]


async def test_setting_the_rate_of_a_real_time_clock_is_refused_by_the_server() -> None:
    done = await ctl(fake(), "clock", "rate", "10")
    assert done.rc == 1
    assert done.err.startswith("error: ")
    assert "the cluster clock is real time" in done.err
    assert done.err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("clock", "rate"), "a rate is required"),
        (("clock", "rate", "fast"), 'clock rate: Invalid value: "fast"'),
        (("clock", "rate", "-3"), "must be between 0 and"),
        (("clock", "advance"), "a duration is required"),
        (("clock", "advance", "10"), "clock advance: "),
        (("clock", "-o", "wide"), "--output must be 'yaml' or 'json'"),
    ],
)
async def test_a_bad_clock_command_is_one_error_line(argv: tuple[str, ...], message: str) -> None:
    client = fake()
    done = await ctl(client, *argv)
    assert done.rc == 1
    assert message in done.err
    assert done.err.count("\n") == 1
    assert "set_clock_rate" not in client.verbs()  # nothing sent
