"""pytest fixtures: one ZooKeeper server for the run, two fresh mounts and
a fresh base path per test, and the check that no lock znode is left."""
import os
import sys
import uuid

import pytest
from kazoo.client import KazooClient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Locker, Mount, ZooKeeper, lock_nodes, wait_until  # noqa: E402


@pytest.fixture(scope="session")
def zookeeper():
    server = ZooKeeper()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zk(zookeeper):
    client = KazooClient(hosts=zookeeper.connect)
    client.start(timeout=30)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def base():
    return "/t-" + uuid.uuid4().hex[:12]


class Mounts:
    def __init__(self, connect):
        self.connect = connect
        self.started = []

    def new(self, *extra):
        m = Mount(self.connect, extra).start()
        self.started.append(m)
        return m

    def stop_all(self):
        problems = []
        for m in self.started:
            status = m.stop()
            log = m.log()
            if status not in (0, None) and not m.killed:
                problems.append(f"{m.mountpoint}: exit status {status}\n{log}")
            if "Sanitizer" in log or "runtime error" in log:
                problems.append(f"{m.mountpoint}: sanitizer report\n{log}")
        assert not problems, "\n".join(problems)


@pytest.fixture
def mounts(zookeeper, zk, base):
    ms = Mounts(zookeeper.connect + base)
    yield ms
    for locker in list(Locker.alive):
        locker.kill()
    # Every test ends with nothing of ours left in ZooKeeper, checked while
    # the mounts (and so their sessions) still live.
    wait_until(lambda: not lock_nodes(zk, base), 15,
               f"no lock znode left under {base} "
               f"(left: {lock_nodes(zk, base)})")
    ms.stop_all()


@pytest.fixture
def m1(mounts):
    return mounts.new()


@pytest.fixture
def m2(mounts):
    return mounts.new()
