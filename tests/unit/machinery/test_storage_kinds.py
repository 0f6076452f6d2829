"""Issue #34's kinds in the machinery: PersistentVolume, PersistentVolumeClaim, StorageClass,
CSINode, StatefulSet, ServiceAccount, Secret, CronJob, defaulted, validated, prepared and
printed as upstream (pkg/apis/*/v1/defaults.go, pkg/apis/*/validation,
pkg/registry/*/strategy.go, pkg/printers/internalversion/printers.go)."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import convert, printers
from kemu.machinery.cron import CronError, parse_standard
from kemu.machinery.defaults import set_defaults
from kemu.machinery.kinds import BY_KIND, kind_of
from kemu.machinery.strategy import StrategyOptions, before_update, strategy_for
from kemu.machinery.validation.objects import validate_object

ON = StrategyOptions()

PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv1"},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/data/pv1"},
        "storageClassName": "standard",
    },
}
PVC: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "default"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}
SC: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard"},
    "provisioner": "csi.kemu.io",
}
CSI_NODE: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSINode",
    "metadata": {"name": "n1"},
    "spec": {"drivers": [{"name": "csi.kemu.io", "nodeID": "n1", "allocatable": {"count": 8}}]},
}
TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "db"}},
    "spec": {"containers": [{"name": "db", "image": "postgres:16"}]},
}
STS: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "db", "namespace": "default"},
    "spec": {
        "serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}},
        "template": TEMPLATE,
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        ],
    },
}
CRON: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "backup", "namespace": "default"},
    "spec": {
        "schedule": "*/5 * * * *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [{"name": "b", "image": "busybox"}],
                    }
                }
            }
        },
    },
}
SECRET: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "s", "namespace": "default"},
    "data": {"a": "YWFh"},
    "stringData": {"b": "bbb"},
}


def obj(data: dict[str, Any], /, **changes: Any) -> Message:
    """The object of `data` (deep-copied), `changes` set at dotted paths (None deletes)."""
    d = copy.deepcopy(data)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = d
        for p in parents:
            target = target.setdefault(p, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return convert.from_dict(BY_KIND[data["kind"]], d)


def created(data: dict[str, Any], /, **changes: Any) -> Message:
    o = obj(data, **changes)
    strategy_for(kind_of(o)).prepare_for_create(o, ON, 100.0)
    return o


def errors(o: Message, old: Message | None = None) -> list[str]:
    return [f"{c.field}: {c.message}" for c in validate_object(o, old=old)]


# ---------------------------------------------------------------- defaults and create


def test_every_new_kind_is_valid_once_created_as_a_chart_writes_it() -> None:
    for data in (PV, PVC, SC, CSI_NODE, STS, CRON, SECRET):
        assert errors(created(data)) == [], data["kind"]
    sa = convert.from_dict(
        BY_KIND["ServiceAccount"], {"metadata": {"name": "app", "namespace": "default"}}
    )
    assert errors(sa) == []


def test_a_new_volume_and_claim_are_pending_with_upstreams_defaults() -> None:
    pv = created(PV, status={"phase": "Bound"})
    assert isinstance(pv, types_pb2.PersistentVolume)
    assert pv.status.phase == "Pending"
    assert pv.spec.persistent_volume_reclaim_policy == "Retain"
    assert pv.spec.volume_mode == "Filesystem"
    pvc = created(PVC, status={"phase": "Bound", "capacity": {"storage": "1Gi"}})
    assert isinstance(pvc, types_pb2.PersistentVolumeClaim)
    assert pvc.status.phase == "Pending" and not pvc.status.capacity
    assert pvc.spec.volume_mode == "Filesystem"
    assert not pvc.spec.HasField("storage_class_name")  # unset: the default class's to fill


def test_a_volumes_phase_transitions_are_timed() -> None:
    """PersistentVolumeLastPhaseTransitionTime: set on create, and by a status update that
    changes the phase without a time of its own; kept when the phase stays."""
    pv = created(PV)
    assert isinstance(pv, types_pb2.PersistentVolume)
    assert pv.status.last_phase_transition_time.seconds == 100
    strategy = strategy_for(kind_of(pv))
    same = types_pb2.PersistentVolume()
    same.CopyFrom(pv)
    same.status.ClearField("last_phase_transition_time")
    kept = strategy.prepare_for_status_update(same, pv, ON, 200.0)
    assert isinstance(kept, types_pb2.PersistentVolume)
    assert kept.status.last_phase_transition_time.seconds == 100
    available = types_pb2.PersistentVolume()
    available.CopyFrom(pv)
    available.status.phase = "Available"
    moved = strategy.prepare_for_status_update(available, pv, ON, 300.0)
    assert isinstance(moved, types_pb2.PersistentVolume)
    assert (moved.status.phase, moved.status.last_phase_transition_time.seconds) == (
        "Available",
        300,
    )


def test_storage_class_stateful_set_and_cron_job_defaults() -> None:
    sc = created(SC)
    assert isinstance(sc, types_pb2.StorageClass)
    assert (sc.reclaim_policy, sc.volume_binding_mode) == ("Delete", "Immediate")
    sts = created(STS, status={"replicas": 3})
    assert isinstance(sts, types_pb2.StatefulSet)
    spec = sts.spec
    assert spec.replicas == 1 and spec.revision_history_limit == 10
    assert spec.pod_management_policy == "OrderedReady"
    assert spec.update_strategy.type == "RollingUpdate"
    assert spec.update_strategy.rolling_update.HasField("partition")
    assert spec.update_strategy.rolling_update.partition == 0
    retention = spec.persistent_volume_claim_retention_policy
    assert (retention.when_deleted, retention.when_scaled) == ("Retain", "Retain")
    assert spec.volume_claim_templates[0].spec.volume_mode == "Filesystem"
    assert spec.volume_claim_templates[0].status.phase == "Pending"  # as the claims' defaults
    assert spec.template.spec.restart_policy == "Always"  # the pod template's defaults
    assert sts.status.replicas == 0  # reset on create
    cj = created(CRON)
    assert isinstance(cj, types_pb2.CronJob)
    assert cj.spec.concurrency_policy == "Allow"
    assert cj.spec.HasField("suspend") and not cj.spec.suspend
    assert (cj.spec.successful_jobs_history_limit, cj.spec.failed_jobs_history_limit) == (3, 1)


def test_a_secrets_string_data_is_merged_into_data_and_never_stored() -> None:
    secret = obj(SECRET, stringData={"a": "new", "b": "bbb"})
    set_defaults(secret)
    assert isinstance(secret, types_pb2.Secret)
    assert dict(secret.data) == {"a": b"new", "b": b"bbb"}  # stringData wins
    assert not secret.string_data and secret.type == "Opaque"
    wire = convert.to_dict(secret, wire=True)
    assert wire["data"] == {"a": "bmV3", "b": "YmJi"} and "stringData" not in wire


# ---------------------------------------------------------------- validation


def test_volume_validation_names_the_field() -> None:
    assert errors(obj(PV, spec__accessModes=[])) == ["spec.accessModes: Required value"]
    assert errors(obj(PV, spec__capacity={}))[0] == "spec.capacity: Required value"
    assert errors(obj(PV, spec__capacity={"storage": "0"})) == [
        "spec.capacity[storage]: Invalid value: 0: must be a valid resource quantity",
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
    ]
    assert errors(obj(PV, spec__capacity={"storage": "1Gi", "cpu": "1"}))[0].startswith(
        "spec.capacity: Unsupported value: "
    )
    recycle_root = obj(
        PV, spec__hostPath={"path": "/"}, spec__persistentVolumeReclaimPolicy="Recycle"
    )
    assert errors(recycle_root) == [
        "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath "
        "mount of '/'"
    ]
    assert errors(obj(PV, spec__hostPath=None)) == [
        "spec: Required value: must specify a volume type"
    ]
    two = obj(PV, spec__csi={"driver": "csi.kemu.io", "volumeHandle": "h"})
    assert errors(two) == ["spec.csi: Forbidden: may not specify more than 1 volume type"]
    assert errors(obj(PV, spec__persistentVolumeReclaimPolicy="Keep")) == [
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: '
        '"Delete", "Recycle", "Retain"'
    ]
    assert errors(obj(PV, spec__volumeMode="Raw")) == [
        'spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"'
    ]
    assert errors(obj(PV, spec__accessModes=["ReadWriteOncePod", "ReadOnlyMany"])) == [
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"
    ]
    local = obj(PV, spec__hostPath=None, spec__local={"path": "/mnt/disk"})
    assert errors(local) == [
        "spec.nodeAffinity: Required value: Local volume requires node affinity"
    ]
    ebs = obj(PV, spec__hostPath=None, spec__awsElasticBlockStore={"partition": 256})
    assert errors(ebs) == [
        "spec.awsElasticBlockStore.volumeID: Required value",
        "spec.awsElasticBlockStore.partition: Invalid value: 256: must be between 1 and 255, "
        "inclusive",
    ]
    assert errors(obj(PV, spec__hostPath=None, spec__awsElasticBlockStore={"volumeID": "v"})) == []
    affinity = obj(PV, spec__nodeAffinity={"required": {"nodeSelectorTerms": []}})
    assert errors(affinity) == [
        "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one "
        "node selector term"
    ]


def test_a_volumes_claim_ref_may_change_its_source_not() -> None:
    old = created(PV)
    bound = obj(PV, spec__claimRef={"namespace": "default", "name": "data"})
    set_defaults(bound)
    assert errors(bound, old) == []
    moved = obj(PV, spec__hostPath={"path": "/elsewhere"})
    set_defaults(moved)
    assert errors(moved, old) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after "
        "creation"
    ]


def test_claim_validation_names_the_field() -> None:
    assert errors(obj(PVC, spec__resources={})) == ["spec.resources[storage]: Required value"]
    assert errors(obj(PVC, spec__resources={"requests": {"storage": "0"}})) == [
        'spec.resources[storage]: Invalid value: "0": must be greater than zero'
    ]
    assert errors(obj(PVC, spec__accessModes=["ReadWriteOncePod", "ReadWriteOnce"])) == [
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"
    ]
    assert errors(obj(PVC, spec__resources={"requests": {"storage": "-1Gi"}})) == [
        'spec.resources[storage]: Invalid value: "-1Gi": must be greater than zero'
    ]
    snapshot = obj(PVC, spec__dataSource={"kind": "VolumeSnapshot", "name": "snap"})
    assert errors(snapshot) == [
        "spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' "
        "when referencing the default apiGroup"
    ]
    assert errors(obj(PVC, spec__accessModes=["WriteSometimes"]))[0].startswith(
        'spec.accessModes: Unsupported value: "WriteSometimes"'
    )


def test_a_claims_spec_is_immutable_but_for_binding_and_a_bound_claims_growth() -> None:
    old = created(PVC)
    bound = obj(PVC, spec__volumeName="pv1")
    set_defaults(bound)
    assert errors(bound, old) == []  # the binder sets volumeName once
    classed = obj(PVC, spec__storageClassName="fast")
    set_defaults(classed)
    assert errors(classed, old) == []  # a claim of no class gets the default one later
    reclassed = obj(PVC, spec__storageClassName="slow")
    set_defaults(reclassed)
    forbidden = (
        "spec: Forbidden: spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims"
    )
    assert errors(reclassed, classed) == [forbidden]
    grown = obj(PVC, spec__resources={"requests": {"storage": "2Gi"}})
    set_defaults(grown)
    assert errors(grown, old) == [forbidden]  # not bound yet
    assert isinstance(grown, types_pb2.PersistentVolumeClaim)
    grown.status.phase = "Bound"
    assert errors(grown, old) == []
    shrunk = obj(PVC, spec__resources={"requests": {"storage": "512Mi"}})
    set_defaults(shrunk)
    assert isinstance(shrunk, types_pb2.PersistentVolumeClaim)
    shrunk.status.phase = "Bound"
    assert errors(shrunk, old) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than previous value"
    ]
    rebound = obj(PVC, spec__volumeName="pv2")
    set_defaults(rebound)
    assert errors(rebound, bound) == [forbidden]


def test_storage_class_rules() -> None:
    assert errors(obj(SC, provisioner=None)) == ["provisioner: Required value"]
    assert errors(obj(SC, reclaimPolicy="Recycle")) == [
        'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'
    ]
    assert errors(obj(SC, volumeBindingMode="Later"))[0].startswith(
        'volumeBindingMode: Unsupported value: "Later"'
    )
    old = created(SC)
    changed = created(SC, provisioner="other.kemu.io", parameters={"type": "ssd"})
    assert errors(changed, old) == [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
    ]
    waiting = created(SC, volumeBindingMode="WaitForFirstConsumer")
    assert errors(waiting, old) == [
        'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable'
    ]


def test_csi_node_drivers_are_unique_and_counted_from_zero() -> None:
    driver = CSI_NODE["spec"]["drivers"][0]
    twice = obj(CSI_NODE, spec={"drivers": [driver, driver]})
    assert errors(twice) == ['spec.drivers[1].name: Duplicate value: "csi.kemu.io"']
    negative = obj(CSI_NODE, spec={"drivers": [{**driver, "allocatable": {"count": -1}}]})
    assert errors(negative) == [
        "spec.drivers[0].allocatable.count: Invalid value: -1: must be greater than or equal to 0"
    ]
    bad = obj(CSI_NODE, spec={"drivers": [{"name": "Not_A_Driver!", "nodeID": ""}]})
    messages = errors(bad)
    assert messages[0].startswith('spec.drivers[0].name: Invalid value: "Not_A_Driver!"')
    assert messages[1] == "spec.drivers[0].nodeID: Required value"


def test_stateful_set_rules_and_its_spec_update_allowlist() -> None:
    assert errors(created(STS, spec__selector={"matchLabels": {"app": "other"}})) == [
        "spec.template.metadata.labels: Invalid value: \"{'app': 'db'}\": `selector` does not "
        "match template `labels`"
    ]
    assert errors(created(STS, spec__replicas=-1)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]
    claimless = copy.deepcopy(STS["spec"]["volumeClaimTemplates"])
    claimless[0]["spec"]["resources"] = {}
    assert errors(created(STS, spec__volumeClaimTemplates=claimless)) == [
        "spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"
    ]
    assert errors(created(STS, spec__podManagementPolicy="Random")) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
    ]
    old = created(STS)
    scaled = created(STS, spec__replicas=3, spec__minReadySeconds=5)
    assert errors(scaled, old) == []
    renamed = created(STS, spec__serviceName="other")
    assert errors(renamed, old) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', "
        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    ]


def test_a_stateful_sets_spec_change_bumps_its_generation_not_its_status() -> None:
    sts = BY_KIND["StatefulSet"]
    old = created(STS)
    assert isinstance(old, types_pb2.StatefulSet)
    old.metadata.generation = 1
    old.status.replicas = 1
    sent = created(STS, spec__replicas=3)
    stored = before_update(sts, old, sent, ON)
    assert isinstance(stored, types_pb2.StatefulSet)
    assert stored.metadata.generation == 2 and stored.status.replicas == 1


@pytest.mark.parametrize(
    "schedule",
    ["*/5 * * * *", "0 3 * * 1-5", "15 2 1 jan,jul *", "0 0 * * SUN", "@daily", "@every 1h30m"],
)
def test_standard_cron_schedules_parse(schedule: str) -> None:
    parse_standard(schedule)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
    ],
)
def test_bad_cron_schedules_fail_with_robfigs_message(schedule: str, message: str) -> None:
    with pytest.raises(CronError) as e:
        parse_standard(schedule)
    assert str(e.value) == message


def test_cron_job_rules() -> None:
    assert errors(created(CRON, spec__schedule="61 * * * *")) == [
        'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'
    ]
    with_tz = created(CRON, spec__schedule="CRON_TZ=UTC 0 * * * *")
    assert errors(with_tz) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
        "schedule, use timeZone field instead"
    ]
    # an old CronJob that has one may keep it, but not beside a timeZone
    assert errors(with_tz, with_tz) == []
    both = created(CRON, spec__schedule="CRON_TZ=UTC 0 * * * *", spec__timeZone="UTC")
    assert errors(both, with_tz) == [
        'spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use both timeZone field '
        "and TZ or CRON_TZ in schedule"
    ]
    assert errors(created(CRON, spec__schedule="CRON_TZ=Nowhere/Land 0 * * * *"))[0] == (
        'spec.schedule: Invalid value: "CRON_TZ=Nowhere/Land 0 * * * *": provided bad location '
        "Nowhere/Land: unknown time zone Nowhere/Land"
    )
    selector = copy.deepcopy(CRON["spec"]["jobTemplate"])
    selector["spec"]["selector"] = {"matchLabels": {"a": "b"}}
    assert errors(created(CRON, spec__jobTemplate=selector)) == [
        'spec.jobTemplate.spec.selector: Invalid value: "": `selector` will be auto-generated'
    ]
    assert errors(created(CRON, spec__timeZone="Europe/Berlin")) == []
    assert errors(created(CRON, spec__timeZone="Mars/Olympus")) == [
        'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'
    ]
    assert errors(created(CRON, spec__concurrencyPolicy="Sometimes")) == [
        'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", '
        '"Forbid", "Replace"'
    ]
    always = copy.deepcopy(CRON["spec"]["jobTemplate"])
    always["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert errors(created(CRON, spec__jobTemplate=always)) == [
        'spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always": '
        'supported values: "OnFailure", "Never"'
    ]
    long_name = created(CRON, metadata={"name": "x" * 53, "namespace": "default"})
    assert errors(long_name) == [
        f'metadata.name: Invalid value: "{"x" * 53}": must be no more than 52 characters'
    ]
    assert errors(long_name, long_name) == []  # an old long name stays updatable


def test_secret_rules() -> None:
    bad_key = created(SECRET, data={"a b": "YQ=="}, stringData=None)
    assert errors(bad_key)[0].startswith('data[a b]: Invalid value: "a b"')
    big = created(
        SECRET, data={"a": base64.b64encode(b"x" * (1024 * 1024 + 1)).decode()}, stringData=None
    )
    assert errors(big) == ["data: Too long: must have at most 1048576 bytes"]
    tls = created(SECRET, type="kubernetes.io/tls")
    assert errors(tls) == ["data[tls.crt]: Required value", "data[tls.key]: Required value"]
    basic = created(SECRET, type="kubernetes.io/basic-auth")
    assert errors(basic) == ["data[username]: Required value", "data[password]: Required value"]
    docker = created(
        SECRET,
        type="kubernetes.io/dockerconfigjson",
        data={".dockerconfigjson": base64.b64encode(b"{not json").decode()},
        stringData=None,
    )
    assert errors(docker)[0].startswith(
        'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": '
    )
    old = created(SECRET, immutable=True)
    changed = created(SECRET, immutable=True, stringData={"b": "changed"})
    assert errors(changed, old) == ["data: Forbidden: field is immutable when `immutable` is set"]
    retyped = created(SECRET, type="example.com/other")
    assert errors(retyped, created(SECRET)) == [
        'type: Invalid value: "example.com/other": field is immutable'
    ]


# ---------------------------------------------------------------- printers


def cells(o: Message, *, wide: bool = False) -> dict[str, str]:
    kind = kind_of(o)
    return dict(
        zip(
            printers.headers(kind, wide=wide, with_namespace=False),
            printers.row(kind, o, 100.0, wide=wide, with_namespace=False),
            strict=True,
        )
    )


def test_volume_and_claim_tables() -> None:
    pv = created(PV, spec__claimRef={"namespace": "default", "name": "data"})
    assert cells(pv, wide=True) == {
        "NAME": "pv1",
        "CAPACITY": "10Gi",
        "ACCESS MODES": "RWO",
        "RECLAIM POLICY": "Retain",
        "STATUS": "Pending",
        "CLAIM": "default/data",
        "STORAGECLASS": "standard",
        "VOLUMEATTRIBUTESCLASS": "<unset>",
        "REASON": "",
        "AGE": "<unknown>",
        "VOLUMEMODE": "Filesystem",
    }
    pvc = created(PVC)
    assert cells(pvc) == {
        "NAME": "data",
        "STATUS": "Pending",
        "VOLUME": "",
        "CAPACITY": "",
        "ACCESS MODES": "",
        "STORAGECLASS": "",
        "VOLUMEATTRIBUTESCLASS": "<unset>",
        "AGE": "<unknown>",
    }
    assert isinstance(pvc, types_pb2.PersistentVolumeClaim)
    pvc.spec.volume_name = "pv1"
    pvc.status.phase = "Bound"
    pvc.status.capacity["storage"] = "10Gi"
    pvc.status.access_modes.extend(["ReadWriteOnce", "ReadWriteMany"])
    bound = cells(pvc)
    assert (bound["CAPACITY"], bound["ACCESS MODES"]) == ("10Gi", "RWO,RWX")


def test_class_node_set_account_secret_and_cron_tables() -> None:
    sc = created(SC, metadata={"name": "standard", "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}})  # fmt: skip
    assert list(cells(sc).values())[:5] == [
        "standard (default)", "csi.kemu.io", "Delete", "Immediate", "false"
    ]  # fmt: skip
    assert cells(created(CSI_NODE))["DRIVERS"] == "1"
    sts = cells(created(STS, spec__replicas=3), wide=True)
    assert (sts["READY"], sts["CONTAINERS"], sts["IMAGES"]) == ("0/3", "db", "postgres:16")
    secret = created(SECRET)
    assert (cells(secret)["TYPE"], cells(secret)["DATA"]) == ("Opaque", "2")
    cj = cells(created(CRON), wide=True)
    assert (cj["SCHEDULE"], cj["TIMEZONE"], cj["SUSPEND"], cj["ACTIVE"], cj["LAST SCHEDULE"]) == (
        "*/5 * * * *", "<none>", "False", "0", "<none>"
    )  # fmt: skip
    assert (cj["CONTAINERS"], cj["IMAGES"], cj["SELECTOR"]) == ("b", "busybox", "<none>")
