"""bench etcd_clients: the three transports send the same transaction, and the summary is
per transport over its rounds."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import json_format

from bench import etcd_clients
from bench.etcd_clients import Round, gateway_body, summary, txn


def test_the_gateways_body_is_the_grpc_transaction() -> None:
    key = b"/bench/aio-0/7"
    sent = json.loads(gateway_body(key))
    assert json_format.ParseDict(sent, type(txn(key))()) == txn(key)
    assert base64.b64decode(sent["success"][0]["request_put"]["value"]) == etcd_clients.VALUE


def test_the_summary_is_per_call_over_every_round_of_a_transport() -> None:
    rounds = [
        Round("aio", 1000, 0.5, 0.3, 0.2),
        Round("http", 1000, 1.0, 0.4, 0.7),
        Round("aio", 1000, 0.5, 0.4, 0.3),
    ]
    assert summary(rounds) == [
        "aio   client 350 us/call, etcd 250 us/call, 2000 calls/s",
        "http  client 400 us/call, etcd 700 us/call, 1000 calls/s",
    ]


@pytest.mark.parametrize("flag", ["--calls", "--rounds", "--in-flight"])
def test_a_count_under_one_is_refused_naming_the_flag(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        etcd_clients.main([flag, "0"])
    assert e.value.code == 2
    assert f"{flag}: must be at least 1" in capsys.readouterr().err
