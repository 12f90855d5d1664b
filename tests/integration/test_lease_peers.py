"""Semaphores shared with the peers: a mount of dialect curator takes its
leases in the layout of Curator's InterProcessSemaphoreV2, a mount of
dialect kazoo in that of kazoo's Semaphore, so that the real Java and
Python services (services.py) and the mounts share one set of N leases,
served in the order of the peer's own lock."""
import fcntl
import os
import re
import struct
import time

import pytest
from kazoo.exceptions import NoNodeError

from harness import Locker, holders_once, wait_until
from services import kazoo_service
from test_core import still_waiting
from test_lease import (expire_session, lease, read_limit, status_of,
                        write_limit)
from test_services import CURATOR_TAG, flock_n

pytestmark = pytest.mark.peers

# The nodes of a lease and of the peer's own lock, and where they go.
LEASE_NODE = {"curator": CURATOR_TAG + r"lease-\d{10}",
              "kazoo": r"[0-9a-f]{32}"}
MUTEX_NODE = {"curator": CURATOR_TAG + r"lock-\d{10}",
              "kazoo": r"[0-9a-f]{32}__lock__\d{10}"}


def lease_dir(tool, res):
    return f"{res}/leases" if tool == "curator" else res


def mutex_dir(tool, res):
    return f"{res}/locks" if tool == "curator" else f"{res}-__lock__"


def children(zk, path):
    # The peers' directories are containers: ZooKeeper deletes them once
    # empty, maybe between a look and the next.
    try:
        return zk.get_children(path)
    except NoNodeError:
        return []


def wait_for_count(zk, path, n, what):
    wait_until(lambda: len(children(zk, path)) == n, 15,
               f"{n} {what} in {path} (there: {children(zk, path)})")


def nothing_left(zk, tool, res):
    wait_for_count(zk, lease_dir(tool, res), 0, "leases")
    wait_for_count(zk, mutex_dir(tool, res), 0, "lock nodes")


def test_the_service_and_two_hosts_share_two_leases(zk, base, tool, service,
                                                    two):
    m1, m2 = two
    res = f"{base}/jobs"
    write_limit(m1, "jobs", "2")
    theirs = service.hold("lease", res, leases=2)
    ours = lease(m1)
    ours.granted()
    names = children(zk, lease_dir(tool, res))
    assert len(names) == 2 and all(
        re.fullmatch(LEASE_NODE[tool], n) for n in names), names
    assert not children(zk, mutex_dir(tool, res)), \
        "the peer's lock kept after the lease was granted"

    t = lease(m2, flags="wn")
    assert t.wait_result() == "err EAGAIN", "a try of a third lease"
    t.close()
    late = service.acquire("lease", res, 1000, leases=2)
    assert service.outcome(late) == "timeout", \
        f"{tool} took a third lease of two"

    waiter = lease(m2)  # holds the peer's lock while it waits
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    assert re.fullmatch(MUTEX_NODE[tool],
                        children(zk, mutex_dir(tool, res))[0])
    assert still_waiting(waiter), "a third lease granted with a limit of 2"
    service.release(theirs)
    waiter.granted()

    third = service.acquire("lease", res, leases=2)
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    ours.close()  # a mount's return grants the service's waiter
    assert service.outcome(third) == "held"
    service.release(third)
    waiter.close()
    nothing_left(zk, tool, res)


def test_waiters_of_both_are_served_in_the_order_they_came(zk, base, tool,
                                                          service, two):
    m1, m2 = two
    res = f"{base}/jobs"
    write_limit(m1, "jobs", "2")
    a, b = lease(m1), lease(m2)
    a.granted()
    b.granted()
    theirs = service.acquire("lease", res, leases=2)
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    ours = lease(m1)
    wait_for_count(zk, mutex_dir(tool, res), 2, "lock nodes")
    a.close()
    assert service.outcome(theirs) == "held", "the first waiter, first"
    assert still_waiting(ours), "the second waiter passed the first"
    b.close()
    ours.granted()
    service.release(theirs)
    ours.close()
    nothing_left(zk, tool, res)


def test_a_killed_or_interrupted_waiter_lets_the_next_one_in(zk, base, tool,
                                                            service, two):
    m1, m2 = two
    res = f"{base}/jobs"  # limit 1: never set
    holder = lease(m1)
    holder.granted()
    assert flock_n(m2.path("jobs", "lease")) == 1, "flock -n beside a lease"
    counting = lease(m2)  # holds the peer's lock, watching the leases
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    queued = Locker(m2.path("jobs", "lease"), "w", ["--alarm", "2"])
    wait_for_count(zk, mutex_dir(tool, res), 2, "lock nodes")
    assert queued.wait_result() == "err EINTR"
    queued.close()
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    theirs = service.acquire("lease", res, leases=1)
    wait_for_count(zk, mutex_dir(tool, res), 2, "lock nodes")
    counting.kill()
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    assert service.poll(theirs) is None, "granted beside the holder"
    holder.close()
    assert service.outcome(theirs) == "held"
    service.release(theirs)
    nothing_left(zk, tool, res)


def test_an_expired_session_loses_its_lease_and_requeues_its_waiter(
        zk, base, tool, service, mounts, paused):
    res = f"{base}/jobs"
    m1 = mounts.new("-o", f"dialect={tool}", "-o", "on_lost=signal:USR1")
    m2 = mounts.new("-o", f"dialect={tool}")
    write_limit(m2, "jobs", "2")
    holder = Locker(m1.path("jobs", "lease"), "rw",
                    extra=["--trap", "SIGUSR1"])
    holder.granted()
    other = lease(m2)
    other.granted()
    waiter = lease(m1, flags="rw")  # m1 holds the peer's lock, counting
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    theirs = service.acquire("lease", res, leases=2)
    wait_for_count(zk, mutex_dir(tool, res), 2, "lock nodes")

    expire_session(
        m1, paused,
        lambda: service.outcome(theirs, 30) == "held" or pytest.fail(
            "the expired session's lease and lock did not pass on"),
        holder, waiter)
    other.close()
    waiter.granted()
    assert "mode lease" in waiter.command("read")
    service.release(theirs)
    for h in (holder, waiter):
        h.close()
    nothing_left(zk, tool, res)


def getlk(fd):
    """F_GETLK's answer for a write lock on fd: F_UNLCK or F_WRLCK."""
    probe = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
    return struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, probe))[0]


def test_f_getlk_counts_the_peers_leases(zk, base, tool, service, two):
    m1, _ = two
    res = f"{base}/jobs"
    write_limit(m1, "jobs", "2")
    first = service.hold("lease", res, leases=2)
    fd = os.open(m1.path("jobs", "lease"), os.O_RDONLY)
    try:
        assert getlk(fd) == fcntl.F_UNLCK, "one lease of two is free"
        second = service.hold("lease", res, leases=2)
        assert getlk(fd) == fcntl.F_WRLCK, "both leases taken"
        service.release(second)
    finally:
        os.close(fd)
    service.release(first)
    nothing_left(zk, tool, res)


def test_kazoo_refuses_a_semaphore_of_another_size_than_the_limit(
        zk, zookeeper, base, mounts):
    m = mounts.new("-o", "dialect=kazoo")
    res = f"{base}/jobs"
    write_limit(m, "jobs", "2")
    svc = kazoo_service(zookeeper.connect)
    try:
        wrong = svc.acquire("lease", res, 1000, leases=3)
        answer = svc.outcome(wrong)
        assert answer.startswith("error") and \
            "Inconsistent max leases" in answer, answer
        svc.release(svc.hold("lease", res, leases=2))
    finally:
        svc.close()
    assert zk.get(res)[0] == b"2", "the stored limit changed"


@pytest.mark.parametrize("dialect", ["curator", "kazoo"])
def test_a_peer_lease_reads_as_its_token_and_node(zk, base, mounts, dialect):
    m = mounts.new("-o", f"dialect={dialect}")
    h = lease(m, flags="rw")
    h.granted()
    fields = h.command("read").split("|")
    info = dict(f.split(" ", 1) for f in fields[1:])
    assert info["mode"] == "lease"
    parent, name = info["node"].rsplit("/", 1)
    assert parent == lease_dir(dialect, f"{base}/jobs")
    assert re.fullmatch(LEASE_NODE[dialect], name), name
    assert zk.get(info["node"])[1].czxid == int(fields[0])
    assert h.command("note batch 7") == "ok"
    assert b"batch 7" in zk.get(info["node"])[0]
    assert status_of(m)["leases_held"] == "1"
    h.close()
    nothing_left(zk, dialect, f"{base}/jobs")


def holders_of(mount, resource="jobs"):
    """holders' lines as (state, mode, pid, node, tool, note), and its last
    (the semaphore's) line."""
    with open(mount.path(resource, "holders")) as f:
        lines = f.read().splitlines()
    rows = [line.split(" ", 10) for line in lines[:-1]]
    return [(r[0], r[1], r[4], r[8], r[9], r[10]) for r in rows], lines[-1]


def test_holders_lists_the_peers_leases_and_waiters(zk, base, tool, service,
                                                   two):
    m1, m2 = two
    res = f"{base}/jobs"
    where = {"curator": ("leases/", "locks/"),
             "kazoo": ("", "../jobs-__lock__/")}[tool]
    write_limit(m1, "jobs", "2")
    theirs = service.hold("lease", res, leases=2)
    ours = lease(m1, flags="rw")
    ours.granted()
    assert ours.command("note batch 7") == "ok"
    counting = lease(m2)  # holds the peer's lock, watching the leases
    wait_for_count(zk, mutex_dir(tool, res), 1, "lock nodes")
    queued = service.acquire("lease", res, leases=2)
    wait_for_count(zk, mutex_dir(tool, res), 2, "lock nodes")

    rows, semaphore = holders_of(m2)
    pids = [str(ours.proc.pid), str(counting.proc.pid)]
    # The leases by age, then who waits, in the peer's lock's order:
    # Curator's counter has made its lease already, kazoo's has not.
    assert [(r[0], r[1], r[4]) for r in rows] == [
        ("held", "lease", tool), ("held", "lease", "zklockfs"),
        ("waiting", "lease", "zklockfs"), ("waiting", "lease", tool)], rows
    assert (rows[1][2], rows[1][5]) == (pids[0], "batch 7"), rows
    assert rows[2][2] == pids[1], rows
    for r, place in zip(rows, (0, 0, tool == "kazoo", 1)):
        assert r[3].startswith(where[place]), (r, where)
        node = r[3][len(where[place]):]
        pattern = MUTEX_NODE if place else LEASE_NODE
        assert re.fullmatch(pattern[tool], node), r
        parent = mutex_dir(tool, res) if place else lease_dir(tool, res)
        assert zk.exists(f"{parent}/{node}"), r
    assert semaphore == "limit 2 held 2 free 0", semaphore
    assert holders_of(m1)[0] == rows, "the other host sees the same"

    service.release(theirs)
    counting.granted()
    assert service.poll(queued) is None
    # Granted on m2: m1 is not told, and shows it within its second.
    after = [("held", pids[0]), ("held", pids[1]), ("waiting", "-")]
    rows, semaphore = holders_once(
        lambda: holders_of(m1),
        lambda read: [(r[0], r[2]) for r in read[0]] == after)
    assert [(r[0], r[2]) for r in rows] == after, rows
    assert semaphore == "limit 2 held 2 free 0", semaphore
    for h in (ours, counting):
        h.close()
    assert service.outcome(queued) == "held"
    wait_for_count(zk, lease_dir(tool, res), 1, "leases")  # both returned
    rows, semaphore = holders_of(m2)
    assert [(r[0], r[4]) for r in rows] == [("held", tool)], rows
    assert semaphore == "limit 2 held 1 free 1", semaphore
    service.release(queued)
    nothing_left(zk, tool, res)
    with open(m1.path("jobs", "holders")) as f:
        assert f.read() == "", "no leases, no line"


def test_a_limit_outlives_curators_container(zk, zookeeper, base, mounts,
                                              curator_java):
    """Curator makes its recipes' paths containers, which the server
    deletes once empty (within a second here), and a limit in its data
    with it; ZooKeeper shows a container to clients as persistent.
    Storing a limit pins the resource (a persistent child) so that it
    stays; rmdir takes both."""
    m = mounts.new("-o", "dialect=curator")
    java = curator_java.service(zookeeper.connect)
    try:
        for res in ("jobs", "other"):
            lease = java.hold("lease", f"{base}/{res}", leases=3)
            if res == "jobs":
                assert write_limit(m, "jobs", "3\n") == 2
            java.release(lease)
    finally:
        java.close()
    # The control: Curator's own, idle, goes.
    wait_until(lambda: zk.exists(f"{base}/other") is None, 30,
               "the idle container without a limit to be deleted")
    wait_until(lambda: zk.get_children(f"{base}/jobs") == [".zklockfs-limit"],
               30, "Curator's idle locks and leases to go")
    deadline = time.monotonic() + 3  # three container checks
    while time.monotonic() < deadline:
        assert zk.exists(f"{base}/jobs") is not None, "N went with its znode"
        time.sleep(0.2)
    assert read_limit(m, "jobs") == "3\n"
    assert os.listdir(m.path("jobs")).count(".zklockfs-limit") == 0, \
        "the pin is listed"
    os.rmdir(m.path("jobs"))
    assert zk.exists(f"{base}/jobs") is None
