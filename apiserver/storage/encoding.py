"""Wire-level helpers: build API response bytes without decoding and re-encoding objects.

Stored values are objects serialized with an empty resourceVersion. Protobuf merges repeated
occurrences of a message field, so appending `metadata { resource_version: "N" }` to a stored
value yields the object as served at revision N, and framing object bytes as a field of the
Object envelope or of a WatchEvent costs a few bytes of header. The watch cache serializes each
event once this way and sends the same bytes to every watcher (stack-notes: per-watcher
re-encoding halves apiserver throughput).
"""

from __future__ import annotations

from typing import Final

_LEN: Final = 2  # wire type of length-delimited fields


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return varint((number << 3) | _LEN) + varint(len(payload)) + payload


# Every kind has `ObjectMeta metadata = 1`, and ObjectMeta has `resource_version = 5`.
_METADATA: Final = 1
_RESOURCE_VERSION: Final = 5


def with_resource_version(value: bytes, revision: int) -> bytes:
    """Stored object bytes as served at `revision` (metadata.resourceVersion set)."""
    return value + field_bytes(_METADATA, field_bytes(_RESOURCE_VERSION, str(revision).encode()))


def envelope(kind_field_number: int, obj: bytes) -> bytes:
    """An `Object` envelope holding `obj` in the oneof field of its kind."""
    return field_bytes(kind_field_number, obj)


# WatchEvent: type = 1, object = 2. WatchResponse: events = 1.
# ListResponse: items = 1, resource_version = 2, continue = 3.


def watch_frame(event_type: str, envelope_bytes: bytes) -> bytes:
    """One WatchEvent framed as an element of WatchResponse.events: a WatchResponse is the
    concatenation of the frames it carries."""
    event = field_bytes(1, event_type.encode()) + field_bytes(2, envelope_bytes)
    return field_bytes(1, event)


def list_response(envelopes: list[bytes], resource_version: int, continue_: str = "") -> bytes:
    parts = [field_bytes(1, e) for e in envelopes]
    parts.append(field_bytes(2, str(resource_version).encode()))
    if continue_:
        parts.append(field_bytes(3, continue_.encode()))
    return b"".join(parts)
