"""ServiceAccount tokens as upstream's pkg/serviceaccount (jwt.go, claims.go) and TokenRequest
(pkg/registry/core/serviceaccount/storage/token.go)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from apiserver.authentication import service_accounts
from apiserver.authentication.service_accounts import (
    EXTENDED_EXPIRATION,
    ServiceAccountTokens,
    key_id,
    new_signing_key,
    service_account_user,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest, Conflict, Invalid, NotFound, Unauthorized

KEY = new_signing_key()
NOW = 1_795_543_200.0


@dataclass
class Objects:
    """The objects a token names (the apiserver's watch caches in the server)."""

    accounts: dict[tuple[str, str], types_pb2.ServiceAccount] = field(default_factory=dict)
    pods: dict[tuple[str, str], types_pb2.Pod] = field(default_factory=dict)
    secrets: dict[tuple[str, str], types_pb2.Secret] = field(default_factory=dict)
    nodes: dict[str, types_pb2.Node] = field(default_factory=dict)

    def service_account(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None:
        return self.accounts.get((namespace, name))

    def pod(self, namespace: str, name: str) -> types_pb2.Pod | None:
        return self.pods.get((namespace, name))

    def secret(self, namespace: str, name: str) -> types_pb2.Secret | None:
        return self.secrets.get((namespace, name))

    def node(self, name: str) -> types_pb2.Node | None:
        return self.nodes.get(name)


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def now(self) -> float:
        return self.t


def _world() -> tuple[Objects, types_pb2.ServiceAccount]:
    objects = Objects()
    sa = types_pb2.ServiceAccount(
        metadata=types_pb2.ObjectMeta(name="builder", namespace="ci", uid="sa-1")
    )
    objects.accounts[("ci", "builder")] = sa
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name="p", namespace="ci", uid="pod-1"))
    pod.spec.service_account_name = "builder"
    pod.spec.node_name = "n1"
    objects.pods[("ci", "p")] = pod
    objects.nodes["n1"] = types_pb2.Node(metadata=types_pb2.ObjectMeta(name="n1", uid="node-1"))
    return objects, sa


def _tokens(clock: Clock, **kw: Any) -> ServiceAccountTokens:
    return ServiceAccountTokens(signing_key=KEY, now=clock.now, **kw)


def _claims(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def _header(token: str) -> dict[str, Any]:
    part = token.split(".")[0]
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    return decoded


def test_a_token_names_its_account_and_authenticates_as_it() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock)
    answer = tokens.token_request({}, sa, objects)
    token = answer["status"]["token"]
    assert _header(token) == {"alg": "RS256", "kid": key_id(KEY.public_key())}
    claims = _claims(token)
    assert claims["sub"] == "system:serviceaccount:ci:builder"
    assert claims["aud"] == ["https://kubernetes.default.svc.cluster.local"]
    assert claims["exp"] - claims["iat"] == 3600
    assert claims["kubernetes.io"] == {
        "namespace": "ci",
        "serviceaccount": {"name": "builder", "uid": "sa-1"},
    }
    assert answer["status"]["expirationTimestamp"] == "2026-11-24T19:00:00Z"
    user = tokens.authenticate(token, objects)
    assert user == service_account_user("ci", "builder")
    assert user is not None and user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ci",
        "system:authenticated",
    )


def test_a_token_holds_until_it_expires_on_the_apiservers_clock() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock)
    token = tokens.token_request({"spec": {"expirationSeconds": 600}}, sa, objects)["status"][
        "token"
    ]
    clock.t = NOW + 599
    assert tokens.authenticate(token, objects) is not None
    clock.t = NOW + 600
    with pytest.raises(Unauthorized) as e:
        tokens.authenticate(token, objects)
    assert e.value.message == "Unauthorized"


def test_a_token_bound_to_a_pod_ends_with_the_pod() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock)
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "pod-1"}
    token = tokens.token_request({"spec": {"boundObjectRef": ref}}, sa, objects)["status"]["token"]
    kube = _claims(token)["kubernetes.io"]
    assert kube["pod"] == {"name": "p", "uid": "pod-1"}
    assert kube["node"] == {"name": "n1", "uid": "node-1"}
    assert tokens.authenticate(token, objects) is not None
    recreated = types_pb2.Pod()
    recreated.CopyFrom(objects.pods[("ci", "p")])
    recreated.metadata.uid = "pod-2"
    objects.pods[("ci", "p")] = recreated
    with pytest.raises(Unauthorized):
        tokens.authenticate(token, objects)
    del objects.pods[("ci", "p")]
    with pytest.raises(Unauthorized):
        tokens.authenticate(token, objects)


def test_a_deleted_or_recreated_account_invalidates_its_tokens() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock)
    token = tokens.token_request({}, sa, objects)["status"]["token"]
    again = types_pb2.ServiceAccount()
    again.CopyFrom(sa)
    again.metadata.uid = "sa-2"
    objects.accounts[("ci", "builder")] = again
    with pytest.raises(Unauthorized):
        tokens.authenticate(token, objects)


def test_audiences_must_meet_the_apiservers() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock, api_audiences=("api",))
    assert _claims(tokens.token_request({}, sa, objects)["status"]["token"])["aud"] == ["api"]
    vault = tokens.token_request({"spec": {"audiences": ["vault"]}}, sa, objects)
    with pytest.raises(Unauthorized):
        tokens.authenticate(vault["status"]["token"], objects)


def test_another_issuers_or_a_non_jwt_token_is_not_this_authenticators() -> None:
    clock = Clock()
    objects, sa = _world()
    other = ServiceAccountTokens(signing_key=new_signing_key(), issuers=("https://other",))
    foreign = other.token_request({}, sa, objects)["status"]["token"]
    tokens = _tokens(clock)
    assert tokens.authenticate(foreign, objects) is None
    assert tokens.authenticate("abc", objects) is None
    # the same issuer with another key: a forgery
    forged = ServiceAccountTokens(signing_key=new_signing_key(), now=clock.now)
    with pytest.raises(Unauthorized):
        tokens.authenticate(forged.token_request({}, sa, objects)["status"]["token"], objects)
    # a key given with --service-account-key-file verifies too
    rotated = _tokens(clock, public_keys=(forged.key.public_key(),))
    token = forged.token_request({}, sa, objects)["status"]["token"]
    assert rotated.authenticate(token, objects) is not None


def test_without_a_signing_key_one_is_drawn_for_the_first_token_and_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No --service-account-signing-key-file: the key is drawn when the first token is
    signed, once (a verification before it draws none: no token can be its own yet)."""
    drawn: list[rsa.RSAPrivateKey] = []

    def draw() -> rsa.RSAPrivateKey:
        drawn.append(new_signing_key())
        return drawn[-1]

    monkeypatch.setattr(service_accounts, "new_signing_key", draw)
    clock = Clock()
    objects, sa = _world()
    tokens = ServiceAccountTokens(now=clock.now)
    forged = _tokens(clock).token_request({}, sa, objects)["status"]["token"]
    with pytest.raises(Unauthorized):
        tokens.authenticate(forged, objects)
    assert drawn == []
    first = tokens.token_request({}, sa, objects)["status"]["token"]
    second = tokens.token_request({}, sa, objects)["status"]["token"]
    assert len(drawn) == 1
    for token in (first, second):
        assert tokens.authenticate(token, objects) is not None


def test_the_kubelets_pod_tokens_are_extended_to_a_year_with_warnafter() -> None:
    clock = Clock()
    objects, sa = _world()
    tokens = _tokens(clock)
    ref = {"kind": "Pod", "name": "p"}
    spec = {"expirationSeconds": 3607, "boundObjectRef": ref}
    answer = tokens.token_request({"spec": spec}, sa, objects)
    claims = _claims(answer["status"]["token"])
    assert claims["exp"] - claims["iat"] == EXTENDED_EXPIRATION
    assert claims["kubernetes.io"]["warnafter"] == int(NOW) + 3607
    assert answer["spec"]["expirationSeconds"] == 3607
    plain = _tokens(clock, extend_expiration=False).token_request({"spec": spec}, sa, objects)
    assert _claims(plain["status"]["token"])["exp"] - int(NOW) == 3607


def test_the_max_expiration_caps_a_request() -> None:
    clock = Clock()
    objects, sa = _world()
    answer = _tokens(clock, max_expiration=7200).token_request(
        {"spec": {"expirationSeconds": 86400}}, sa, objects
    )
    assert answer["spec"]["expirationSeconds"] == 7200


@pytest.mark.parametrize(
    ("spec", "error", "text"),
    [
        ({"expirationSeconds": 599}, Invalid, "less than 10 minutes"),
        ({"expirationSeconds": 2**32 + 1}, Invalid, "larger than 2^32 seconds"),
        (
            {"boundObjectRef": {"kind": "ConfigMap", "name": "x"}},
            Invalid,
            "spec.boundObjectRef.kind",
        ),
        ({"boundObjectRef": {"kind": "Pod"}}, Invalid, "spec.boundObjectRef.name"),
        ({"boundObjectRef": {"kind": "Pod", "name": "q"}}, NotFound, 'pods "q" not found'),
        (
            {"boundObjectRef": {"kind": "Pod", "name": "p", "uid": "old"}},
            Conflict,
            "does not match the UID in record",
        ),
    ],
)
def test_a_bad_token_request_names_its_field(
    spec: dict[str, Any], error: type[Exception], text: str
) -> None:
    objects, sa = _world()
    with pytest.raises(error) as e:
        _tokens(Clock()).token_request({"spec": spec}, sa, objects)
    assert text in str(e.value)


def test_a_pod_of_another_account_cannot_be_bound() -> None:
    objects, sa = _world()
    objects.pods[("ci", "p")].spec.service_account_name = "default"
    with pytest.raises(BadRequest) as e:
        _tokens(Clock()).token_request(
            {"spec": {"boundObjectRef": {"kind": "Pod", "name": "p"}}}, sa, objects
        )
    assert 'serviceaccount "builder" to pod running with different' in str(e.value)
