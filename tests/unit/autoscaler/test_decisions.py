"""The autoscaler's decision record: a loop's scale-up options and choice, the pods left out
and placed, a node's verdicts kept only when they change, bounds, and bad queries refused."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.decisions import LoopDecisionLog
from autoscaler.scaledown.scale_down import ScaleDownSummary, UnneededNode
from kemu.component.health import DebugRequestError
from tests.unit.autoscaler.test_static_autoscaler import Env, pool, unschedulable

pytestmark = pytest.mark.anyio


async def test_a_loop_records_what_was_considered_the_options_and_the_choice() -> None:
    log = LoopDecisionLog()
    env = Env(pool(5), pods=[unschedulable(f"p{i}").obj() for i in range(3)], decisions=log)
    env.pods.append(unschedulable("low", priority=-20).obj())
    await env.loop()
    report: Any = log.report({"loops": "5"})
    (loop,) = report["loops"]
    assert loop["considered"] == ["default/p0", "default/p1", "default/p2"]
    assert loop["leftOut"] == {"default/low": "expendable"}
    assert loop["scaleUp"]["options"] == [
        {"group": "pool-a", "nodes": 2, "pods": ["default/p0", "default/p1", "default/p2"]}
    ]
    assert loop["scaleUp"]["chosen"] == {
        "group": "pool-a",
        "nodes": 2,
        "from": 0,
        "to": 2,
        "expander": "least-waste",
    }
    await env.loop()  # the upcoming nodes take them
    report = log.report({})
    loop = report["loops"][-1]
    assert sorted(loop["placements"].values()) == [
        "template-node-for-pool-a-upcoming-0",
        "template-node-for-pool-a-upcoming-0",
        "template-node-for-pool-a-upcoming-1",
    ]
    assert loop["scaleUp"]["chosen"] is None


def test_a_nodes_verdicts_are_kept_when_they_change() -> None:
    log = LoopDecisionLog(max_verdicts_per_node=3)

    def loop(t: float, s: ScaleDownSummary) -> None:
        log.record(
            time=t,
            considered=(),
            left_out={},
            placements={},
            scale_up=None,
            expander="least-waste",
            scale_down=s,
        )

    busy = ScaleDownSummary(
        unremovable=(("n1", "NotUnderutilized"),),
        unremovable_messages=(("n1", "utilization 0.6"),),
    )
    loop(1.0, busy)
    loop(2.0, busy)  # no change: no entry
    waiting = ScaleDownSummary(
        unneeded=(UnneededNode("n1", "g", 3.0, 0.1, False),),
        unremovable=(("n1", "NotUnneededLongEnough"),),
        unremovable_messages=(("n1", "unneeded for 0s of 600s"),),
    )
    loop(3.0, waiting)
    loop(4.0, waiting)  # still waiting: still Unneeded since 3.0
    loop(5.0, ScaleDownSummary(unremovable=(("n1", "RecentlyUnremovable"),)))  # not checked again
    loop(6.0, ScaleDownSummary(started=("n1",)))
    report: Any = log.report({"node": "n1"})
    verdicts = report["verdicts"]
    assert [(v["time"], v["verdict"]) for v in verdicts] == [
        (1.0, "NotUnderutilized"),
        (3.0, "Unneeded"),
        (6.0, "DeletionStarted"),
    ]
    assert verdicts[1]["message"] == "since 1970-01-01T00:00:03Z"
    assert log.report({"node": "other"}) == {"node": "other", "verdicts": []}
    assert log.report({"loops": "0"})["loops"] == []


@pytest.mark.parametrize("query", [{"node": ""}, {"loops": "x"}, {"loops": "-1"}])
def test_bad_queries_are_refused(query: dict[str, str]) -> None:
    with pytest.raises(DebugRequestError):
        LoopDecisionLog().report(query)
