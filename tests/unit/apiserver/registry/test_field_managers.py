"""The manager of a write when the request names none (handlers/fieldmanager
managerOrUserAgent)."""

from __future__ import annotations

import pytest

from apiserver.registry.field_managers import from_grpc_user_agent, from_user_agent


@pytest.mark.parametrize(
    ("user_agent", "manager"),
    [
        ("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl"),
        ("kubectl-edit/v1.32.0 (linux/amd64) kubernetes/70d3cc9", "kubectl-edit"),
        ("OpenAPI-Generator/37.0.2/python", "OpenAPI-Generator"),
        ("", ""),
    ],
)
def test_manager_from_user_agent(user_agent: str, manager: str) -> None:
    """prefixFromUserAgent: the part before the first "/"."""
    assert from_user_agent(user_agent) == manager


def test_manager_of_kemus_components_over_grpc() -> None:
    """kemu.client sends the component's upstream name first; gRPC appends its own agent."""
    assert from_grpc_user_agent("kube-scheduler grpc-python/1.66.0 grpc-c/43.0.0") == (
        "kube-scheduler"
    )
    assert from_grpc_user_agent("") == "kube-apiserver"
