"""test_partition.py's guarantees over TLS: a holder cut off from a
ZooKeeper server that speaks only TLS is told before another host is
granted, by the margin; a cut healed in time keeps the session but not the
lock.  The same tests, on a server and mounts that speak TLS (tls.py);
one phase of each (the phases are test_partition.py's business)."""
import uuid

import pytest

import test_partition
from harness import Mounts, kazoo_client
from netns import made_hosts
from test_partition import cut_host  # noqa: F401 (a fixture)
from tls import needs_tls, tls_zookeeper

pytestmark = [needs_tls, pytest.mark.partition, pytest.mark.concurrency]


@pytest.fixture(scope="module")
def net():
    with made_hosts(0, 1) as hosts:  # the server's, the host to cut
        yield hosts


@pytest.fixture(scope="module")
def tls_server(net):
    with tls_zookeeper(address=net[0].outer_addr) as (server, pki):
        yield server, pki


@pytest.fixture(scope="module")
def pclient(tls_server):
    server = tls_server[0]
    with kazoo_client(server.connect, tls=server.client_tls) as client:
        yield client


@pytest.fixture
def pbase():
    return "/p-" + uuid.uuid4().hex[:12]


@pytest.fixture
def pmounts(tls_server, pclient, pbase):
    server, pki = tls_server
    host = pki.issue(f"host-{pbase[3:]}", "/O=zklockfs/CN=host")
    ms = Mounts(server.connect + pbase, host.mount_options())
    yield ms
    ms.finish(pclient, pbase)


@pytest.mark.parametrize("kind", ["write", "flock"])
def test_a_cut_off_holder_is_told_before_another_host_is_granted(
        kind, pmounts, pclient, pbase, cut_host):  # noqa: F811
    test_partition.test_a_cut_off_holder_is_told_before_another_host_is_granted(
        kind, 0.5, pmounts, pclient, pbase, cut_host)


def test_a_cut_healed_before_expiry_keeps_the_session_but_not_the_lock(
        pmounts, pclient, pbase, cut_host):  # noqa: F811
    test_partition.test_a_cut_healed_before_expiry_keeps_the_session_but_not_the_lock(
        pmounts, pclient, pbase, cut_host)
