"""Issue #34's kinds in kubectl's protobuf bodies (upstream's generated.proto numbers in
apiserver/endpoints/rest/protobuf_schema.py): a PersistentVolume's inlined source, a Secret's bytes and
stringData, a StatefulSet's claim templates, a CronJob's timeZone (field 8)."""

from __future__ import annotations

from apiserver.endpoints.rest import protobuf
from apiserver.storage.encoding import field_bytes, varint
from kemu.machinery import convert
from kemu.machinery.defaults import set_defaults
from kemu.machinery.kinds import BY_KIND


def _k8s(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field_bytes(1, api_version.encode()) + field_bytes(2, kind.encode())
    return b"k8s\x00" + field_bytes(1, type_meta) + field_bytes(2, raw)


def _entry(key: bytes, value: bytes) -> bytes:
    return field_bytes(1, key) + field_bytes(2, value)


def test_a_volumes_inlined_source_and_capacity() -> None:
    source = field_bytes(3, field_bytes(1, b"/data"))  # PersistentVolumeSource.hostPath
    capacity = field_bytes(1, _entry(b"storage", field_bytes(1, b"5Gi")))
    spec = capacity + field_bytes(2, source) + field_bytes(3, b"ReadWriteOnce")
    body = field_bytes(1, field_bytes(1, b"pv1")) + field_bytes(2, spec)
    decoded = protobuf.decode(_k8s("v1", "PersistentVolume", body))
    assert decoded == {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "hostPath": {"path": "/data"},
            "accessModes": ["ReadWriteOnce"],
        },
    }
    pv = convert.from_dict(BY_KIND["PersistentVolume"], decoded)
    pv_spec = convert.to_dict(pv)["spec"]
    assert isinstance(pv_spec, dict) and pv_spec["hostPath"] == {"path": "/data"}


def test_a_secrets_bytes_and_string_data() -> None:
    body = (
        field_bytes(1, field_bytes(1, b"s") + field_bytes(3, b"ns"))
        + field_bytes(2, _entry(b"k", b"\x00\xffraw"))
        + field_bytes(3, b"Opaque")
        + field_bytes(4, _entry(b"plain", b"text"))
    )
    decoded = protobuf.decode(_k8s("v1", "Secret", body))
    assert decoded is not None
    assert decoded["data"] == {"k": "AP9yYXc="} and decoded["stringData"] == {"plain": "text"}
    secret = convert.from_dict(BY_KIND["Secret"], decoded)
    set_defaults(secret)
    assert convert.to_dict(secret)["data"] == {"k": "AP9yYXc=", "plain": "dGV4dA=="}


def test_stateful_set_claim_templates_and_cron_job_time_zone() -> None:
    claim_spec = field_bytes(1, b"ReadWriteOnce") + field_bytes(
        2, field_bytes(2, _entry(b"storage", field_bytes(1, b"1Gi")))
    )
    claim = field_bytes(1, field_bytes(1, b"data")) + field_bytes(2, claim_spec)
    sts_spec = bytes([1 << 3]) + varint(3) + field_bytes(4, claim) + field_bytes(5, b"db")
    sts = protobuf.decode(_k8s("apps/v1", "StatefulSet", field_bytes(2, sts_spec)))
    assert sts is not None
    assert sts["spec"] == {
        "replicas": 3,
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
        "serviceName": "db",
    }
    cron_spec = field_bytes(1, b"@daily") + field_bytes(8, b"Europe/Berlin")
    cron = protobuf.decode(_k8s("batch/v1", "CronJob", field_bytes(2, cron_spec)))
    assert cron is not None
    assert cron["spec"] == {"schedule": "@daily", "timeZone": "Europe/Berlin"}
