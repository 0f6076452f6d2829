"""What every request of either edge passes through before its handler, as upstream's
k8s.io/apiserver/pkg/endpoints/filters: impersonation and authorization (issue #60 item 3)."""
