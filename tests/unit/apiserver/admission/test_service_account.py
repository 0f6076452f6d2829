"""The ServiceAccount admission plugin (issue #57 item 5): the default account, its existence,
the kube-api-access projected volume and its mounts, as upstream's
plugin/pkg/admission/serviceaccount/admission.go."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from apiserver.admission.service_account import (
    DEFAULT_API_TOKEN_MOUNT_PATH,
    ServiceAccountAdmission,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.pod_types import MIRROR_ANNOTATION
from kemu.testing.builders import make_pod

pytestmark = pytest.mark.anyio


class Accounts:
    """The lister and the live reads, counted; `appears_after` live reads make it exist."""

    def __init__(
        self, *names: str, appears_after: int | None = None, automount: bool | None = None
    ):
        self.names = set(names)
        self.live_reads = 0
        self.sleeps: list[float] = []
        self.appears_after = appears_after
        self.automount = automount

    def _account(self, namespace: str, name: str) -> types_pb2.ServiceAccount:
        sa = types_pb2.ServiceAccount()
        sa.metadata.namespace, sa.metadata.name = namespace, name
        if self.automount is not None:
            sa.automount_service_account_token = self.automount
        sa.image_pull_secrets.add(name="regcred")
        return sa

    async def cached(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None:
        return self._account(namespace, name) if name in self.names else None

    async def live(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None:
        self.live_reads += 1
        if self.appears_after is not None and self.live_reads > self.appears_after:
            return self._account(namespace, name)
        return await self.cached(namespace, name)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def plugin(self) -> ServiceAccountAdmission:
        return ServiceAccountAdmission(
            self.cached, self.live, self.sleep, generate_name=lambda pod, base: base + "abcde"
        )


async def test_a_pod_gets_the_default_account_and_the_kube_api_access_volume() -> None:
    pod = make_pod("p").container("c2").obj()
    pod.spec.init_containers.add(name="init", image="busybox")
    await Accounts("default").plugin().admit(pod)
    assert pod.spec.service_account_name == "default"
    assert pod.spec.service_account == "default"
    assert [v.name for v in pod.spec.volumes] == ["kube-api-access-abcde"]
    assert json_format.MessageToDict(pod.spec.volumes[0].projected) == {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": "3607", "path": "token"}},
            {
                "configMap": {
                    "name": "kube-root-ca.crt",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
            {
                "downwardAPI": {
                    "items": [
                        {
                            "path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                        }
                    ]
                }
            },
        ],
    }
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        assert [(m.name, m.read_only, m.mount_path) for m in c.volume_mounts] == [
            ("kube-api-access-abcde", True, DEFAULT_API_TOKEN_MOUNT_PATH)
        ]
    assert [r.name for r in pod.spec.image_pull_secrets] == ["regcred"]


async def test_a_missing_account_is_refused_as_upstream() -> None:
    pod = make_pod("p").obj()
    pod.spec.service_account_name = "robot"
    accounts = Accounts("default")
    with pytest.raises(Forbidden) as e:
        await accounts.plugin().admit(pod)
    assert e.value.message == (
        'pods "p" is forbidden: error looking up service account default/robot: '
        'serviceaccount "robot" not found'
    )
    assert accounts.live_reads == 1  # one live read for another name than default


async def test_the_default_account_is_waited_for_ten_live_reads() -> None:
    accounts = Accounts(appears_after=3)
    pod = make_pod("p").obj()
    await accounts.plugin().admit(pod)
    assert accounts.live_reads == 4 and len(accounts.sleeps) == 3
    assert all(0.1 <= s < 0.2 for s in accounts.sleeps)
    never = Accounts()
    with pytest.raises(Forbidden, match='serviceaccount "default" not found'):
        await never.plugin().admit(make_pod("q").obj())
    assert never.live_reads == 10


@pytest.mark.parametrize(("pod_says", "account_says", "mounted"), [
    (False, None, False),
    (None, False, False),
    (True, False, True),  # the pod's word wins
    (False, True, False),
])  # fmt: skip
async def test_automount_service_account_token_false_mounts_nothing(
    pod_says: bool | None, account_says: bool | None, mounted: bool
) -> None:
    pod = make_pod("p").obj()
    if pod_says is not None:
        pod.spec.automount_service_account_token = pod_says
    await Accounts("default", automount=account_says).plugin().admit(pod)
    assert bool(pod.spec.volumes) is mounted
    assert bool(pod.spec.containers[0].volume_mounts) is mounted


async def test_a_container_mounting_the_path_keeps_its_own_and_a_named_volume_is_reused() -> None:
    pod = make_pod("p").container("c2").obj()
    pod.spec.volumes.add(name="kube-api-access-zzzzz").projected.default_mode = 420
    pod.spec.containers[0].volume_mounts.add(name="mine", mount_path=DEFAULT_API_TOKEN_MOUNT_PATH)
    await Accounts("default").plugin().admit(pod)
    assert [v.name for v in pod.spec.volumes] == ["kube-api-access-zzzzz"]
    assert [m.name for m in pod.spec.containers[0].volume_mounts] == ["mine"]
    assert [m.name for m in pod.spec.containers[1].volume_mounts] == ["kube-api-access-zzzzz"]


async def test_a_mirror_pod_is_left_alone_and_may_not_name_an_account() -> None:
    pod = make_pod("p").obj()
    pod.metadata.annotations[MIRROR_ANNOTATION] = "x"
    await Accounts().plugin().admit(pod)
    assert not pod.spec.service_account_name and not pod.spec.volumes
    pod.spec.service_account_name = "default"
    with pytest.raises(Forbidden, match="a mirror pod may not reference service accounts"):
        await Accounts("default").plugin().admit(pod)


class Enforcing(Accounts):
    """An account with the enforce-mountable-secrets annotation set to `value`, listing the
    secret `allowed` and the pull secret `regcred`."""

    def __init__(self, value: str = "true") -> None:
        super().__init__("default")
        self.value = value

    def _account(self, namespace: str, name: str) -> types_pb2.ServiceAccount:
        sa = super()._account(namespace, name)
        sa.metadata.annotations["kubernetes.io/enforce-mountable-secrets"] = self.value
        sa.secrets.add(name="allowed")
        return sa


def _secret_pod() -> types_pb2.Pod:
    pod = make_pod("p").obj()
    pod.spec.automount_service_account_token = False
    return pod


async def test_enforce_mountable_secrets_admits_the_secrets_the_account_lists() -> None:
    pod = _secret_pod()
    pod.spec.volumes.add(name="v").secret.secret_name = "allowed"
    container = pod.spec.containers[0]
    container.env.add(name="E").value_from.secret_key_ref.name = "allowed"
    container.env_from.add().secret_ref.name = "allowed"
    container.env_from.add().config_map_ref.name = "any-config-map"
    pod.spec.image_pull_secrets.add(name="regcred")
    await Enforcing().plugin().admit(pod)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda pod: setattr(pod.spec.volumes.add(name="v").secret, "secret_name", "other"),
            'volume with secret.secretName="other" is not allowed because service account '
            "default does not reference that secret",
        ),
        (
            lambda pod: setattr(
                pod.spec.containers[0].env.add(name="E").value_from.secret_key_ref,
                "name",
                "other",
            ),
            'container c with envVar E referencing secret.secretName="other" is not allowed '
            "because service account default does not reference that secret",
        ),
        (
            lambda pod: setattr(
                pod.spec.init_containers.add(name="i").env_from.add().secret_ref, "name", "other"
            ),
            'init container i with envFrom referencing secret.secretName="other" is not allowed '
            "because service account default does not reference that secret",
        ),
        (
            lambda pod: pod.spec.image_pull_secrets.add(name="other"),
            'imagePullSecrets[0].name="other" is not allowed because service account default '
            "does not reference that imagePullSecret",
        ),
    ],
)
async def test_enforce_mountable_secrets_refuses_a_secret_the_account_does_not_list(
    build: object, message: str
) -> None:
    pod = _secret_pod()
    assert callable(build)
    build(pod)
    with pytest.raises(Forbidden) as refused:
        await Enforcing().plugin().admit(pod)
    assert str(refused.value) == f'pods "p" is forbidden: {message}'
    # without the annotation (or with a value Go's ParseBool does not read as true) the
    # same pod is admitted
    for value in ("false", "yes"):
        await Enforcing(value).plugin().admit(_rebuilt(build))


def _rebuilt(build: object) -> types_pb2.Pod:
    pod = _secret_pod()
    assert callable(build)
    build(pod)
    return pod
