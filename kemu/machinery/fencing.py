"""Fencing tokens: how a write made as leader names the lease term it was made under.

Upstream's leader election does not fence (client-go tools/leaderelection: it "does not
guarantee that only one client is acting as a leader (a.k.a. fencing)"). kemu's leaders send,
with every write they make while leading, a token naming their lease and term: the lease's
namespace and name, its leaseTransitions when they acquired it, and their holderIdentity. A
term is one (leaseTransitions, holderIdentity) pair: a holder that loses the lease and takes
it again gets a new leaseTransitions (kemu.client.leaderelection).

The apiserver keeps, beside each Lease and in the same etcd transaction as every write of it,
the lease's holder record (`holder_record`), and compares a write's token with it in the
write's own transaction (apiserver/registry/fencing.py): with `enforce` (the writer runs with
--leader-elect-fencing) a write from a past term is refused; without, it is made, as upstream,
and the apiserver logs it as a stale leader write.

The token travels as gRPC metadata (TOKEN_KEY, and ENFORCE_KEY when enforced) and as the REST
headers of the same names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest

TOKEN_KEY: Final = "kemu-fencing-token"
ENFORCE_KEY: Final = "kemu-fencing-enforce"
ENFORCE: Final = "true"
_MAX_LENGTH: Final = 1024


@dataclass(frozen=True)
class FencingToken:
    namespace: str
    name: str
    transitions: int
    holder: str
    enforce: bool

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    def encode(self) -> str:
        """namespace/name/leaseTransitions/holderIdentity (the identity last: it may hold
        slashes; a namespace and a name cannot)."""
        return f"{self.namespace}/{self.name}/{self.transitions}/{self.holder}"

    def record(self) -> bytes:
        """The holder record this token expects (`holder_record` of its term)."""
        return _record(self.transitions, self.holder)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        token = ((TOKEN_KEY, self.encode()),)
        return (*token, (ENFORCE_KEY, ENFORCE)) if self.enforce else token

    @classmethod
    def from_request(cls, token: str, enforce: str) -> FencingToken | None:
        """The token of a request's TOKEN_KEY and ENFORCE_KEY values ("" when absent): None
        for a request made by no leader; BadRequest naming the header when malformed."""
        if not token:
            if enforce:
                raise BadRequest(f"{ENFORCE_KEY} without {TOKEN_KEY}")
            return None
        return cls.parse(token, enforce)

    @classmethod
    def parse(cls, value: str, enforce: str = "") -> FencingToken:
        """The token of a request's TOKEN_KEY and ENFORCE_KEY values; BadRequest naming the
        header when it is malformed."""
        if len(value) > _MAX_LENGTH:
            raise BadRequest(f"{TOKEN_KEY}: longer than {_MAX_LENGTH} characters")
        parts = value.split("/", 3)
        if len(parts) != 4 or not all(parts):
            raise BadRequest(
                f"{TOKEN_KEY}: {value!r} is not namespace/name/leaseTransitions/holderIdentity"
            )
        namespace, name, transitions, holder = parts
        if not transitions.isdigit() or len(transitions) > 10:
            raise BadRequest(f"{TOKEN_KEY}: leaseTransitions {transitions!r} is not a number")
        if enforce not in ("", ENFORCE):
            raise BadRequest(f"{ENFORCE_KEY}: {enforce!r} is not {ENFORCE!r}")
        return cls(namespace, name, int(transitions), holder, enforce == ENFORCE)

    @classmethod
    def of(cls, lease: types_pb2.Lease, *, enforce: bool) -> FencingToken:
        """The token of the term `lease` (as its holder wrote it) stands for."""
        return cls(
            lease.metadata.namespace,
            lease.metadata.name,
            lease.spec.lease_transitions,
            lease.spec.holder_identity,
            enforce,
        )


def holder_record(lease: types_pb2.Lease) -> bytes:
    """What the apiserver keeps beside a Lease: its term (leaseTransitions and holder)."""
    return _record(lease.spec.lease_transitions, lease.spec.holder_identity)


def describe_record(record: bytes | None) -> str:
    """A holder record in words: "b-1 (leaseTransitions 4)", "nobody (leaseTransitions 4)"."""
    if record is None:
        return "nobody (no holder record)"
    transitions, _, holder = record.decode(errors="replace").partition("/")
    return f"{holder or 'nobody'} (leaseTransitions {transitions})"


def _record(transitions: int, holder: str) -> bytes:
    return f"{transitions}/{holder}".encode()
