"""A Java service using the real Apache Curator and a Python service using
the real kazoo, each in a process and a session of its own, share lock
paths with mounts: a mount of the service's dialect and the service
exclude each other both ways, readers share, a queue mixing them stays
first come first served, and a killed service's lock passes on once its
session expires.  A default mount waits behind either."""
import errno
import os
import re
import subprocess
import time

import pytest

from harness import Driver, Locker, lock_nodes, wait_until
from services import start_service
from test_names_and_errors import expect_errno

pytestmark = pytest.mark.peers

NONBLOCK_WRITE = os.O_RDWR | os.O_NONBLOCK
NONBLOCK_READ = os.O_RDONLY | os.O_NONBLOCK

# The writer's and the reader's nodes a mount of each dialect creates.
CURATOR_TAG = (r"_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
               r"[0-9a-f]{12}-")
WRITER_NODE = {"curator": CURATOR_TAG + r"__WRIT__\d{10}",
               "kazoo": r"[0-9a-f]{32}__lock__\d{10}"}
READER_NODE = {"curator": CURATOR_TAG + r"__READ__\d{10}",
               "kazoo": r"[0-9a-f]{32}__rlock__\d{10}"}


def flock_n(path):
    """flock(1) -n on path: its exit status (1 when the lock is held)."""
    return subprocess.run(["flock", "-n", path, "true"],
                          timeout=30).returncode


def queue_length(zk, resource, n):
    wait_until(lambda: len(lock_nodes(zk, resource)) == n, 15,
               f"{n} lock nodes under {resource} "
               f"(there: {lock_nodes(zk, resource)})")


def test_a_mount_and_the_service_exclude_each_other(zk, base, tool, service,
                                                    two):
    m1, m2 = two
    res = f"{base}/r"
    fd = os.open(m1.path("r", "write"), os.O_RDWR)
    try:
        names = zk.get_children(res)
        assert len(names) == 1 and re.fullmatch(WRITER_NODE[tool],
                                                names[0]), names
        lock = service.acquire("write", res, 1000)
        assert service.outcome(lock) == "timeout", \
            f"{tool} took the write lock beside the mount's writer"
    finally:
        os.close(fd)
    lock = service.hold("write", res)
    try:
        expect_errno(errno.EAGAIN, os.open, m2.path("r", "write"),
                     NONBLOCK_WRITE)
        expect_errno(errno.EAGAIN, os.open, m2.path("r", "read"),
                     NONBLOCK_READ)
        assert flock_n(m2.path("r", "lock")) == 1, \
            f"flock -n took the lock beside {tool}'s writer"
    finally:
        service.release(lock)
    os.close(os.open(m2.path("r", "write"), NONBLOCK_WRITE))


@pytest.mark.parametrize("take", ["flock ex", "lockf wr", "ofd wr",
                                  "flock sh", "lockf rd"])
def test_flock_and_fcntl_take_the_dialects_locks(zk, base, tool, service,
                                                 two, take):
    m1, _ = two
    res = f"{base}/r"
    driver = Driver()
    driver.ok(f"open f {m1.path('r', 'lock')} rw")
    driver.ok(f"{take.replace(' ', ' f ')}")
    names = zk.get_children(res)
    exclusive = take.endswith(("ex", "wr"))
    node = (WRITER_NODE if exclusive else READER_NODE)[tool]
    assert len(names) == 1 and re.fullmatch(node, names[0]), names
    lock = service.acquire("write", res, 1000)
    assert service.outcome(lock) == "timeout", \
        f"{tool}'s writer took the lock beside {take}"
    if not exclusive:
        service.release(service.hold("read", res))
    driver.exit()
    service.release(service.hold("write", res))


def test_readers_share_with_the_service(zk, base, service, two):
    m1, m2 = two
    res = f"{base}/r"
    fd = os.open(m1.path("r", "read"), os.O_RDONLY)
    try:
        lock = service.hold("read", res)  # beside the mount's reader
        try:
            os.close(os.open(m2.path("r", "read"), NONBLOCK_READ))
            expect_errno(errno.EAGAIN, os.open, m2.path("r", "write"),
                         NONBLOCK_WRITE)
            writer = service.acquire("write", res, 1000)
            assert service.outcome(writer) == "timeout"
        finally:
            service.release(lock)
    finally:
        os.close(fd)


def test_a_service_writer_between_mount_readers_keeps_its_place(
        zk, base, service, two):
    m1, m2 = two
    res = f"{base}/r"
    first = os.open(m1.path("r", "read"), os.O_RDONLY)
    writer = service.acquire("write", res)
    queue_length(zk, res, 2)
    # A reader may not pass the writer queued before it, on either host.
    expect_errno(errno.EAGAIN, os.open, m2.path("r", "read"), NONBLOCK_READ)
    second = Locker(m2.path("r", "read"), "r")
    queue_length(zk, res, 3)
    os.close(first)
    assert service.outcome(writer) == "held", "the service's writer, next"
    assert second.poll_result() is None, \
        "the reader queued behind the service's writer passed it"
    service.release(writer)
    second.granted()
    second.close()


def test_a_mount_writer_between_service_readers_keeps_its_place(
        zk, base, service, two):
    m1, _ = two
    res = f"{base}/r"
    first = service.hold("read", res)
    writer = Locker(m1.path("r", "write"), "w")
    queue_length(zk, res, 2)
    second = service.acquire("read", res)
    queue_length(zk, res, 3)
    service.release(first)
    writer.granted()
    assert service.poll(second) is None, \
        "the service's reader passed the mount's writer queued before it"
    writer.close()
    assert service.outcome(second) == "held"
    service.release(second)


def test_a_mount_downgrade_keeps_the_services_writer_waiting(
        zk, base, tool, service, two):
    """The read node a downgrade leaves in the write node's place has the
    tool's own read name and the write node's number: the tool's writer
    queued behind reads it as a reader ahead of it (Curator sorts by the
    number after its marker, kazoo by the number its pattern finds), and
    goes on waiting."""
    m1, _ = two
    res = f"{base}/r"
    holder = Driver()
    holder.ok(f"open f {m1.path('r', 'lock')}")
    holder.ok("flock f ex")
    write_node, = zk.get_children(res)
    writer = service.acquire("write", res)
    queue_length(zk, res, 2)
    holder.ok("flock f sh")
    marker = {"curator": ("-__WRIT__", "-__READ__"),
              "kazoo": ("__lock__", "__rlock__")}[tool]
    heir = write_node.replace(*marker)
    wait_until(lambda: heir in zk.get_children(res), 15,
               f"the read node {heir} in the write node's place")
    assert write_node not in zk.get_children(res)
    assert still_waiting_for(service, writer), \
        f"the {tool} writer got in at the downgrade"
    holder.exit()
    assert service.outcome(writer) == "held"
    service.release(writer)


def still_waiting_for(service, lock_id, settle=0.5):
    """Negative check, over an interval: no answer to the acquire yet."""
    time.sleep(settle)
    return service.poll(lock_id) is None


def test_a_killed_services_lock_passes_on_once_its_session_expires(
        request, zookeeper, zk, base, tool, two):
    m1, _ = two
    res = f"{base}/r"
    svc = start_service(request, tool, zookeeper.connect, session_ms=2000)
    svc.hold("write", res)
    waiter = Locker(m1.path("r", "write"), "w")
    queue_length(zk, res, 2)
    assert waiter.poll_result() is None
    svc.kill()
    waiter.granted(timeout=30)  # 2 s of session, then the server's check
    assert len(lock_nodes(zk, res)) == 1
    waiter.close()


@pytest.mark.parametrize("kind", ["mutex", "write", "read"])
def test_a_default_mount_waits_behind_the_service(zk, base, service, m1,
                                                  m2, kind):
    res = f"{base}/r"
    lock = service.hold(kind, res)
    expect_errno(errno.EAGAIN, os.open, m1.path("r", "write"),
                 NONBLOCK_WRITE)
    if kind == "read":
        os.close(os.open(m1.path("r", "read"), NONBLOCK_READ))
    else:
        expect_errno(errno.EAGAIN, os.open, m1.path("r", "read"),
                     NONBLOCK_READ)
        assert flock_n(m1.path("r", "lock")) == 1
    waiter = Locker(m2.path("r", "write"), "w")
    queue_length(zk, res, 2)
    assert waiter.poll_result() is None
    service.release(lock)
    waiter.granted()
    waiter.close()


def test_a_multi_lock_of_the_dialect_excludes_the_service_on_each_resource(
        zk, base, tool, service, two):
    """MOUNT/.all/a,b/write in the tool's dialect: both nodes are the
    tool's writer names, so the service waits on either resource; and
    while the service holds one, the multi-lock takes neither."""
    m1, _ = two
    fd = os.open(m1.path(".all", "a,b", "write"), os.O_RDWR)
    try:
        for res in ("a", "b"):
            names = zk.get_children(f"{base}/{res}")
            assert len(names) == 1 and re.fullmatch(WRITER_NODE[tool],
                                                    names[0]), names
            lock = service.acquire("write", f"{base}/{res}", 1000)
            assert service.outcome(lock) == "timeout", \
                f"{tool} took {res} beside the mount's multi-lock"
    finally:
        os.close(fd)
    lock = service.hold("write", f"{base}/b")
    try:
        expect_errno(errno.EAGAIN, os.open, m1.path(".all", "a,b", "write"),
                     NONBLOCK_WRITE)
        assert lock_nodes(zk, f"{base}/a") == [], "the try left a node on a"
    finally:
        service.release(lock)
    os.close(os.open(m1.path(".all", "a,b", "write"), NONBLOCK_WRITE))
