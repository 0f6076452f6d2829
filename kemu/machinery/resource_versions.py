"""resource.k8s.io's older group versions on the REST edge: every version stores the same
object (kemu's messages have v1's shape); v1beta1 and v1alpha3 differ in shape only, converted
here as upstream's conversion functions do (pkg/apis/resource/v1beta1/conversion.go):

- a ResourceSlice's device holds its fields under `basic:` (v1, v1beta2: flat);
- a request holds deviceClassName, selectors, allocationMode, count, adminAccess, tolerations
  and capacity directly (v1, v1beta2: under `exactly:`), beside firstAvailable;
- a slice's nodeName is a string and allNodes a bool ("" and false: unset).

v1beta2 has v1's shape (only apiVersion differs). kemu.machinery.podgroups dispatches the
REST edge's conversions (its `_CONVERSIONS`) and takes these in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kemu.machinery.jsonvalue import JSON, JSONObject

RESOURCE_V1ALPHA3: Final = "resource.k8s.io/v1alpha3"
RESOURCE_V1BETA1: Final = "resource.k8s.io/v1beta1"
RESOURCE_V1BETA2: Final = "resource.k8s.io/v1beta2"

_EXACT_FIELDS: Final = (
    "deviceClassName",
    "selectors",
    "allocationMode",
    "count",
    "adminAccess",
    "tolerations",
    "capacity",
)


def _dict(value: JSON) -> JSONObject | None:
    return value if isinstance(value, dict) else None


def _list(value: JSON) -> list[JSON]:
    return value if isinstance(value, list) else []


def _requests(spec: JSON) -> list[JSONObject]:
    """A claim spec's requests (those that are objects)."""
    s = _dict(spec)
    devices = _dict(s.get("devices")) if s is not None else None
    if devices is None:
        return []
    return [r for r in _list(devices.get("requests")) if isinstance(r, dict)]


def _claim_spec_in(spec: JSON) -> None:
    """v1beta1 requests -> v1's: the flat fields under `exactly` (unless firstAvailable)."""
    for r in _requests(spec):
        flat: JSONObject = {k: r.pop(k) for k in _EXACT_FIELDS if k in r}
        if flat and not r.get("firstAvailable"):
            r["exactly"] = flat
        elif flat:
            r.update(flat)  # both: left for validation to refuse as the v1 shape would not


def _claim_spec_out(spec: JSON) -> None:
    for r in _requests(spec):
        exactly = _dict(r.pop("exactly", None))
        if exactly:
            r.update(exactly)


def _claim_in(body: JSONObject) -> None:
    _claim_spec_in(body.get("spec"))


def _claim_out(body: JSONObject) -> None:
    _claim_spec_out(body.get("spec"))


def _template_in(body: JSONObject) -> None:
    spec = _dict(body.get("spec"))
    if spec is not None:
        _claim_spec_in(spec.get("spec"))


def _template_out(body: JSONObject) -> None:
    spec = _dict(body.get("spec"))
    if spec is not None:
        _claim_spec_out(spec.get("spec"))


def _slice_in(body: JSONObject) -> None:
    spec = _dict(body.get("spec"))
    if spec is None:
        return
    if spec.get("nodeName") == "":
        del spec["nodeName"]
    if spec.get("allNodes") is False:
        del spec["allNodes"]
    for device in _list(spec.get("devices")):
        d = _dict(device)
        if d is None:
            continue
        basic = _dict(d.pop("basic", None))
        if basic:
            d.update(basic)


def _slice_out(body: JSONObject) -> None:
    spec = _dict(body.get("spec"))
    if spec is None:
        return
    for device in _list(spec.get("devices")):
        d = _dict(device)
        if d is None:
            continue
        basic = {k: d.pop(k) for k in list(d) if k != "name"}
        if basic:
            d["basic"] = basic


def _same(body: JSONObject) -> None:
    """v1beta2 (and DeviceTaintRule's versions): v1's shape."""


_Convert = Callable[[JSONObject], None]
_NESTED: Final[dict[str, tuple[_Convert, _Convert]]] = {
    "ResourceSlice": (_slice_in, _slice_out),
    "ResourceClaim": (_claim_in, _claim_out),
    "ResourceClaimTemplate": (_template_in, _template_out),
    "DeviceClass": (_same, _same),
}

CONVERSIONS: Final[dict[tuple[str, str], tuple[_Convert, _Convert]]] = {
    **{(RESOURCE_V1BETA1, kind): c for kind, c in _NESTED.items()},
    **{(RESOURCE_V1ALPHA3, kind): c for kind, c in _NESTED.items()},
}
"""(group version, kind) -> (in: the version's body to v1's, out: v1's to the version's)."""
