"""apply, create and delete against the FakeClient; manifests that must be refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.ctl.main import run
from kemu.machinery import convert

from .helpers import ctl, fake

POD_YAML = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  priorityClassName: high
  containers:
  - name: app
    image: nginx
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
      limits:
        cpu: "1"
        memory: 1Gi
  tolerations:
  - key: node.kubernetes.io/not-ready
    operator: Exists
    effect: NoExecute
    tolerationSeconds: 300
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
preemptionPolicy: Never
"""


@pytest.fixture
def pod_file(tmp_path: Path) -> str:
    path = tmp_path / "web.yaml"
    path.write_text(POD_YAML)
    return str(path)


@pytest.mark.anyio
async def test_apply_creates_then_reports_unchanged_then_configures(
    pod_file: str, tmp_path: Path
) -> None:
    client = fake()
    first = await ctl(client, "apply", "-f", pod_file)
    assert first.rc == 0, first.err
    assert first.out.splitlines() == [
        "pod/web created",
        "priorityclass.scheduling.k8s.io/high created",
    ]
    pod = await client.get(types_pb2.Pod, "web", "default")
    assert pod.spec.containers[0].resources.requests["cpu"] == "500m"

    client.clear_actions()
    again = await ctl(client, "apply", "-f", pod_file)
    assert again.out.splitlines() == [
        "pod/web unchanged",
        "priorityclass.scheduling.k8s.io/high unchanged",
    ]
    assert "patch" not in client.verbs()

    changed = tmp_path / "changed.yaml"
    changed.write_text(POD_YAML.replace("app: web", "app: web2").split("---")[0])
    client.clear_actions()
    third = await ctl(client, "apply", "-f", str(changed))
    assert third.out.splitlines() == ["pod/web configured"]
    patch = json.loads(client.actions[-1].patch)
    assert client.actions[-1].verb == "patch"
    assert "status" not in patch and "kind" not in patch
    assert patch["metadata"]["labels"] == {"app": "web2"}
    pod = await client.get(types_pb2.Pod, "web", "default")
    assert pod.metadata.labels["app"] == "web2"


@pytest.mark.anyio
async def test_apply_keeps_live_fields_the_manifest_does_not_name(pod_file: str) -> None:
    client = fake()
    await ctl(client, "apply", "-f", pod_file)
    await client.patch(types_pb2.Pod, "web", {"metadata": {"annotations": {"by": "someone"}}})
    await ctl(client, "apply", "-f", pod_file)
    pod = await client.get(types_pb2.Pod, "web", "default")
    assert pod.metadata.annotations["by"] == "someone"


@pytest.mark.anyio
async def test_apply_keeps_what_admission_added_to_the_containers(pod_file: str) -> None:
    """ServiceAccount admission mounts its token volume in every container: a second apply
    merges the manifest's containers with the live ones by name (kubectl's strategic merge)
    and keeps the mounts, where a JSON merge patch would replace the list and be refused as
    a pod update that changes the spec (found by the README walk's re-apply)."""
    client = fake()
    await ctl(client, "apply", "-f", pod_file)
    mount = {"name": "kube-api-access-x", "mountPath": "/var/run/secrets", "readOnly": True}
    container = {"name": "app", "image": "nginx", "volumeMounts": [mount]}
    await client.patch(types_pb2.Pod, "web", {"spec": {"containers": [container]}})
    changed = POD_YAML.replace("app: web", "app: web2").split("---")[0]
    client.clear_actions()
    done = await ctl(client, "apply", "-f", "-", stdin=changed)
    assert done.out.splitlines() == ["pod/web configured"], done.err
    pod = await client.get(types_pb2.Pod, "web", "default")
    assert pod.metadata.labels["app"] == "web2"
    assert [m.name for m in pod.spec.containers[0].volume_mounts] == ["kube-api-access-x"]
    client.clear_actions()
    again = await ctl(client, "apply", "-f", "-", stdin=changed)
    assert again.out.splitlines() == ["pod/web unchanged"]


@pytest.mark.anyio
async def test_apply_reads_a_json_list_from_stdin() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "team"},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        ],
    }
    client = fake()
    result = await ctl(client, "apply", "-f", "-", stdin=json.dumps(doc))
    assert result.rc == 0, result.err
    assert result.out.splitlines() == ["node/n1 created", "pod/p created"]
    assert (await client.get(types_pb2.Pod, "p", "team")).metadata.namespace == "team"


@pytest.mark.anyio
async def test_apply_refuses_a_manifest_in_another_namespace_than_n() -> None:
    client = fake()
    manifest = "kind: Pod\napiVersion: v1\nmetadata: {name: p, namespace: a}\n"
    result = await ctl(client, "apply", "-n", "b", "-f", "-", stdin=manifest)
    assert result.rc == 1
    assert 'does not match the namespace "b"' in result.err
    assert client.actions == []


@pytest.mark.anyio
async def test_create_fails_on_an_existing_object_with_the_server_message(pod_file: str) -> None:
    client = fake()
    assert (await ctl(client, "create", "-f", pod_file)).rc == 0
    result = await ctl(client, "create", "-f", pod_file)
    assert result.rc == 1
    assert result.err.splitlines() == [
        f'error: error when creating "{pod_file}": pods "web" already exists',
        f'error: error when creating "{pod_file}": priorityclasses.scheduling.k8s.io "high" already exists',
    ]


BAD_MANIFESTS = [
    ("kind: Pod\nmetadata: {name: x\n", "error parsing {f}: yaml: line 7"),
    (
        "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: x}\n",
        'no matches for kind "PodTemplate"',
    ),
    (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containerz: []}\n",
        'spec.containerz: unknown field "containerz"',
    ),
    (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    resources: {requests: {cpu: [1]}}\n",
        "spec.containers[0].resources.requests.cpu: expected a string",
    ),
    ("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "metadata.name: Required value"),
    ("- a\n- b\n", "expected an object"),
    ("metadata: {name: x}\n", "Object 'Kind' is missing"),
    ("", "no objects passed"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("text", "problem"), BAD_MANIFESTS)
async def test_a_bad_manifest_is_one_line_exit_1_and_nothing_sent(
    text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A good document first: nothing is sent unless every document is good.
    good = "apiVersion: v1\nkind: Node\nmetadata: {name: ok}\n---\n" if text else ""
    path = tmp_path / "bad.yaml"
    path.write_text(good + text)
    client = fake()
    rc = await run(["apply", "-f", str(path)], client=client, environ={})
    captured = capsys.readouterr()
    assert rc == 1
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("error: ")
    assert problem.format(f=path) in lines[0]
    if text:
        assert str(path) in lines[0]
    assert client.actions == []


@pytest.mark.anyio
async def test_a_missing_file_is_one_line() -> None:
    result = await ctl(fake(), "apply", "-f", "/nonexistent/x.yaml")
    assert result.rc == 1
    assert (
        result.err
        == 'error: the path "/nonexistent/x.yaml" cannot be read: No such file or directory\n'
    )


class GraceRecorder(FakeClient):
    def __init__(self, *objects: Any) -> None:
        super().__init__(*objects)
        self.graces: list[int | None] = []

    async def delete(self, kind: Any, name: str, namespace: str = "", **kw: Any) -> Any:
        self.graces.append(kw.get("grace_period_seconds"))
        return await super().delete(kind, name, namespace, **kw)


def _pods(*names: str) -> list[types_pb2.Pod]:
    return [
        types_pb2.Pod(metadata=types_pb2.ObjectMeta(name=n, namespace="default")) for n in names
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("flags", "grace", "word"),
    [
        ([], None, "deleted"),
        (["--grace-period", "5"], 5, "deleted"),
        (["--now"], 1, "deleted"),
        (["--grace-period", "0"], 1, "deleted"),
        (["--grace-period", "0", "--force"], 0, "force deleted"),
        (["--force"], 0, "force deleted"),
    ],
)
async def test_delete_grace_periods_follow_kubectl(
    flags: list[str], grace: int | None, word: str
) -> None:
    client = GraceRecorder(*_pods("a", "b"))
    result = await ctl(client, "delete", "pod", "a", "b", *flags)
    assert result.rc == 0, result.err
    assert result.out.splitlines() == [f'pod "a" {word}', f'pod "b" {word}']
    assert client.graces == [grace, grace]


@pytest.mark.anyio
async def test_delete_reports_missing_objects_and_goes_on() -> None:
    client = fake(*_pods("a"))
    result = await ctl(client, "delete", "pods", "nope", "a")
    assert result.rc == 1
    assert result.out == 'pod "a" deleted\n'
    assert result.err == 'error: pods "nope" not found\n'
    ignored = await ctl(client, "delete", "pod", "nope", "--ignore-not-found")
    assert ignored.rc == 0 and ignored.err == ""


@pytest.mark.anyio
async def test_delete_by_file_and_by_selector(pod_file: str) -> None:
    client = fake()
    await ctl(client, "apply", "-f", pod_file)
    result = await ctl(client, "delete", "-f", pod_file)
    assert result.out.splitlines() == [
        'pod "web" deleted',
        'priorityclass.scheduling.k8s.io "high" deleted',
    ]
    labelled = _pods("x", "y")
    labelled[0].metadata.labels["app"] = "a"
    client = fake(*labelled)
    result = await ctl(client, "delete", "pods", "-l", "app=a")
    assert result.out == 'pod "x" deleted\n'
    refused = await ctl(client, "delete", "pods")
    assert refused.rc == 1 and "--all" in refused.err


@pytest.mark.anyio
async def test_get_json_of_an_applied_manifest_is_the_manifest_plus_server_fields(
    pod_file: str,
) -> None:
    client = fake()
    await ctl(client, "apply", "-f", pod_file)
    manifest = next(yaml.safe_load_all(POD_YAML))
    for output, load in (("json", json.loads), ("yaml", yaml.safe_load)):
        result = await ctl(client, "get", "pod", "web", "-o", output)
        printed = load(result.out)
        assert convert.merge_patch(printed, manifest) == printed, output
        assert printed["metadata"]["namespace"] == "default"
        assert printed["metadata"]["uid"]
        assert printed["metadata"]["resourceVersion"]
        assert printed["metadata"]["creationTimestamp"].endswith("Z")
        assert list(printed)[:2] == ["apiVersion", "kind"]


class PolicyRecorder(FakeClient):
    def __init__(self, *objects: Any) -> None:
        super().__init__(*objects)
        self.policies: list[str | None] = []

    async def delete(self, kind: Any, name: str, namespace: str = "", **kw: Any) -> Any:
        self.policies.append(kw.get("propagation_policy"))
        return await super().delete(kind, name, namespace, **kw)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("flags", "policy", "warning"),
    [
        ([], "Background", ""),
        (["--cascade"], "Background", ""),
        (["--cascade=background"], "Background", ""),
        (["--cascade=foreground"], "Foreground", ""),
        (["--cascade=orphan"], "Orphan", ""),
        (
            ["--cascade=true"],
            "Background",
            "warning: --cascade=true is deprecated (boolean value) and can be replaced with "
            "--cascade=background.\n",
        ),
        (
            ["--cascade=false"],
            "Orphan",
            "warning: --cascade=false is deprecated (boolean value) and can be replaced with "
            "--cascade=orphan.\n",
        ),
    ],
)
async def test_delete_cascade_follows_kubectl(flags: list[str], policy: str, warning: str) -> None:
    client = PolicyRecorder(*_pods("a"))
    result = await ctl(client, "delete", "pod", "a", *flags)
    assert result.rc == 0, result.err
    assert result.out == 'pod "a" deleted\n'
    assert result.err == warning
    assert client.policies == [policy]


@pytest.mark.anyio
async def test_delete_refuses_an_unknown_cascade() -> None:
    client = PolicyRecorder(*_pods("a"))
    result = await ctl(client, "delete", "pod", "a", "--cascade=sideways")
    assert result.rc == 1
    assert result.err == (
        'error: invalid cascade value (sideways). Must be "background", "foreground", or "orphan"\n'
    )
    assert client.policies == []


@pytest.mark.anyio
async def test_apply_selector_applies_only_the_matching_objects(pod_file: str) -> None:
    # kubectl apply -l: objects without the label fail `app=web` and match `app!=web`.
    client = fake()
    only_pod = await ctl(client, "apply", "-f", pod_file, "-l", "app=web")
    assert only_pod.rc == 0, only_pod.err
    assert only_pod.out.splitlines() == ["pod/web created"]
    rest = await ctl(client, "apply", "-f", pod_file, "-l", "app!=web")
    assert rest.out.splitlines() == ["priorityclass.scheduling.k8s.io/high created"]
    none = await ctl(client, "apply", "-f", pod_file, "-l", "app=db")
    assert none.rc == 1 and none.err == "error: no objects passed to apply\n"
    bad = await ctl(client, "apply", "-f", pod_file, "-l", "app=(")
    assert bad.rc == 1 and bad.err.startswith("error: unable to parse requirement")


@pytest.mark.anyio
async def test_delete_f_with_a_selector_deletes_only_the_matching_objects(pod_file: str) -> None:
    client = fake()
    await ctl(client, "apply", "-f", pod_file)
    done = await ctl(client, "delete", "-f", pod_file, "-l", "app=web")
    assert done.rc == 0, done.err
    assert done.out.splitlines() == ['pod "web" deleted']
    assert await client.get(types_pb2.PriorityClass, "high") is not None
