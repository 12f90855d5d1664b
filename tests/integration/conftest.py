"""pytest fixtures: one ZooKeeper server for the run, two fresh mounts and
a fresh base path per test, and the check that no lock znode is left."""
import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Mounts, ZooKeeper, kazoo_client  # noqa: E402


# The suite's length (CI runs it three times and keeps to about a quarter
# of an hour): the files the AddressSanitizer run leaves to the plain run.
# They drive the peers' own Java and Python services through their lock,
# lease and dialect protocols; the daemon's code on those paths runs under
# AddressSanitizer in the unit tests (peerlease, names, holders).
ASAN_LEAVES = ("test_lease_peers.py", "test_interop.py", "test_services.py")


def pytest_collection_modifyitems(config, items):
    if "address" not in os.environ.get("ZKLOCKFS_SANITIZE", ""):
        return
    skip = pytest.mark.skip(reason="the plain run has the peers' services "
                            "(conftest.ASAN_LEAVES)")
    for item in items:
        if item.fspath.basename in ASAN_LEAVES:
            item.add_marker(skip)


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
    with kazoo_client(zookeeper.connect) as client:
        yield client


@pytest.fixture
def base():
    return "/t-" + uuid.uuid4().hex[:12]


@pytest.fixture
def mounts(zookeeper, zk, base):
    ms = Mounts(zookeeper.connect + base)
    yield ms
    ms.finish(zk, base)


@pytest.fixture
def m1(mounts):
    return mounts.new()


@pytest.fixture
def m2(mounts):
    return mounts.new()
