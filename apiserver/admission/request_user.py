"""The user a request is served for, as upstream's request context carries it
(k8s.io/apiserver/pkg/endpoints/request: WithUser, UserFrom) to admission's Attributes
(GetUserInfo): the edges serve each request inside `serving(user)`, admission plugins that
look at the user (NodeRestriction) read `current()`. None outside a request: the apiserver's
own writes (its start-up objects, its controllers), which no plugin restricts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from kemu.machinery.user import UserInfo

_USER: ContextVar[UserInfo | None] = ContextVar("kemu_request_user", default=None)


@contextlib.contextmanager
def serving(user: UserInfo) -> Iterator[None]:
    """Serves one request made by `user`."""
    reset = _USER.set(user)
    try:
        yield
    finally:
        _USER.reset(reset)


def current() -> UserInfo | None:
    return _USER.get()
