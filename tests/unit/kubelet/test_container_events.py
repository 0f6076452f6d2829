"""The kubelet's container events (kubelet.container_events): upstream's reasons and messages."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_pod
from kubelet.container_events import killing_events, started_events


def _pod(image: str, policy: str = "") -> types_pb2.Pod:
    pod = make_pod("p").obj()
    pod.spec.containers[0].image = image
    pod.spec.containers[0].image_pull_policy = policy
    return pod


def test_an_image_with_a_tag_is_already_present_and_latest_is_pulled() -> None:
    """S-KL-EVT-2: upstream's defaulting pulls a :latest or untagged image (Always) and
    finds a tagged one present (IfNotPresent)."""
    tagged = started_events(_pod("registry.k8s.io/pause:3.10"))
    assert [(e.event_type, e.reason, e.message) for e in tagged] == [
        (
            "Normal",
            "Pulled",
            'Container image "registry.k8s.io/pause:3.10" already present on machine',
        ),
        ("Normal", "Created", "Created container: " + _pod("x").spec.containers[0].name),
        ("Normal", "Started", "Started container " + _pod("x").spec.containers[0].name),
    ]
    for image in ("nginx", "nginx:latest", "localhost:5000/nginx"):
        reasons = [e.reason for e in started_events(_pod(image))]
        assert reasons == ["Pulling", "Pulled", "Created", "Started"], image
    pulled = started_events(_pod("nginx"))[1].message
    assert pulled.startswith('Successfully pulled image "nginx" in ')
    assert [e.reason for e in started_events(_pod("nginx", "Never"))][0] == "Pulled"
    assert [e.reason for e in started_events(_pod("nginx@sha256:abc"))][0] == "Pulled"


def test_killing_names_each_container() -> None:
    pod = _pod("nginx:1.27")
    assert [(e.reason, e.message) for e in killing_events(pod)] == [
        ("Killing", f"Stopping container {pod.spec.containers[0].name}")
    ]
