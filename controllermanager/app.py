"""kube-controller-manager: runs the controllers of CONTROLLERS against the apiserver.

    python -m controllermanager --server HOST:PORT [--leader-elect] [--controllers *,-name]

Start-up waits for the apiserver (it may start after us), then keeps the component identity
lease (kube-system/kube-controller-manager-<identity>) renewed. Without --leader-elect the
controllers run at once. With it, only the holder of the Lease
kube-system/kube-controller-manager runs them; a leader that fails to renew its lease exits
with code 1 (as upstream: another instance may already lead), and on SIGTERM a leader cancels
its controllers, releases the lease and exits 0.

/readyz: without leader election, ready once the informers have synced; with it, ready while
the election runs and, when leading, once the informers have synced (a standby is ready: it is
healthy and waiting for the lease).

SIGUSR2 compares every informer's store with a fresh list from the apiserver
(kemu.client.comparer; a standby has none) and serves the result at GET /debug/caches.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import anyio
from anyio.abc import TaskStatus

from controllermanager import (  # kinds-b (issue #57)
    clientbuilder,
    clusterrole_aggregation,
    cronjob,
    disruption,
    endpoints,
    endpointslice,
    namespace,
    node_ipam,
    node_lifecycle,
    podgc,
    podgroup_protection,
    replicaset,
    replication_controller,
    resourceclaim,
    resourcequota,
    root_ca_publisher,
    serviceaccounts,
    stateful_set,
    taint_eviction,
)
from controllermanager.config import (
    ControllerConfigurations,
    ControllerManagerSettings,
    Credentials,
)
from controllermanager.controller import Controller, ControllerContext, ControllerInit
from controllermanager.daemon import daemon_controller
from controllermanager.deployment import deployment_controller
from controllermanager.garbagecollector import garbagecollector
from controllermanager.job import job_controller
from controllermanager.options import COMPONENT, build_parser, settings_from_args
from controllermanager.persistentvolume import protection, pv_controller, simulated_provisioner
from controllermanager.podautoscaler import horizontal
from kemu.client.client import sibling_of
from kemu.client.comparer import CacheComparer, informer_sources, serve_informers
from kemu.client.controlplane import (
    Elected,
    component_client,
    run_elected,
)
from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.leaderelection import LeaderElectionConfig
from kemu.component.featuregate import (
    DYNAMIC_RESOURCE_ALLOCATION,
    GENERIC_WORKLOAD,
    SEPARATE_TAINT_EVICTION_CONTROLLER,
    FeatureGates,
)
from kemu.component.options import parse_component_args
from kemu.component.runner import (
    ComponentContext,
    cleanup_scope,
    run_component,
)
from kemu.component.version_rules import VersionRules

logger = logging.getLogger(__name__)


CONTROLLERS: Final[dict[str, ControllerInit]] = {
    disruption.NAME: disruption.new_controller,
    garbagecollector.NAME: garbagecollector.new_controller,
    namespace.NAME: namespace.new_controller,
    node_lifecycle.NAME: node_lifecycle.new_controller,
    node_ipam.NAME: node_ipam.new_controller,
    podgc.NAME: podgc.new_controller,
    replicaset.NAME: replicaset.new_controller,
    deployment_controller.NAME: deployment_controller.new_controller,
    job_controller.NAME: job_controller.new_controller,
    daemon_controller.NAME: daemon_controller.new_controller,
    stateful_set.NAME: stateful_set.new_controller,
    cronjob.NAME: cronjob.new_controller,
    taint_eviction.NAME: taint_eviction.new_controller,
    pv_controller.NAME: pv_controller.new_controller,
    simulated_provisioner.NAME: simulated_provisioner.new_controller,
    protection.PVC_PROTECTION: protection.new_pvc_protection_controller,
    protection.PV_PROTECTION: protection.new_pv_protection_controller,
    podgroup_protection.NAME: podgroup_protection.new_controller,
    resourceclaim.NAME: resourceclaim.new_controller,
    resourcequota.NAME: resourcequota.new_controller,  # issue #57 kinds-a
    # ---- kinds-b (issue #57)
    replication_controller.NAME: replication_controller.new_controller,
    endpoints.NAME: endpoints.new_controller,
    endpointslice.NAME: endpointslice.new_controller,
    horizontal.NAME: horizontal.new_controller,
    serviceaccounts.NAME: serviceaccounts.new_controller,
    root_ca_publisher.NAME: root_ca_publisher.new_controller,
    clusterrole_aggregation.NAME: clusterrole_aggregation.new_controller,  # issue #60 item 3
}
"""Every controller by name, as upstream's NewControllerDescriptors: add new ones here."""


TAINT_MANAGER_OF_NODE_LIFECYCLE: Final = f"{node_lifecycle.NAME}/taint-manager"


def place_taint_eviction(
    controllers: Mapping[str, ControllerInit], gates: FeatureGates
) -> dict[str, ControllerInit]:
    """SeparateTaintEvictionController (KEP-3902): with the gate, the taint eviction is the
    controller `taint-eviction-controller`, enabled or disabled by --controllers on its own.
    Without it (before 1.29, or turned off up to 1.33) that controller is disabled, as
    upstream's descriptor requires the gate, and the node lifecycle controller runs the taint
    manager itself: it comes with the node lifecycle controller, whatever --controllers says
    of taint-eviction-controller."""
    if gates.enabled(SEPARATE_TAINT_EVICTION_CONTROLLER):
        return dict(controllers)
    placed = {name: init for name, init in controllers.items() if name != taint_eviction.NAME}
    if node_lifecycle.NAME in placed:
        placed[TAINT_MANAGER_OF_NODE_LIFECYCLE] = taint_eviction.new_controller
    return placed


def drop_unavailable(
    controllers: Mapping[str, ControllerInit], gates: FeatureGates
) -> dict[str, ControllerInit]:
    """The controllers the emulated version has and whose required gates are on (upstream's
    ControllerDescriptor.requiredFeatureGates: a controller whose gate is off is disabled,
    whatever --controllers says): podgroup-protection-controller from 1.36, with
    GenericWorkload (cmd/kube-controller-manager/app/core.go
    newPodGroupProtectionControllerDescriptor); resourceclaim-controller with
    DynamicResourceAllocation (newResourceClaimControllerDescriptor)."""
    rules = VersionRules.at(gates.version)
    available = dict(controllers)
    if not (rules.podgroup_protection_controller and gates.enabled(GENERIC_WORKLOAD)):
        if available.pop(podgroup_protection.NAME, None) is not None:
            logger.info(
                "%s is disabled: it needs GenericWorkload, at 1.36 or later",
                podgroup_protection.NAME,
            )
    if not gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        if available.pop(resourceclaim.NAME, None) is not None:
            logger.info("%s is disabled: it needs DynamicResourceAllocation", resourceclaim.NAME)
    return available


def configure_controllers(
    controllers: Mapping[str, ControllerInit], configurations: ControllerConfigurations
) -> dict[str, ControllerInit]:
    """Binds the controllers' own options (their flags) to their init functions."""
    configured = dict(controllers)
    bound: tuple[tuple[str, Callable[..., Controller], object], ...] = (
        (
            node_lifecycle.NAME,
            node_lifecycle.new_controller,
            configurations.node_lifecycle_controller,
        ),
        (
            garbagecollector.NAME,
            garbagecollector.new_controller,
            configurations.garbage_collector_controller,
        ),
        (node_ipam.NAME, node_ipam.new_controller, configurations.node_ipam_controller),
        (podgc.NAME, podgc.new_controller, configurations.pod_gc_controller),
        (
            pv_controller.NAME,
            pv_controller.new_controller,
            configurations.persistent_volume_binder_controller,
        ),
        (
            simulated_provisioner.NAME,
            simulated_provisioner.new_controller,
            configurations.simulated_provisioner,
        ),
        (horizontal.NAME, horizontal.new_controller, configurations.hpa_controller),
    )
    for name, new_controller, options in bound:
        if name not in configured:
            continue
        if options is None:
            # upstream's startNodeIpamController: not started without --allocate-node-cidrs
            del configured[name]
        else:
            configured[name] = functools.partial(new_controller, options=options)
    return configured


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    settings = settings_from_args(parser, args)
    return run_component(COMPONENT, options, functools.partial(run, settings))


def controller_inits(settings: ControllerManagerSettings) -> dict[str, ControllerInit]:
    """The init functions of the enabled controllers, with their options bound."""
    enabled = {name: CONTROLLERS[name] for name in settings.controllers}
    return configure_controllers(enabled, settings.configurations)


class ControllerManager:
    """The controllers of one process, started together; readiness for /readyz."""

    def __init__(
        self,
        client: ApiClient,
        ctx: ComponentContext,
        controllers: Mapping[str, ControllerInit],
        credentials: Credentials = Credentials.PROCESS,
    ) -> None:
        self.client = client
        self.clients = clientbuilder.builder(credentials, client, ctx.clock)
        self.component = ctx
        self.controllers = dict(controllers)
        self.informers: InformerFactory | None = None
        self.elected = Elected()

    def ready(self) -> bool:
        """The readiness check (see the module docstring)."""
        if self.elected.is_standby():
            return True
        if self.informers is None or not self.informers.has_synced():
            raise RuntimeError("the informers have not synced yet")
        return True

    async def run_controllers(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Builds every controller, starts the informers, and once they are synced runs the
        controllers until cancelled (task_status reports the sync)."""
        ctx = self.component
        # Upstream's controllers each get a clientset of their own (a rate limiter each; as
        # their ServiceAccounts with --use-service-account-credentials: clientbuilder.py),
        # the shared informers another of the process's own.
        informers = InformerFactory(sibling_of(self.client), clock=ctx.clock)
        cctx = ControllerContext(
            client=self.client,
            informers=informers,
            clock=ctx.clock,
            gates=ctx.gates,
            registry=ctx.registry,
        )
        controllers = place_taint_eviction(drop_unavailable(self.controllers, ctx.gates), ctx.gates)
        built = [
            init(dataclasses.replace(cctx, client=self.clients.client(name)))
            for name, init in controllers.items()
        ]
        self.informers = informers
        async with anyio.create_task_group() as tg:
            informers.start(tg)
            await informers.wait_for_cache_sync()
            logger.info("caches synced, starting controllers: %s", ", ".join(c.name for c in built))
            for controller in built:
                tg.start_soon(controller.run, name=f"controller {controller.name}")
            task_status.started()


async def run(settings: ControllerManagerSettings, ctx: ComponentContext) -> None:
    client = component_client(
        settings.server,
        COMPONENT,
        settings.client_connection,
        ctx,
        settings.apiserver_latency,
        tls=settings.tls,
    )
    try:
        await run_with_client(
            client,
            controller_inits(settings),
            settings.election,
            ctx,
            credentials=settings.credentials,
        )
    finally:
        with cleanup_scope():
            await client.close()


async def run_with_client(
    client: ApiClient,
    controllers: Mapping[str, ControllerInit],
    election: LeaderElectionConfig | None,
    ctx: ComponentContext,
    *,
    identity: str | None = None,
    credentials: Credentials = Credentials.PROCESS,
) -> None:
    """The body of the component over any ApiClient (tests pass a FakeClient)."""
    manager = ControllerManager(client, ctx, controllers, credentials)
    ctx.add_readiness_check("controllers", manager.ready)
    comparer = CacheComparer.wired(ctx, COMPONENT, lambda: informer_sources(manager.informers))
    serve_informers(ctx, lambda: manager.informers)
    async with anyio.create_task_group() as tg:
        await tg.start(comparer.run)
        await run_elected(
            client,
            ctx,
            component=COMPONENT,
            election=election,
            work=manager.run_controllers,
            identity=identity,
            elected=manager.elected,
        )
        tg.cancel_scope.cancel()
