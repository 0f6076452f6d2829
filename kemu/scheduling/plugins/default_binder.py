"""DefaultBinder: binds the pod through the API (upstream defaultbinder/default_binder.go).

`handle.client.bind` posts the pods/binding subresource with the pod's uid, as upstream's
Binding object carries it: the apiserver then binds only that pod, never one deleted and
re-created under the same name while this one was in its binding cycle. An API error (the pod
is gone or replaced, already bound, the apiserver unavailable) is an Error status, which makes
the scheduler forget the assumed pod and retry it.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import ApiError
from kemu.scheduling.interface import BindPlugin, CycleState, Handle, PluginArgs
from kemu.scheduling.status import SUCCESS, Status, as_error

NAME: Final = "DefaultBinder"


class DefaultBinder(BindPlugin):
    NAME = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def name(self) -> str:
        return NAME

    async def bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        try:
            await self._handle.client.bind(
                pod.metadata.namespace, pod.metadata.name, node_name, uid=pod.metadata.uid
            )
        except ApiError as e:
            return as_error(e)
        return SUCCESS


def new(args: PluginArgs, handle: Handle) -> DefaultBinder:
    return DefaultBinder(handle)
