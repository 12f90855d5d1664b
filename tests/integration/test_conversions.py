"""Conversions on real mounts: a downgrade (a write lock held, then a
read lock asked for through the same holder) keeps the holder's place in
the queue, so that a writer queued behind it on another host is still
waiting afterwards, and gets the lock once the reader lets go.  An
upgrade lets go and queues at the end, as flock(2) documents."""
import os
import re
import subprocess
import sys
import tempfile

import pytest

from harness import (HERE, Driver, Locker, finish_all, lock_nodes, status,
                     wait_until)
from test_core import still_waiting

pytestmark = pytest.mark.concurrency

NUMBER = re.compile(r"(-?\d{10})$")
WORKER = os.path.join(HERE, "downgrade_worker.py")
SANITIZED = os.environ.get("ZKLOCKFS_SANITIZE", "none") != "none"

# How a holder takes and downgrades its lock, on which file.
KINDS = {
    "flock": ("lock", "flock {fd} ex", "flock {fd} sh", "flock {fd} un"),
    "posix": ("lock", "lockf {fd} wr", "lockf {fd} rd", "lockf {fd} un"),
    "ofd": ("lock", "ofd {fd} wr", "ofd {fd} rd", "ofd {fd} un"),
    # The lock an open of write takes, downgraded by flock on its descriptor.
    "write": ("write", None, "flock {fd} sh", "flock {fd} un"),
}


def nodes_of(zk, base, res="r"):
    """The resource's lock nodes: name -> the number it ends with."""
    return {os.path.basename(p): NUMBER.search(p).group(1)
            for p in lock_nodes(zk, f"{base}/{res}")}


def queued(zk, base, count, res="r"):
    """Wait until the resource has `count` lock nodes; return them."""
    def counted():
        nodes = nodes_of(zk, base, res)
        return (nodes,) if len(nodes) == count else None
    return wait_until(counted, 15, f"{count} lock nodes on {res}")[0]


def hold(mount, kind, res="r"):
    """A driver holding the write lock of `res` through `kind`."""
    name, take, _, _ = KINDS[kind]
    d = Driver()
    d.ok(f"open f {mount.path(res, name)} {'w' if name == 'write' else 'rw'}")
    if take:
        d.ok(take.format(fd="f"))
    return d


def downgrade(d, kind):
    d.ok(KINDS[kind][2].format(fd="f"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_downgrade_lets_no_writer_of_another_host_in(zk, base, m1, m2,
                                                       kind):
    holder = hold(m1, kind)
    (write_node, number), = queued(zk, base, 1).items()
    assert "-write-" in write_node
    writer = Locker(m2.path("r", "write"))
    queued(zk, base, 2)
    downgrade(holder, kind)
    nodes = queued(zk, base, 2)
    assert write_node not in nodes, "the write node is gone"
    heir = write_node.replace("-write-", "-read-")
    assert nodes.get(heir) == number, \
        f"the read node has the write node's name and number: {nodes}"
    assert still_waiting(writer, 0.5), \
        f"a writer of another host got in at the downgrade: {writer.result}"
    # Every host shows the reader in the writer's old place.
    with open(m2.path("r", "holders")) as f:
        lines = [line.split(" ") for line in f.read().splitlines()]
    assert [(l[0], l[1], l[8]) for l in lines] == [
        ("held", "read", heir), ("waiting", "write", lines[1][8])], lines
    holder.exit()
    writer.granted()
    writer.close()


def test_a_waiter_whose_view_is_older_than_the_heir_still_waits(zk, base, m1,
                                                                m2):
    """The writer of the other host watches a writer queued behind the
    downgraded lock, on the holder's host.  That one goes: the other
    host's view of the queue, taken before the downgrade, still names the
    deleted write node, and must not be trusted as it is."""
    holder = hold(m1, "flock")
    between = Locker(m1.path("r", "write"))
    queued(zk, base, 2)
    writer = Locker(m2.path("r", "write"))
    queued(zk, base, 3)
    downgrade(holder, "flock")
    queued(zk, base, 3)
    between.proc.kill()
    between.proc.wait(15)
    queued(zk, base, 2)
    assert still_waiting(writer, 0.5), \
        f"a writer with an old view got in beside the reader: {writer.result}"
    holder.exit()
    writer.granted()
    writer.close()


def test_an_upgrade_queues_at_the_end(zk, base, m1, m2):
    holder = Driver()
    holder.ok(f"open f {m1.path('r', 'lock')}")
    holder.ok("flock f sh")
    writer = Locker(m2.path("r", "write"))
    queued(zk, base, 2)
    holder.send("flock f ex")
    writer.granted()
    assert holder.poll() is None, "the upgrade went ahead of the writer"
    writer.close()
    assert holder.answer() == "ok"
    holder.exit()


@pytest.mark.parametrize("kind", ["flock", "posix"])
def test_a_downgraded_lock_ends_with_its_holder(zk, base, m1, m2, kind):
    holder = hold(m1, kind)
    downgrade(holder, kind)
    (node, _), = queued(zk, base, 1).items()
    assert "-read-" in node
    holder.ok(KINDS[kind][3].format(fd="f"))
    queued(zk, base, 0)
    holder.ok(KINDS[kind][1].format(fd="f"))
    queued(zk, base, 1)
    holder.exit()
    queued(zk, base, 0)


@pytest.mark.parametrize("where", ["same host", "other host"])
def test_a_downgraded_lock_is_shared_with_readers(zk, base, m1, m2, where):
    holder = hold(m1, "flock")
    downgrade(holder, "flock")
    other = Driver()
    other.ok(f"open f {(m1 if where == 'same host' else m2).path('r', 'lock')}")
    other.ok("flock f sh nb")
    assert other.do("flock f ex nb") == "err EAGAIN"
    other.exit()
    holder.exit()
    queued(zk, base, 0)


def test_downgraders_writers_and_readers_on_two_mounts_never_overlap(
        zk, base, m1, m2):
    """Downgraders, writers and readers loop on one resource from two
    mounts; the critical sections (sections.py) check that no writer is
    ever in beside anyone, in particular between a downgrader's write and
    read sections."""
    rounds = 8 if SANITIZED else 20
    directory = tempfile.mkdtemp(prefix="zklockfs-dg-")
    log = tempfile.mktemp(prefix="zklockfs-dg-log-")
    plan = [("downgrade", m1), ("downgrade", m2), ("write", m2),
            ("write", m1), ("read", m2), ("downgrade", m1)]
    procs = [subprocess.Popen(
        [sys.executable, WORKER, kind, mount.path("r", "lock"), directory,
         log, str(rounds)], stdout=subprocess.PIPE, text=True)
        for kind, mount in plan]
    finish_all(procs, 120, "the lockers")
    with open(log) as f:
        entries = f.read()
    assert "OVERLAP" not in entries, entries
    assert entries.count("ENTER") == rounds * len(plan), entries.count("ENTER")
    assert all(p.returncode == 0 for p in procs)
    queued(zk, base, 0)


def token_of(driver, fd="f"):
    return int(driver.ok(f"read {fd}").split("|")[0])


def test_the_reader_keeps_the_writers_token_below_the_next_writers(
        zk, base, m1, m2):
    """The downgraded lock is the same hold going on: its fencing token is
    the write lock's, and every host's holders says so; the writer queued
    behind gets a greater one."""
    holder = hold(m1, "flock")
    before = token_of(holder)
    writer = Driver()
    writer.ok(f"open f {m2.path('r', 'lock')}")
    writer.send("flock f ex")
    queued(zk, base, 2)
    downgrade(holder, "flock")
    assert token_of(holder) == before
    for m in (m1, m2):
        with open(m.path("r", "holders")) as f:
            first = f.read().splitlines()[0].split(" ")
        assert first[:3] == ["held", "read", str(before)], first
    holder.exit()
    assert writer.answer() == "ok"
    assert token_of(writer) > before
    writer.exit()


@pytest.mark.parametrize("take, give", [("flock f ex", "flock f sh"),
                                        ("lockf f wr", "lockf f rd")])
def test_a_multi_lock_converts_the_old_way(zk, base, m1, take, give):
    d = Driver()
    d.ok(f"open f {m1.path('.all', 'a,b', 'lock')}")
    d.ok(take)
    d.ok(give)  # its nodes let go, then queued as readers
    for res in ("a", "b"):
        nodes = nodes_of(zk, base, res)
        assert len(nodes) == 1 and "-read-" in next(iter(nodes)), nodes
    assert "ok" in d.do("read f")
    d.exit()


def test_a_try_downgrade_is_done_in_place(zk, base, m1, m2):
    holder = hold(m1, "flock")
    (write_node, number), = queued(zk, base, 1).items()
    holder.ok("flock f sh nb")
    assert queued(zk, base, 1) == {write_node.replace("-write-", "-read-"):
                                   number}
    holder.exit()


@pytest.mark.parametrize("kind", ["flock", "posix"])
def test_a_try_downgrade_while_disconnected_fails_and_keeps_the_lock(
        zk, base, cut_off, kind):
    proxy, m = cut_off
    holder = hold(m, kind)
    (write_node, _), = queued(zk, base, 1).items()
    proxy.cut()
    wait_until(lambda: status(m)["state"] == "suspended", 10,
               "the mount to see the connection lost")
    try_it = {"flock": "flock f sh nb", "posix": "lockf f rd nb"}[kind]
    assert holder.do(try_it) == "err EAGAIN"
    proxy.accept()
    wait_until(lambda: status(m)["state"] == "connected", 20,
               "the mount to be connected again")
    assert list(nodes_of(zk, base)) == [write_node], \
        "the write lock is still held"
    downgrade(holder, kind)  # and now it can be downgraded
    assert "-read-" in next(iter(queued(zk, base, 1)))
    holder.exit()
