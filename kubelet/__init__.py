"""The kemu kubelet: simulated nodes that register, renew their Lease and run pods
(admission, start-up, graceful termination, checkpoints), one or many per process."""
