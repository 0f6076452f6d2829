"""The state file: round trip, atomic replacement, providerIDs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloud.config import Failures
from cloud.state import (
    DELETING,
    CloudState,
    GroupRecord,
    InstanceRecord,
    StateStore,
    parse_provider_id,
)


def test_round_trip(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "cloud")
    assert store.load() == CloudState()
    state = CloudState(
        groups={"pool-a": GroupRecord(next_index=3, never_ready=1)},
        instances={
            "pool-a-0": InstanceRecord(name="pool-a-0", group="pool-a", created_at=1.5, pid=42),
            "pool-a-2": InstanceRecord(
                name="pool-a-2",
                group="pool-a",
                created_at=2.0,
                phase=DELETING,
                error_code="OUT_OF_CAPACITY",
                error_class=1,
            ),
        },
    )
    store.save(state)
    assert store.load() == state
    assert not (tmp_path / "cloud" / "state.tmp").exists()
    assert state.instances["pool-a-0"].provider_id == "kemu://pool-a/pool-a-0"


def test_a_corrupt_file_is_an_error_naming_it(tmp_path: Path) -> None:
    store = StateStore(tmp_path)
    store.path.write_text(json.dumps({"version": 99}))
    with pytest.raises(ValueError, match="state.json"):
        store.load()


def test_config_failures_apply_once_per_config_change() -> None:
    record = GroupRecord()
    record.apply_config(Failures(never_ready=2))
    record.never_ready -= 1  # one instance used it up
    record.apply_config(Failures(never_ready=2))  # a restart with the same config
    assert record.never_ready == 1
    record.apply_config(Failures(never_ready=5, out_of_capacity=True))  # an edited config
    assert (record.never_ready, record.out_of_capacity) == (5, True)


@pytest.mark.parametrize(
    ("pid", "parsed"),
    [
        ("kemu://pool-a/pool-a-0", ("pool-a", "pool-a-0")),
        ("kemu://pool-a/", None),
        ("kemu://a/b/c", None),
        ("gce://p/z/i", None),
        ("", None),
    ],
)
def test_parse_provider_id(pid: str, parsed: tuple[str, str] | None) -> None:
    assert parse_provider_id(pid) == parsed
