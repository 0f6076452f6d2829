"""Dynamic Resource Allocation as a library: upstream's structured allocator
(staging/src/k8s.io/dynamic-resource-allocation/structured). Pure: no gRPC, no client."""
