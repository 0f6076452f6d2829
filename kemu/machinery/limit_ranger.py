"""LimitRanges (core/v1): their defaults (upstream pkg/apis/core/v1/defaults.go
SetDefaults_LimitRangeItem) and what the LimitRanger admission plugin does to a new pod
(upstream plugin/pkg/admission/limitranger/admission.go: PodMutateLimitFunc fills each
container's missing requests and limits from the Container items' defaultRequest and
default; PodValidateLimitFunc checks min, max and maxLimitRequestRatio per container and per
pod; PersistentVolumeClaimValidateLimitFunc checks a claim's requested storage against the
PersistentVolumeClaim items' min and max). Pure: the apiserver hands in the namespace's
LimitRanges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.quantity import Quantity, parse_quantity

CONTAINER: Final = "Container"
POD: Final = "Pod"
PVC: Final = "PersistentVolumeClaim"
_ANNOTATION: Final = "kubernetes.io/limit-ranger"


def set_defaults_limit_range(lr: types_pb2.LimitRange) -> None:
    """SetDefaults_LimitRangeItem, for Container items: a missing default limit is the max,
    a missing default request the default limit, else the min."""
    for item in lr.spec.limits:
        if item.type != CONTAINER:
            continue
        for k, v in item.max.items():
            item.default_limit.setdefault(k, v)
        for k, v in item.default_limit.items():
            item.default_request.setdefault(k, v)
        for k, v in item.min.items():
            item.default_request.setdefault(k, v)


def _fill(target: MutableMapping[str, str], defaults: Mapping[str, str]) -> list[str]:
    filled = []
    for k, v in sorted(defaults.items()):
        if k not in target:
            target[k] = v
            filled.append(k)
    return filled


def _containers(pod: types_pb2.Pod) -> Iterable[types_pb2.Container]:
    yield from pod.spec.init_containers
    yield from pod.spec.containers


def mutate_pod(pod: types_pb2.Pod, ranges: Iterable[types_pb2.LimitRange]) -> None:
    """PodMutateLimitFunc (defaultContainerResourceRequirements + mergeContainerResources):
    a container's missing requests from `defaultRequest`, missing limits from `default`;
    the annotation kubernetes.io/limit-ranger says what was set."""
    notes: list[str] = []
    for lr in ranges:
        for item in lr.spec.limits:
            if item.type != CONTAINER:
                continue
            for kind, containers in (
                ("init container", pod.spec.init_containers),
                ("container", pod.spec.containers),
            ):
                for c in containers:
                    requests = _fill(c.resources.requests, item.default_request)
                    limits = _fill(c.resources.limits, item.default_limit)
                    if requests:
                        notes.append(f"{', '.join(requests)} request for {kind} {c.name}")
                    if limits:
                        notes.append(f"{', '.join(limits)} limit for {kind} {c.name}")
    if notes:
        pod.metadata.annotations[_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _q(text: str) -> Quantity:
    return parse_quantity(text)


def _check(
    what: str,
    name: str,
    requests: Mapping[str, str],
    limits: Mapping[str, str],
    item: types_pb2.LimitRangeItem,
) -> list[str]:
    """minConstraint, maxConstraint and limitRequestRatioConstraint of one container or pod
    (`what`: "Container" or "Pod")."""
    errors: list[str] = []
    for k, text in sorted(item.min.items()):
        mn = _q(text)
        req = requests.get(k)
        lim = limits.get(k)
        if req is None:
            errors.append(f"minimum {k} usage per {what} is {text}.  No request is specified")
        elif _q(req) < mn:
            errors.append(f"minimum {k} usage per {what} is {text}, but request is {req}")
        if lim is not None and _q(lim) < mn:
            errors.append(f"minimum {k} usage per {what} is {text}, but limit is {lim}")
    for k, text in sorted(item.max.items()):
        mx = _q(text)
        req = requests.get(k)
        lim = limits.get(k)
        if lim is None:
            errors.append(f"maximum {k} usage per {what} is {text}.  No limit is specified")
        elif mx < _q(lim):
            errors.append(f"maximum {k} usage per {what} is {text}, but limit is {lim}")
        if req is not None and mx < _q(req):
            errors.append(f"maximum {k} usage per {what} is {text}, but request is {req}")
    for k, text in sorted(item.max_limit_request_ratio.items()):
        req = requests.get(k)
        lim = limits.get(k)
        if req is None or lim is None:
            errors.append(
                f"{k} max limit to request ratio per {what} is {text}, but no request or limit is specified"
            )
            continue
        rq, lq = _q(req), _q(lim)
        if rq.milli_value() == 0:
            continue
        ratio = lq.milli_value() / rq.milli_value()
        if ratio > _q(text).milli_value() / 1000:
            errors.append(
                f"{k} max limit to request ratio per {what} is {text}, but provided ratio is {ratio:f}"
            )
    return errors


def _pod_sum(pod: types_pb2.Pod, field: str) -> dict[str, str]:
    total: dict[str, Quantity] = {}
    for c in pod.spec.containers:
        for k, v in getattr(c.resources, field).items():
            total[k] = total.get(k, Quantity.from_int(0)) + _q(v)
    for c in pod.spec.init_containers:  # an init container runs alone: the max counts
        for k, v in getattr(c.resources, field).items():
            q = _q(v)
            if k not in total or total[k] < q:
                total[k] = q
    return {k: str(v) for k, v in total.items()}


def validate_pod(pod: types_pb2.Pod, ranges: Iterable[types_pb2.LimitRange]) -> None:
    """PodValidateLimitFunc: Forbidden with upstream's message when a container or the pod
    is outside a LimitRange's bounds."""
    errors: list[str] = []
    for lr in ranges:
        for item in lr.spec.limits:
            if item.type == CONTAINER:
                for c in _containers(pod):
                    errors.extend(
                        _check(CONTAINER, c.name, c.resources.requests, c.resources.limits, item)
                    )
            elif item.type == POD:
                errors.extend(
                    _check(
                        POD,
                        pod.metadata.name,
                        _pod_sum(pod, "requests"),
                        _pod_sum(pod, "limits"),
                        item,
                    )
                )
    _refuse("pods", pod.metadata.name, errors)


def _refuse(resource: str, name: str, errors: list[str]) -> None:
    """admission.NewForbidden over utilerrors.NewAggregate: one error as it is, several in
    brackets."""
    if errors:
        text = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        raise Forbidden(f'{resource} "{name}" is forbidden: {text}')


def validate_pvc(
    pvc: types_pb2.PersistentVolumeClaim, ranges: Iterable[types_pb2.LimitRange]
) -> None:
    """PersistentVolumeClaimValidateLimitFunc: each PersistentVolumeClaim item's min
    (minConstraint on the requests; a claim's limits are not user input) and max
    (maxRequestConstraint: the request, no limit needed)."""
    requests = pvc.spec.resources.requests
    errors: list[str] = []
    for lr in ranges:
        for item in lr.spec.limits:
            if item.type != PVC:
                continue
            for k, text in sorted(item.min.items()):
                req = requests.get(k)
                if req is None:
                    errors.append(
                        f"minimum {k} usage per {PVC} is {text}.  No request is specified"
                    )
                elif _q(req) < _q(text):
                    errors.append(f"minimum {k} usage per {PVC} is {text}, but request is {req}")
            for k, text in sorted(item.max.items()):
                req = requests.get(k)
                if req is None:
                    errors.append(
                        f"maximum {k} usage per {PVC} is {text}.  No request is specified"
                    )
                elif _q(text) < _q(req):
                    errors.append(f"maximum {k} usage per {PVC} is {text}, but request is {req}")
    _refuse("persistentvolumeclaims", pvc.metadata.name, errors)
