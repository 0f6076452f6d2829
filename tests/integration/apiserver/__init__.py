"""Integration tests of the apiserver on a real etcd (storage, admission, the REST and gRPC edges)."""
