"""The scheduling framework as a library (what k8s.io/kube-scheduler/framework is upstream).

status, types, interface (one Protocol per extension point, CycleState, Handle), events
(ClusterEvent and queueing hints), runtime (Framework: runs a profile's plugins), waiting_pods,
plugins/ (one module per plugin; plugins/registry.py is the in-tree registry), profile
(KubeSchedulerConfiguration profiles: defaults, merging, multiPoint expansion), snapshot and
node_tree (the cycle's view of the cluster), nominator (in-memory nominations), preemption.

Pure: no gRPC, no prometheus, no process code and no client implementation. API writes go
through `interface.SchedulingApi`, which the scheduler process fills with its client; a
simulation (the autoscaler) builds frameworks without one. Import the submodules directly; this
package re-exports nothing.
"""
