"""serviceaccounts/token: the TokenRequest (authentication.k8s.io/v1) that `kubectl create
token` posts (upstream pkg/registry/core/serviceaccount/storage/token.go): answered by the
apiserver's ServiceAccountTokens (apiserver/authentication/service_accounts.py), its bound
object read from the registry's watch caches. The gRPC edge's CreateToken
(apiserver/endpoints/servicer.py) carries the same request as api_pb2.TokenRequest: `body_of`
and `message_of` translate it to and from the JSON the tokens answer."""

from __future__ import annotations

from typing import Any, Final

from apiserver.authentication.service_accounts import ServiceAccountTokens
from apiserver.registry.registry import Registry
from kemu.api.v1 import api_pb2, types_pb2
from kemu.machinery import convert
from kemu.machinery.kinds import BY_KIND

_SERVICE_ACCOUNT: Final = BY_KIND["ServiceAccount"]
_POD: Final = BY_KIND["Pod"]
_SECRET: Final = BY_KIND["Secret"]
_NODE: Final = BY_KIND["Node"]


class RegistryLookup:
    """The objects a token names, as the registry's watch caches hold them."""

    def __init__(self, registry: Registry) -> None:
        self._cached = registry.store.cached

    def service_account(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None:
        obj = self._cached(_SERVICE_ACCOUNT, namespace, name)
        return obj if isinstance(obj, types_pb2.ServiceAccount) else None

    def pod(self, namespace: str, name: str) -> types_pb2.Pod | None:
        obj = self._cached(_POD, namespace, name)
        return obj if isinstance(obj, types_pb2.Pod) else None

    def secret(self, namespace: str, name: str) -> types_pb2.Secret | None:
        obj = self._cached(_SECRET, namespace, name)
        return obj if isinstance(obj, types_pb2.Secret) else None

    def node(self, name: str) -> types_pb2.Node | None:
        obj = self._cached(_NODE, "", name)
        return obj if isinstance(obj, types_pb2.Node) else None


def token_request(
    tokens: ServiceAccountTokens, registry: Registry, body: Any, sa: types_pb2.ServiceAccount
) -> dict[str, Any]:
    return tokens.token_request(body, sa, RegistryLookup(registry))


def body_of(req: api_pb2.TokenRequest) -> dict[str, Any]:
    """The JSON body a REST client would post for `req`."""
    spec: dict[str, Any] = {}
    if req.spec.audiences:
        spec["audiences"] = list(req.spec.audiences)
    if req.spec.HasField("expiration_seconds"):
        spec["expirationSeconds"] = req.spec.expiration_seconds
    if req.spec.HasField("bound_object_ref"):
        ref = req.spec.bound_object_ref
        spec["boundObjectRef"] = {
            "kind": ref.kind,
            "apiVersion": ref.api_version,
            "name": ref.name,
            "uid": ref.uid,
        }
    return {"spec": spec}


def message_of(answer: dict[str, Any]) -> api_pb2.TokenRequest:
    """The answered TokenRequest (`ServiceAccountTokens.token_request`'s JSON) as a message."""
    out = api_pb2.TokenRequest()
    out.metadata.name = answer["metadata"]["name"]
    out.metadata.namespace = answer["metadata"]["namespace"]
    spec = answer["spec"]
    out.spec.audiences.extend(spec["audiences"])
    out.spec.expiration_seconds = spec["expirationSeconds"]
    ref = spec.get("boundObjectRef")
    if ref:
        out.spec.bound_object_ref.kind = ref.get("kind", "")
        out.spec.bound_object_ref.api_version = ref.get("apiVersion", "")
        out.spec.bound_object_ref.name = ref.get("name", "")
        out.spec.bound_object_ref.uid = ref.get("uid", "")
    out.status.token = answer["status"]["token"]
    out.status.expiration_timestamp.CopyFrom(
        convert.parse_time(answer["status"]["expirationTimestamp"], "status.expirationTimestamp")
    )
    return out
