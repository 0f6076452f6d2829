import socket

from kemu.testing.ports import free_port, free_ports


def test_ports_are_never_handed_out_twice_in_a_session():
    ports = free_ports(200)
    assert len(set(ports)) == 200
    assert free_port() not in ports
    assert all(1024 < p < 65536 for p in ports)


def test_a_reserved_port_can_be_bound_by_a_server_that_sets_reuseaddr():
    port = free_port()
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen(1)
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass


def test_a_reserved_port_is_not_handed_out_by_the_kernel_for_port_zero():
    reserved = set(free_ports(20))
    picked = set()
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            picked.add(s.getsockname()[1])
    assert not reserved & picked
