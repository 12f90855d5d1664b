"""pytest fixtures: one ZooKeeper server for the run, two fresh mounts and
a fresh base path per test, and the check that no lock znode is left."""
import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Mounts, ZooKeeper, kazoo_client  # noqa: E402


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
