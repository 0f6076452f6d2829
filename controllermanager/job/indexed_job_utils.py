"""Indexed completion mode (upstream pkg/controller/job/indexed_job_utils.go), as far as kemu
models it: each pod carries its completion index (annotation and label
batch.kubernetes.io/job-completion-index, the env variable JOB_COMPLETION_INDEX from the
annotation, hostname `<job>-<index>` when the template sets none, generateName
`<job>-<index>-`), and the controller creates pods for the lowest indexes that have neither
an active pod nor a succeeded one.

Not modelled: status.completedIndexes and failedIndexes, counting succeeded pods by distinct
index (kemu counts succeeded pods, as for NonIndexed Jobs: a duplicate index, which upstream
counts once, would be counted twice), backoffLimitPerIndex, successPolicy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from controllermanager.controller_utils import is_pod_active
from kemu.api.v1 import types_pb2
from kemu.machinery import batch

MAX_GENERATED_NAME_LENGTH: Final = 58
"""apiserver names.MaxGeneratedNameLength: 63 less the 5 random characters."""


def completion_index(pod: types_pb2.Pod) -> int | None:
    """getCompletionIndex: the pod's index from its annotation (None: absent or bad)."""
    text = pod.metadata.annotations.get(batch.JOB_COMPLETION_INDEX_ANNOTATION)
    if text is None or not text.isdigit():
        return None
    return int(text)


def indexes_to_create(completions: int, pods: Iterable[types_pb2.Pod], count: int) -> list[int]:
    """The `count` lowest indexes below `completions` held by no active and no succeeded
    pod (firstPendingIndexes)."""
    taken: set[int] = set()
    for pod in pods:
        index = completion_index(pod)
        if index is not None and (is_pod_active(pod) or pod.status.phase == "Succeeded"):
            taken.add(index)
    wanted: list[int] = []
    for index in range(completions):
        if len(wanted) == count:
            break
        if index not in taken:
            wanted.append(index)
    return wanted


def pod_generate_name_with_index(job_name: str, index: int) -> str:
    """podGenerateNameWithIndex: `<job>-<index>-`, the job name cut to fit."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[: MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _add_index_env(container: types_pb2.Container) -> None:
    """addCompletionIndexEnvVariable: JOB_COMPLETION_INDEX from the annotation."""
    if any(env.name == batch.COMPLETION_INDEX_ENV_NAME for env in container.env):
        return
    env = container.env.add(name=batch.COMPLETION_INDEX_ENV_NAME)
    env.value_from.field_ref.field_path = (
        f"metadata.annotations['{batch.JOB_COMPLETION_INDEX_ANNOTATION}']"
    )


def indexed_template(
    template: types_pb2.PodTemplateSpec, job_name: str, index: int
) -> types_pb2.PodTemplateSpec:
    """A copy of the pod template for completion index `index` (addCompletionIndexAnnotation,
    addCompletionIndexLabel, addCompletionIndexEnvVariables, the hostname)."""
    out = types_pb2.PodTemplateSpec()
    out.CopyFrom(template)
    out.metadata.annotations[batch.JOB_COMPLETION_INDEX_ANNOTATION] = str(index)
    out.metadata.labels[batch.JOB_COMPLETION_INDEX_ANNOTATION] = str(index)
    if not out.spec.hostname:
        out.spec.hostname = f"{job_name}-{index}"
    for container in (*out.spec.init_containers, *out.spec.containers):
        _add_index_env(container)
    return out
