from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ClockSegment(_message.Message):
    __slots__ = ("base_wall", "base_virtual", "rate", "generation", "event_driven", "advance_until")
    BASE_WALL_FIELD_NUMBER: _ClassVar[int]
    BASE_VIRTUAL_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    EVENT_DRIVEN_FIELD_NUMBER: _ClassVar[int]
    ADVANCE_UNTIL_FIELD_NUMBER: _ClassVar[int]
    base_wall: float
    base_virtual: float
    rate: float
    generation: int
    event_driven: bool
    advance_until: float
    def __init__(self, base_wall: _Optional[float] = ..., base_virtual: _Optional[float] = ..., rate: _Optional[float] = ..., generation: _Optional[int] = ..., event_driven: _Optional[bool] = ..., advance_until: _Optional[float] = ...) -> None: ...

class ClockUpdate(_message.Message):
    __slots__ = ("segment", "probe", "apiserver", "release")
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    APISERVER_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    segment: ClockSegment
    probe: int
    apiserver: str
    release: int
    def __init__(self, segment: _Optional[_Union[ClockSegment, _Mapping]] = ..., probe: _Optional[int] = ..., apiserver: _Optional[str] = ..., release: _Optional[int] = ...) -> None: ...

class ClockReport(_message.Message):
    __slots__ = ("component", "identity", "timers", "next_deadline", "probe", "idle", "events_received", "requests_sent", "peer_calls_sent", "peer_calls_received", "boot_token", "ready", "requests_abandoned", "peer_calls_abandoned", "peer_calls_last", "peer_calls_first", "requests_in_flight", "step")
    class PeerCallsReceivedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class PeerCallsLastEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class PeerCallsFirstEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    TIMERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PROBE_FIELD_NUMBER: _ClassVar[int]
    IDLE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_SENT_FIELD_NUMBER: _ClassVar[int]
    PEER_CALLS_SENT_FIELD_NUMBER: _ClassVar[int]
    PEER_CALLS_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    BOOT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_ABANDONED_FIELD_NUMBER: _ClassVar[int]
    PEER_CALLS_ABANDONED_FIELD_NUMBER: _ClassVar[int]
    PEER_CALLS_LAST_FIELD_NUMBER: _ClassVar[int]
    PEER_CALLS_FIRST_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    component: str
    identity: str
    timers: int
    next_deadline: float
    probe: int
    idle: bool
    events_received: int
    requests_sent: int
    peer_calls_sent: int
    peer_calls_received: _containers.ScalarMap[str, int]
    boot_token: str
    ready: bool
    requests_abandoned: int
    peer_calls_abandoned: int
    peer_calls_last: _containers.ScalarMap[str, int]
    peer_calls_first: _containers.ScalarMap[str, int]
    requests_in_flight: int
    step: int
    def __init__(self, component: _Optional[str] = ..., identity: _Optional[str] = ..., timers: _Optional[int] = ..., next_deadline: _Optional[float] = ..., probe: _Optional[int] = ..., idle: _Optional[bool] = ..., events_received: _Optional[int] = ..., requests_sent: _Optional[int] = ..., peer_calls_sent: _Optional[int] = ..., peer_calls_received: _Optional[_Mapping[str, int]] = ..., boot_token: _Optional[str] = ..., ready: _Optional[bool] = ..., requests_abandoned: _Optional[int] = ..., peer_calls_abandoned: _Optional[int] = ..., peer_calls_last: _Optional[_Mapping[str, int]] = ..., peer_calls_first: _Optional[_Mapping[str, int]] = ..., requests_in_flight: _Optional[int] = ..., step: _Optional[int] = ...) -> None: ...

class ClockRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClockStatus(_message.Message):
    __slots__ = ("mode", "now", "segment", "timers", "sessions")
    MODE_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    TIMERS_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    mode: str
    now: float
    segment: ClockSegment
    timers: int
    sessions: _containers.RepeatedCompositeFieldContainer[ClockReport]
    def __init__(self, mode: _Optional[str] = ..., now: _Optional[float] = ..., segment: _Optional[_Union[ClockSegment, _Mapping]] = ..., timers: _Optional[int] = ..., sessions: _Optional[_Iterable[_Union[ClockReport, _Mapping]]] = ...) -> None: ...

class SetClockRateRequest(_message.Message):
    __slots__ = ("rate", "max")
    RATE_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    rate: float
    max: bool
    def __init__(self, rate: _Optional[float] = ..., max: _Optional[bool] = ...) -> None: ...

class AdvanceClockRequest(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    def __init__(self, seconds: _Optional[float] = ...) -> None: ...

class ExpectClockSessionRequest(_message.Message):
    __slots__ = ("boot_token", "ttl_seconds")
    BOOT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    boot_token: str
    ttl_seconds: float
    def __init__(self, boot_token: _Optional[str] = ..., ttl_seconds: _Optional[float] = ...) -> None: ...
