"""A client's TLS credentials for its gRPC channel, from a kubeconfig's (kemu.machinery.kubeconfig):
the CA that verifies the apiserver and the client's own certificate, as client-go's
transport.TLSConfigFor builds them from a rest.Config's TLSClientConfig."""

from __future__ import annotations

import grpc

from kemu.machinery.kubeconfig import ClientTLS


def channel_credentials(tls: ClientTLS) -> grpc.ChannelCredentials:
    """gRPC's SSL credentials: `tls.ca` (None: the system's roots) and the client pair."""
    return grpc.ssl_channel_credentials(
        root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert
    )
