"""test_partition.py's guarantees over TLS: a holder cut off from a
ZooKeeper server that speaks only TLS is told before another host is
granted, by the margin; a cut healed in time keeps the session but not the
lock.  The same tests, on a server and mounts that speak TLS (tls.py);
one phase of each (the phases are test_partition.py's business)."""
import os
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

import test_partition
from harness import Locker, Mounts, kazoo_client, wait_until, zklockfs_binary
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


def syns_sent(host, port):
    """Connections of `host`'s network still sending SYNs to `port`."""
    out = subprocess.run([*host.prefix, "ss", "-Htn", "state", "syn-sent",
                          "dport", f"= :{port}"],
                         capture_output=True, text=True, timeout=10).stdout
    return out.strip()


def test_a_server_cut_off_at_the_start_is_given_up_at_connect_timeout(
        tls_server, pmounts, cut_host):  # noqa: F811
    """A partition at the start: the server's answers never come (its SYN
    is dropped, before any handshake).  The start gives up at
    connect_timeout, naming no TLS failure, instead of waiting; and a cut
    healed while the start waits lets it through."""
    server, pki = tls_server
    cut_host.cut()
    mp = tempfile.mkdtemp(prefix="zklockfs-mnt-")
    try:
        started = time.monotonic()
        res = subprocess.run(
            [*cut_host.prefix, zklockfs_binary(), "-f", "-o",
             "connect_timeout=3", *pmounts.options,
             server.connect + "/cut-at-start", mp],
            capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
    finally:
        os.rmdir(mp)
    assert res.returncode != 0, res.stderr
    assert "no ZooKeeper server answered" in res.stderr and \
        "TLS" not in res.stderr, res.stderr
    assert took < 15, f"the start took {took:.1f} s"

    # Healed while the start waits: mounted.
    started = []
    starter = threading.Thread(target=lambda: started.append(
        pmounts.new("-o", "connect_timeout=25", prefix=cut_host.prefix)))
    starter.start()
    try:
        wait_until(lambda: syns_sent(cut_host, server.port), 20,
                   "the cut-off start to send its SYN")
    finally:
        cut_host.heal()
        starter.join(60)
    assert started, "the start did not mount once the cut healed"
    holder = Locker(started[0].path("r", "write"), "w")
    holder.granted()
    holder.close()
