"""The scheduling framework as a library (what k8s.io/kube-scheduler/framework is upstream).

status, types, interface (one Protocol per extension point, CycleState, Handle), events
(ClusterEvent and queueing hints), runtime (Framework: runs a profile's plugins), waiting_pods,
plugins/ (one module per plugin; plugins/registry.py is the in-tree registry), profile
(KubeSchedulerConfiguration profiles: defaults, merging, multiPoint expansion), snapshot and
node_tree (the cycle's view of the cluster), nominator (in-memory nominations), preemption
(the dry run: candidates, victims, the chosen node).

Pure: no gRPC, no prometheus, no process code and no client implementation. The scheduler
process fills in the two ways out: `interface.SchedulingApi` (its client, for binding and
VolumeBinding's PV and claim updates) and
`interface.PreemptionExecutor` (its preemption writes); a simulation (the autoscaler) builds
frameworks without either. Import the submodules directly; this
package re-exports nothing.
"""
