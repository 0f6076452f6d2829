"""The ServiceAccount admission plugin (upstream plugin/pkg/admission/serviceaccount/
admission.go), on by default, acting on a pod's create only:

- A pod without spec.serviceAccountName gets `default`.
- The account must exist in the pod's namespace: its informer's lister first, then live reads
  (ten of them for `default`, which the serviceaccount controller creates with the namespace,
  100-200 ms apart; one for another name). Else the pod is refused as upstream refuses it:
  `pods "<name>" is forbidden: error looking up service account <ns>/<sa>: serviceaccount
  "<sa>" not found` (403).
- Unless spec.automountServiceAccountToken or the account's says false (the pod's word wins),
  every init and regular container gets the read-only mount of the projected volume
  `kube-api-access-<5 random characters>` at /var/run/secrets/kubernetes.io/serviceaccount (a
  container that already mounts something there keeps it), and the pod gets that volume: a
  bound token (path `token`, 3607 s: WarnOnlyBoundTokenExpirationSeconds), `ca.crt` of the
  `kube-root-ca.crt` ConfigMap, and the namespace through the downward API, with the default
  mode written out (kubernetes#104464). A volume already named `kube-api-access-*` is reused.
- A pod without imagePullSecrets gets the account's.
- A mirror pod (the kubelet's copy of a static pod) is not changed, and is refused if it names
  a service account or uses a token projection.
- An account annotated `kubernetes.io/enforce-mountable-secrets: "true"` (any spelling Go's
  strconv.ParseBool reads as true) limits the pod to the secrets it lists (limitSecretReferences):
  every secret volume, every init and regular container's env secretKeyRef and envFrom
  secretRef must name one of the account's `secrets`, and every imagePullSecret one of its
  `imagePullSecrets`; the first that does not is refused (403) in upstream's words. Upstream
  deprecated the annotation in 1.32 (prefer namespaces to isolate secrets) but still enforces it.

kemu simulates containers: nothing reads the volume; it is there so that what clients see is
upstream's pod.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.apps import SAFE_ALPHANUMS
from kemu.machinery.errors import Forbidden
from kemu.machinery.pod_types import is_mirror_pod

DEFAULT_SERVICE_ACCOUNT_NAME: Final = "default"
ENFORCE_MOUNTABLE_SECRETS_ANNOTATION: Final = "kubernetes.io/enforce-mountable-secrets"
GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
"""The spellings Go's strconv.ParseBool reads as true (anything else, even unparsable, is
false for enforceMountableSecrets)."""
DEFAULT_API_TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_VOLUME_NAME: Final = "kube-api-access"
WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: Final = 3607
"""pkg/serviceaccount: an hour and 7 s, which marks the token as one the apiserver may extend."""
PROJECTED_VOLUME_SOURCE_DEFAULT_MODE: Final = 0o644
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
DEFAULT_ATTEMPTS: Final = 10
RETRY_INTERVAL: Final = (0.1, 0.2)

LookUp = Callable[[str, str], Awaitable[types_pb2.ServiceAccount | None]]
"""An account by namespace and name, None when there is none."""
Sleep = Callable[[float], Awaitable[None]]
VolumeName = Callable[[types_pb2.Pod, str], str]
"""A name for a volume of the pod that starts with the base given (the apiserver's name
generator: apiserver/registry/names.py)."""


def simple_name(pod: types_pb2.Pod, base: str) -> str:
    """apiserver's names.SimpleNameGenerator: `base` and 5 random safe characters."""
    del pod
    return base + "".join(secrets.choice(SAFE_ALPHANUMS) for _ in range(5))


def token_volume_source() -> types_pb2.ProjectedVolumeSource:
    """TokenVolumeSource."""
    source = types_pb2.ProjectedVolumeSource(default_mode=PROJECTED_VOLUME_SOURCE_DEFAULT_MODE)
    source.sources.add().service_account_token.CopyFrom(
        types_pb2.ServiceAccountTokenProjection(
            path="token", expiration_seconds=WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
        )
    )
    config_map = source.sources.add().config_map
    config_map.name = ROOT_CA_CONFIG_MAP
    config_map.items.add(key="ca.crt", path="ca.crt")
    source.sources.add().downward_api.items.add(
        path="namespace",
        field_ref=types_pb2.ObjectFieldSelector(api_version="v1", field_path="metadata.namespace"),
    )
    return source


class ServiceAccountAdmission:
    def __init__(
        self,
        cached: LookUp,
        live: LookUp,
        sleep: Sleep,
        generate_name: VolumeName = simple_name,
    ) -> None:
        """`cached`: the lister (the watch cache once it has seen this apiserver's writes);
        `live`: a read from storage; `sleep`: the wait between live reads."""
        self._cached = cached
        self._live = live
        self._sleep = sleep
        self._generate_name = generate_name

    async def admit(self, pod: types_pb2.Pod) -> None:
        """Admit, then Validate, of a pod's create."""
        if is_mirror_pod(pod):
            _validate_mirror_pod(pod)
            return
        spec = pod.spec
        if not spec.service_account_name:
            spec.service_account_name = DEFAULT_SERVICE_ACCOUNT_NAME
        spec.service_account = spec.service_account_name  # the deprecated alias, kept equal
        namespace = pod.metadata.namespace
        account = await self._service_account(namespace, spec.service_account_name)
        if account is None:
            raise Forbidden(
                f'pods "{pod.metadata.name}" is forbidden: error looking up service account '
                f"{namespace}/{spec.service_account_name}: serviceaccount "
                f'"{spec.service_account_name}" not found'
            )
        if _should_automount(account, pod):
            self._mount_service_account_token(pod)
        if not spec.image_pull_secrets:
            for ref in account.image_pull_secrets:
                spec.image_pull_secrets.add(name=ref.name)
        # Validate: the account was read a moment ago (upstream reads it again from the lister)
        if account.metadata.annotations.get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION) in GO_TRUE:
            if refused := limit_secret_references(account, pod):
                raise Forbidden(f'pods "{pod.metadata.name}" is forbidden: {refused}')

    async def _service_account(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None:
        """getServiceAccount."""
        found = await self._cached(namespace, name)
        if found is not None:
            return found
        attempts = DEFAULT_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT_NAME else 1
        interval = RETRY_INTERVAL[0] + secrets.randbelow(100) / 1000
        for attempt in range(attempts):
            if attempt:
                await self._sleep(interval)
            found = await self._live(namespace, name)
            if found is not None:
                return found
        return None

    def _mount_service_account_token(self, pod: types_pb2.Pod) -> None:
        """mountServiceAccountToken."""
        spec = pod.spec
        volume_name = next(
            (v.name for v in spec.volumes if v.name.startswith(SERVICE_ACCOUNT_VOLUME_NAME + "-")),
            "",
        )
        has_volume = bool(volume_name)
        if not volume_name:
            volume_name = self._generate_name(pod, SERVICE_ACCOUNT_VOLUME_NAME + "-")
        needs_volume = False
        for container in (*spec.init_containers, *spec.containers):
            if any(m.mount_path == DEFAULT_API_TOKEN_MOUNT_PATH for m in container.volume_mounts):
                continue
            container.volume_mounts.add(
                name=volume_name, read_only=True, mount_path=DEFAULT_API_TOKEN_MOUNT_PATH
            )
            needs_volume = True
        if needs_volume and not has_volume:
            spec.volumes.add(name=volume_name).projected.CopyFrom(token_volume_source())


def limit_secret_references(account: types_pb2.ServiceAccount, pod: types_pb2.Pod) -> str:
    """limitSecretReferences: why the pod may not use a secret it names, "" when it may."""
    name = account.metadata.name
    mountable = {ref.name for ref in account.secrets}
    spec = pod.spec
    for volume in spec.volumes:
        if volume.HasField("secret") and volume.secret.secret_name not in mountable:
            return (
                f'volume with secret.secretName="{volume.secret.secret_name}" is not allowed '
                f"because service account {name} does not reference that secret"
            )
    for kind, containers in (
        ("init container", spec.init_containers),
        ("container", spec.containers),
    ):
        for container in containers:
            for env in container.env:
                ref = env.value_from.secret_key_ref
                if env.value_from.HasField("secret_key_ref") and ref.name not in mountable:
                    return (
                        f"{kind} {container.name} with envVar {env.name} referencing "
                        f'secret.secretName="{ref.name}" is not allowed because service account '
                        f"{name} does not reference that secret"
                    )
            for env_from in container.env_from:
                if env_from.HasField("secret_ref") and env_from.secret_ref.name not in mountable:
                    return (
                        f"{kind} {container.name} with envFrom referencing "
                        f'secret.secretName="{env_from.secret_ref.name}" is not allowed because '
                        f"service account {name} does not reference that secret"
                    )
    pull_secrets = {ref.name for ref in account.image_pull_secrets}
    for i, pull in enumerate(spec.image_pull_secrets):
        if pull.name not in pull_secrets:
            return (
                f'imagePullSecrets[{i}].name="{pull.name}" is not allowed because service '
                f"account {name} does not reference that imagePullSecret"
            )
    return ""


def _should_automount(account: types_pb2.ServiceAccount, pod: types_pb2.Pod) -> bool:
    """The pod's preference wins, then the account's; true by default."""
    if pod.spec.HasField("automount_service_account_token"):
        return pod.spec.automount_service_account_token
    if account.HasField("automount_service_account_token"):
        return account.automount_service_account_token
    return True


def _validate_mirror_pod(pod: types_pb2.Pod) -> None:
    def refuse(text: str) -> None:
        raise Forbidden(f'pods "{pod.metadata.name}" is forbidden: {text}')

    if pod.spec.service_account_name:
        refuse("a mirror pod may not reference service accounts")
    for volume in pod.spec.volumes:
        if volume.HasField("secret") or any(s.HasField("secret") for s in volume.projected.sources):
            refuse("a mirror pod may not reference secrets")
    for volume in pod.spec.volumes:
        if any(s.HasField("service_account_token") for s in volume.projected.sources):
            refuse("a mirror pod may not use ServiceAccountToken volume projections")
