"""The pure parts of `python -m bench flood`: options, the verdict on leases and the run."""

from __future__ import annotations

import pytest

from bench import flood


def _opts(*argv: str) -> flood.Options:
    return flood.options_from_args(flood.build_parser().parse_args(list(argv)))


def test_options_default_to_upstreams_limits_and_quick_is_smaller() -> None:
    opts = _opts()
    assert (opts.max_requests_inflight, opts.max_mutating_requests_inflight) == (400, 200)
    assert (opts.rate, opts.duration) == (3000.0, 30.0)
    quick = _opts("--quick", "--rate", "500")
    assert (quick.rate, quick.duration) == (500.0, 10.0)  # an explicit flag wins
    assert _opts("--max-requests-inflight", "0").max_requests_inflight == 0  # no limit


@pytest.mark.parametrize(
    "argv", [("--rate", "0"), ("--processes", "0"), ("--max-mutating-requests-inflight", "-1")]
)
def test_bad_options_are_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        _opts(*argv)


def test_a_lease_is_kept_only_if_its_holder_and_transitions_never_changed() -> None:
    before = flood.LeaseView("a", 0, 1.0)
    kept = flood.LeaseReport(before, flood.LeaseView("a", 0, 9.0), ["a"], 4, 2.0)
    assert kept.kept
    changed_hands_and_back = flood.LeaseReport(
        before, flood.LeaseView("a", 2, 9.0), ["a", "b", "a"]
    )
    assert not changed_hands_and_back.kept
    assert not flood.LeaseReport(flood.LeaseView(), flood.LeaseView(), [""]).kept  # no leader


def test_a_run_fails_on_a_lost_lease_a_failed_probe_an_exit_or_a_missing_write() -> None:
    def result(**changes: object) -> flood.Result:
        r = flood.Result(
            leases={"l": flood.LeaseReport(flood.LeaseView("a"), flood.LeaseView("a"), ["a"])},
            exited={"scheduler-a": None},
        )
        for key, value in changes.items():
            setattr(r, key, value)
        return r

    assert result().ok
    assert not result(probe_failures=1).ok
    assert not result(acked_missing=1).ok
    assert not result(exited={"scheduler-a": 1}).ok
    assert not result(leadership_lost={"scheduler-a": 1}).ok
    assert result(leadership_lost={"scheduler-a": 0}).ok
    assert not result(
        leases={"l": flood.LeaseReport(flood.LeaseView("a"), flood.LeaseView("b"), ["a", "b"])}
    ).ok
    text = flood.render(_opts("--quick"), result(acked=3, present=3))
    assert "PASS" in text and "3 / 3 / 0" in text
