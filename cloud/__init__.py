"""The emulated cloud: node groups whose instances are kemu kubelets (python -m cloud)."""
