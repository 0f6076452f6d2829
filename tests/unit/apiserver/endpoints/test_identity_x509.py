"""A call's user from its verified client certificate (issue #60): CN the user, O the groups,
system:authenticated added; the impersonation metadata wins, the user agent only without one."""

from __future__ import annotations

import ssl

from apiserver.endpoints import identity
from kemu.machinery.certs import issue, new_ca
from kemu.machinery.user import AUTHENTICATED, UserInfo, node_user

CA = new_ca("test-ca")
NODE_CERT = issue(CA, "system:node:n1", organizations=["system:nodes"])


def _user() -> UserInfo | None:
    return identity.of_peer_certificate(ssl.PEM_cert_to_DER_cert(NODE_CERT.cert.decode()))


def test_the_certificate_names_the_user_and_groups() -> None:
    assert _user() == UserInfo("system:node:n1", ("system:nodes", AUTHENTICATED))


def test_the_certificate_wins_over_the_user_agent_and_impersonation_over_both() -> None:
    cert = _user()
    assert identity.of_metadata([("user-agent", "kube-scheduler")], cert) == cert
    claimed = identity.of_metadata([("user-agent", "kubelet"), *node_user("n2").metadata()], cert)
    assert claimed.name == "system:node:n2"
    assert identity.of_metadata([("user-agent", "kube-scheduler")]).name == "system:kube-scheduler"
