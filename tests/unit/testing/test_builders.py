from kemu.testing.builders import make_node, make_pdb, make_pod, make_priority_class


def test_pod_builder_sets_every_field_on_a_fresh_message():
    b = (
        make_pod("p")
        .namespace("ns")
        .req(cpu="500m", memory="1Gi")
        .lim({"nvidia.com/gpu": "1"}, ephemeral_storage="1Gi")
        .priority(10)
        .priority_class("high")
        .preemption_policy("Never")
        .node("n1")
        .nominated("n2")
        .labels(app="a")
        .label("app.kubernetes.io/name", "x")
        .node_selector(zone="z1")
        .toleration("k", "v", "NoSchedule")
        .anti_affinity({"app": "a"}, "kubernetes.io/hostname")
        .gate("g")
        .grace(30)
        .annotation("k", "v")
    )
    pod = b.obj()
    assert pod.metadata.name == "p" and pod.metadata.namespace == "ns"
    (c,) = pod.spec.containers
    assert dict(c.resources.requests) == {"cpu": "500m", "memory": "1Gi"}
    assert dict(c.resources.limits) == {"nvidia.com/gpu": "1", "ephemeral-storage": "1Gi"}
    assert pod.spec.priority == 10 and pod.spec.priority_class_name == "high"
    assert pod.spec.preemption_policy == "Never"
    assert pod.spec.node_name == "n1" and pod.status.nominated_node_name == "n2"
    assert dict(pod.metadata.labels) == {"app": "a", "app.kubernetes.io/name": "x"}
    assert dict(pod.spec.node_selector) == {"zone": "z1"}
    (t,) = pod.spec.tolerations
    assert (t.key, t.value, t.effect, t.operator) == ("k", "v", "NoSchedule", "Equal")
    (term,) = (
        pod.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution
    )
    assert dict(term.label_selector.match_labels) == {"app": "a"}
    assert term.topology_key == "kubernetes.io/hostname"
    assert [g.name for g in pod.spec.scheduling_gates] == ["g"]
    assert pod.spec.termination_grace_period_seconds == 30
    assert pod.metadata.annotations["k"] == "v"

    # obj() hands out independent copies.
    pod.spec.priority = 99
    assert b.obj().spec.priority == 10
    assert b.obj() is not b.obj()


def test_pod_builder_optional_fields_stay_unset_by_default():
    pod = make_pod("p").obj()
    assert pod.metadata.namespace == "default"
    assert not pod.spec.HasField("priority")
    assert not pod.spec.HasField("preemption_policy")
    assert [c.name for c in pod.spec.containers] == ["c"]


def test_pod_builder_resources_go_to_the_selected_container():
    pod = (
        make_pod("p")
        .req(cpu="1")
        .container("second")
        .req(cpu="2")
        .init_container("sidecar", restart_policy="Always")
        .req(cpu="100m")
        .container("c")
        .lim(cpu="1")
        .obj()
    )
    assert [(c.name, c.resources.requests["cpu"]) for c in pod.spec.containers] == [
        ("c", "1"),
        ("second", "2"),
    ]
    assert pod.spec.containers[0].resources.limits["cpu"] == "1"
    (init,) = pod.spec.init_containers
    assert init.restart_policy == "Always" and init.resources.requests["cpu"] == "100m"


def test_node_builder_defaults_allocatable_to_capacity():
    node = (
        make_node("n1")
        .capacity(cpu="4", memory="8Gi", pods=110)
        .taint("dedicated", "x", "NoExecute")
        .label("zone", "z1")
        .unschedulable()
        .obj()
    )
    assert dict(node.status.capacity) == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert dict(node.status.allocatable) == dict(node.status.capacity)
    (taint,) = node.spec.taints
    assert (taint.key, taint.value, taint.effect) == ("dedicated", "x", "NoExecute")
    assert node.spec.unschedulable and node.metadata.labels["zone"] == "z1"

    explicit = make_node("n2").capacity(cpu="4").allocatable(cpu="3500m").obj()
    assert dict(explicit.status.allocatable) == {"cpu": "3500m"}


def test_priority_class_and_pdb_builders():
    pc = make_priority_class("high", 100).preemption_policy("Never").global_default().obj()
    assert (pc.metadata.name, pc.value, pc.preemption_policy, pc.global_default) == (
        "high",
        100,
        "Never",
        True,
    )

    pdb = make_pdb("pdb").namespace("ns").selector(app="a").min_available(1).obj()
    assert pdb.metadata.namespace == "ns"
    assert dict(pdb.spec.selector.match_labels) == {"app": "a"}
    assert pdb.spec.min_available.int_val == 1
    assert not pdb.spec.HasField("max_unavailable")

    pct = make_pdb("pdb2").max_unavailable("50%").obj()
    assert pct.spec.max_unavailable.WhichOneof("value") == "str_val"
    assert pct.spec.max_unavailable.str_val == "50%"
