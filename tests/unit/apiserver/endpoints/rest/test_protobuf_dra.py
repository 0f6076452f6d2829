"""S-DRA-API-PB-1: resource.k8s.io/v1 objects in kubectl's protobuf bodies, in upstream's field
numbers (kubernetes/api resource/v1/generated.proto: a device's attributes map 2, a claim
status's devices 4, a consumer reference's resource 3; core/v1 PodSpec.resourceClaims 39 and
PodResourceClaim's sources 3 and 4), and a RawExtension's JSON read back as JSON."""

from __future__ import annotations

from apiserver.endpoints.rest import protobuf
from apiserver.storage.encoding import field_bytes, varint

V1 = "resource.k8s.io/v1"


def _k8s(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field_bytes(1, api_version.encode()) + field_bytes(2, kind.encode())
    return b"k8s\x00" + field_bytes(1, type_meta) + field_bytes(2, raw)


def _meta(name: str, namespace: str = "") -> bytes:
    ns = field_bytes(3, namespace.encode()) if namespace else b""
    return field_bytes(1, field_bytes(1, name.encode()) + ns)


def _entry(key: str, value: bytes) -> bytes:
    return field_bytes(1, key.encode()) + field_bytes(2, value)


def test_a_resource_slice_body() -> None:
    model = field_bytes(4, b"a100")  # DeviceAttribute.string
    memory = field_bytes(1, field_bytes(1, b"80Gi"))  # DeviceCapacity.value (a Quantity)
    device = (
        field_bytes(1, b"gpu-0")
        + field_bytes(2, _entry("model", model))
        + field_bytes(3, _entry("memory", memory))
    )
    pool = field_bytes(1, b"node-1") + varint(2 << 3) + varint(3) + varint(3 << 3) + varint(1)
    spec = field_bytes(1, b"gpu.example.com") + field_bytes(2, pool) + field_bytes(3, b"node-1")
    spec += field_bytes(6, device)
    decoded = protobuf.decode(_k8s(V1, "ResourceSlice", _meta("s") + field_bytes(2, spec)))
    assert decoded is not None
    assert decoded["spec"] == {
        "driver": "gpu.example.com",
        "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
        "nodeName": "node-1",
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {"model": {"string": "a100"}},
                "capacity": {"memory": {"value": "80Gi"}},
            }
        ],
    }


def test_a_resource_claim_body_with_opaque_parameters_and_status() -> None:
    selector = field_bytes(1, field_bytes(1, b'device.driver == "gpu.example.com"'))
    exactly = field_bytes(1, b"gpu") + field_bytes(2, selector) + varint(4 << 3) + varint(2)
    request = field_bytes(1, b"r") + field_bytes(2, exactly)
    opaque = field_bytes(1, b"gpu.example.com") + field_bytes(2, field_bytes(1, b'{"a":[1]}'))
    config = field_bytes(1, b"r") + field_bytes(2, field_bytes(1, opaque))
    spec = field_bytes(1, field_bytes(1, request) + field_bytes(3, config))
    consumer = field_bytes(3, b"pods") + field_bytes(4, b"p") + field_bytes(5, b"u-1")
    result = field_bytes(1, b"r") + field_bytes(2, b"gpu.example.com")
    result += field_bytes(3, b"node-1") + field_bytes(4, b"gpu-0")
    allocation = field_bytes(1, field_bytes(1, result))
    status = field_bytes(1, allocation) + field_bytes(2, consumer)
    body = _meta("c", "ns") + field_bytes(2, spec) + field_bytes(3, status)
    decoded = protobuf.decode(_k8s(V1, "ResourceClaim", body))
    assert decoded is not None
    assert decoded["spec"] == {
        "devices": {
            "requests": [
                {
                    "name": "r",
                    "exactly": {
                        "deviceClassName": "gpu",
                        "selectors": [
                            {"cel": {"expression": 'device.driver == "gpu.example.com"'}}
                        ],
                        "count": 2,
                    },
                }
            ],
            "config": [
                {
                    "requests": ["r"],
                    "opaque": {"driver": "gpu.example.com", "parameters": {"a": [1]}},
                }
            ],
        }
    }
    assert decoded["status"] == {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "r",
                        "driver": "gpu.example.com",
                        "pool": "node-1",
                        "device": "gpu-0",
                    }
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u-1"}],
    }


def test_a_pods_claims() -> None:
    container = field_bytes(1, b"c") + field_bytes(
        8, field_bytes(3, field_bytes(1, b"gpu") + field_bytes(2, b"r"))
    )
    claim = field_bytes(1, b"gpu") + field_bytes(4, b"gpu-template")
    spec = field_bytes(2, container) + field_bytes(39, claim)
    status = field_bytes(15, field_bytes(1, b"gpu") + field_bytes(2, b"p-gpu-x7k2q"))
    decoded = protobuf.decode(
        _k8s("v1", "Pod", _meta("p", "ns") + field_bytes(2, spec) + field_bytes(3, status))
    )
    assert decoded is not None
    assert decoded["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "gpu-template"}
    ]
    assert decoded["spec"]["containers"][0]["resources"] == {
        "claims": [{"name": "gpu", "request": "r"}]
    }
    assert decoded["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": "p-gpu-x7k2q"}
    ]
