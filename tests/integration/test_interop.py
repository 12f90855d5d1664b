"""Sharing locks with other ZooKeeper clients through the same path: a
mount of any dialect waits behind every tool's lock nodes, and with
-o dialect=kazoo (or curator) it creates names that tool waits behind.
kazoo is the real client (Debian's python3-kazoo), in a session of its
own as a Python service would have."""
import errno
import fcntl
import os
import re

import pytest
from kazoo.exceptions import LockTimeout

from harness import kazoo_client, released
from test_names_and_errors import expect_errno

pytestmark = pytest.mark.peers

G = "0123abcd-0000-4000-8000-00000000000a"
NONBLOCK_WRITE = os.O_RDWR | os.O_NONBLOCK
NONBLOCK_READ = os.O_RDONLY | os.O_NONBLOCK


@pytest.fixture
def service(zookeeper):
    """Another client's session, like a Python service's."""
    with kazoo_client(zookeeper.connect) as client:
        yield client


def holders_tools(mount, resource):
    with open(mount.path(resource, "holders")) as f:
        return [line.split(" ")[9] for line in f.read().splitlines()]


def test_a_default_mount_waits_behind_a_kazoo_lock(service, base, m1):
    lock = service.Lock(f"{base}/r", "py-service")
    assert lock.acquire(timeout=10)
    try:
        expect_errno(errno.EAGAIN, os.open, m1.path("r", "write"),
                     NONBLOCK_WRITE)
        expect_errno(errno.EAGAIN, os.open, m1.path("r", "read"),
                     NONBLOCK_READ)
        fd = os.open(m1.path("r", "lock"), os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        assert holders_tools(m1, "r") == ["kazoo"]
    finally:
        lock.release()
    os.close(os.open(m1.path("r", "write"), NONBLOCK_WRITE))


@pytest.mark.parametrize("name, exclusive", [
    (f"_c_{G}-lock-", True),        # Curator InterProcessMutex
    (f"_c_{G}-__WRIT__", True),     # Curator InterProcessReadWriteLock
    (f"_c_{G}-__READ__", False),
    ("9f2c0123abcd40008000000000000000__lock__", True),   # kazoo
    ("9f2c0123abcd40008000000000000000__rlock__", False),
    ("x-72057594037927936-", True),  # ZooKeeper's WriteLock recipe
])
def test_a_default_mount_queues_behind_every_tools_node(zk, base, m1, name,
                                                        exclusive):
    node = zk.create(f"{base}/r/{name}", b"", ephemeral=True, sequence=True,
                     makepath=True)
    try:
        expect_errno(errno.EAGAIN, os.open, m1.path("r", "write"),
                     NONBLOCK_WRITE)
        if exclusive:
            expect_errno(errno.EAGAIN, os.open, m1.path("r", "read"),
                         NONBLOCK_READ)
        else:
            os.close(os.open(m1.path("r", "read"), NONBLOCK_READ))
    finally:
        zk.delete(node)
    os.close(os.open(m1.path("r", "write"), NONBLOCK_WRITE))


def test_kazoo_dialect_and_kazoo_exclude_each_other(zk, service, base,
                                                     mounts):
    m = mounts.new("-o", "dialect=kazoo")
    writer = service.WriteLock(f"{base}/r")
    fd = os.open(m.path("r", "write"), os.O_RDWR)
    try:
        names = zk.get_children(f"{base}/r")
        assert len(names) == 1 and re.fullmatch(r"[0-9a-f]{32}__lock__\d{10}",
                                                names[0]), names
        with pytest.raises(LockTimeout):  # kazoo waits behind our writer
            writer.acquire(timeout=1)
        # A failed try leaves no node behind here, with Debian's kazoo 2.8
        # (kazoo #732 reports cases where one is left).
        assert not writer.acquire(blocking=False)
        assert zk.get_children(f"{base}/r") == names
    finally:
        os.close(fd)
    assert writer.acquire(timeout=10), "kazoo never got the lock we let go"
    try:
        expect_errno(errno.EAGAIN, os.open, m.path("r", "write"),
                     NONBLOCK_WRITE)
        expect_errno(errno.EAGAIN, os.open, m.path("r", "read"),
                     NONBLOCK_READ)
    finally:
        writer.release()
    # Readers share, both ways.
    reader = service.ReadLock(f"{base}/r")
    assert reader.acquire(timeout=10)
    try:
        fd = os.open(m.path("r", "read"), NONBLOCK_READ)
        names = zk.get_children(f"{base}/r")
        assert any(re.fullmatch(r"[0-9a-f]{32}__rlock__\d{10}", n)
                   for n in names), names
        os.close(fd)
        expect_errno(errno.EAGAIN, os.open, m.path("r", "write"),
                     NONBLOCK_WRITE)
    finally:
        reader.release()
    released(zk, base)  # the mount's read lock, closed above, too


def test_curator_dialect_creates_curators_names(zk, base, mounts):
    m = mounts.new("-o", "dialect=curator")
    for kind, word in (("write", "__WRIT__"), ("read", "__READ__")):
        fd = os.open(m.path("r", kind), os.O_RDONLY)
        try:
            names = zk.get_children(f"{base}/r")
            assert len(names) == 1 and re.fullmatch(
                r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                r"[0-9a-f]{12}-" + word + r"\d{10}", names[0]), names
            # Named as Curator names it, but made by a mount: holders
            # says who made it (its identity tells).
            assert holders_tools(m, "r") == ["zklockfs"]
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
