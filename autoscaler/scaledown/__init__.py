"""Scale-down (upstream cluster-autoscaler core/scaledown and simulator/): which nodes are
unneeded and for how long, and how they go.

- options.py: the scale-down flags (upstream's names and defaults);
- rules.py: the drainability rules (which pods on a node move, stay or block its removal);
- eligibility.py: utilization and the per-node checks before any simulation;
- removal.py: the removal simulation (every movable pod re-placed on another node);
- unneeded.py: the unneeded nodes and since when;
- planner.py: per loop, which nodes are unneeded, which are removed now (cooldowns, min size,
  budgets) and why the others are not;
- taints.py: ToBeDeletedByClusterAutoscaler and DeletionCandidateOfClusterAutoscaler;
- actuation.py: taint, drain through pods/eviction, delete through the cloud.
"""
