"""Who may do what (issue #60 item 3): the authorizers of `--authorization-mode` and their
union (k8s.io/apiserver/pkg/authorization/union)."""
