"""Who makes a request (issue #60 item 2): x509 client certificates (kemu/machinery/certs.py,
apiserver/endpoints/identity.py), ServiceAccount tokens (service_accounts.py) and anonymous
requests as upstream's `--anonymous-auth`."""
