"""Several resources with one open: MOUNT/.all/<r1>,<r2>/write|read|lock
takes every listed resource's lock, all or nothing, on real mounts.  The
nodes of one multi-lock are created in one ZooKeeper transaction, so
lockers listing the same resources in any order, with single lockers
beside them, on two mounts, never deadlock and never overlap."""
import errno
import fcntl
import os
import signal
import subprocess
import sys
import tempfile

import pytest

from harness import (HERE, Locker, finish_all, lock_nodes, released,
                     wait_until)
from test_core import still_waiting
from test_exclusion import try_open

pytestmark = pytest.mark.concurrency

WORKER = os.path.join(HERE, "multilock_worker.py")
SANITIZED = os.environ.get("ZKLOCKFS_SANITIZE", "none") != "none"


def busy(path):
    """Is the write lock of path held elsewhere?  (A try that got it lets
    it go at once.)"""
    fd = try_open(path)
    if fd is not None:
        os.close(fd)
    return fd is None


def all_path(mount, names, kind="write"):
    return mount.path(".all", names, kind)


def test_a_list_directory_holds_three_files_and_all_is_not_listed(m1):
    assert sorted(os.listdir(m1.path(".all", "db,cache"))) == \
        ["lock", "read", "write"]
    assert os.listdir(m1.path(".all")) == []
    assert ".all" not in os.listdir(m1.path())
    assert os.path.isdir(m1.path(".all", "db%2Fshard1,a%2Cb,50%25"))


@pytest.mark.parametrize("bad", ["a,,b", "a,a", "a,", "a%2", "a%41",
                                 ",".join(f"r{i}" for i in range(65)),
                                 "a,.hidden", "a,write", "a%2F%2Fb"])
def test_a_bad_list_is_no_directory(m1, bad):
    assert not os.path.exists(m1.path(".all", bad)), bad
    with pytest.raises(OSError) as e:
        os.open(m1.path(".all", bad, "write"), os.O_WRONLY)
    assert e.value.errno == errno.ENOENT, bad


def test_only_write_read_and_lock_are_in_a_list_directory(m1):
    for name in ("lease", "limit", "holders", "revoke", "maxhold", "x"):
        assert not os.path.exists(m1.path(".all", "a,b", name)), name
    with pytest.raises(OSError) as e:
        os.mkdir(m1.path(".all", "a,b", "x"))
    assert e.value.errno in (errno.EINVAL, errno.EEXIST)


def test_a_multi_lock_excludes_each_resource_on_another_host(zk, base, m1, m2):
    holder = Locker(all_path(m1, "a,b"))
    holder.granted()
    for res in ("a", "b"):
        assert busy(m2.path(res, "write")), res
    assert not busy(m2.path("c", "write")), "c is not in the list"
    reader = Locker(all_path(m2, "b,a", "read"), "r")
    assert still_waiting(reader)
    holder.close()
    reader.granted()
    assert len(lock_nodes(zk, base + "/a")) == 1
    assert len(lock_nodes(zk, base + "/b")) == 1
    reader.close()


def test_a_try_takes_none_when_one_resource_is_busy(zk, base, m1, m2):
    holder = Locker(m2.path("b", "write"))
    holder.granted()
    assert busy(all_path(m1, "a,b"))
    assert lock_nodes(zk, base + "/a") == [], "a try left a node"
    assert len(lock_nodes(zk, base + "/b")) == 1
    holder.close()


def test_read_gives_the_highest_token_then_one_line_per_resource(zk, base, m1):
    holder = Locker(all_path(m1, "a,b%2Fc"), "rw")
    holder.granted()
    lines = holder.command("read").split("|")
    assert lines[0].isdigit(), lines
    assert lines[1].split(" ")[0] == "a" and lines[2].split(" ")[0] == "b/c"
    tokens = [int(lines[1].split(" ")[1]), int(lines[2].split(" ")[1])]
    assert int(lines[0]) == max(tokens), lines
    assert tokens[0] == tokens[1], "one transaction: one zxid"
    assert lines[3].startswith("node " + base + "/a/"), lines
    assert lines[5] == "mode write", lines
    assert len(lock_nodes(zk, base + "/b/c")) == 1
    holder.close()


def test_holders_of_each_resource_mark_the_multi_lock(m1, m2):
    holder = Locker(all_path(m1, "a,b"))
    holder.granted()
    for res in ("a", "b"):
        with open(m2.path(res, "holders")) as f:
            line = f.read().splitlines()[0]
        assert line.startswith("held write"), line
        assert " zklockfs:multi=a,b" in line, line
    holder.close()


def test_a_signal_cancels_the_whole_wait_and_leaves_nothing(zk, base, m1, m2):
    holder = Locker(m2.path("b", "write"))
    holder.granted()
    waiter = Locker(all_path(m1, "a,b"), "w", extra=["--alarm", "1"])
    assert waiter.wait_result(10) == "err EINTR"
    wait_until(lambda: lock_nodes(zk, base + "/a") == [], 5,
               "the interrupted multi-lock's node on a to go")
    assert len(lock_nodes(zk, base + "/b")) == 1
    holder.close()


def test_kill_9_of_a_holder_releases_every_resource(m1, m2):
    holder = Locker(all_path(m1, "a,b"))
    holder.granted()
    single_a = Locker(m2.path("a", "write"))
    single_b = Locker(m2.path("b", "write"))
    assert still_waiting(single_a) and still_waiting(single_b)
    holder.kill()
    single_a.granted()
    single_b.granted()
    single_a.close()
    single_b.close()


def test_flock_on_the_lists_lock_file_takes_every_resource(m1, m2):
    flocker = subprocess.Popen(
        ["flock", "-x", all_path(m1, "a,b", "lock"), "sleep", "30"],
        start_new_session=True)
    try:
        wait_until(lambda: busy(m2.path("b", "write")), 10,
                   "flock's lock on b")
        assert busy(m2.path("a", "write"))
    finally:
        # sleep holds flock's descriptor too: the whole group goes.
        os.killpg(flocker.pid, signal.SIGKILL)
        flocker.wait()


def test_opposite_orders_and_single_lockers_never_deadlock_or_overlap(m1, m2):
    """Multi-lockers listing a and b in both orders and single lockers of
    each, on two mounts, loop on their locks; each critical section checks
    the exclusion of every resource it covers (sections.py).  Lockers one
    after the other in the list's order would deadlock here."""
    rounds = 6 if SANITIZED else 15
    sections = {r: tempfile.mkdtemp(prefix=f"zklockfs-ml-{r}-")
                for r in ("a", "b")}
    log = tempfile.mktemp(prefix="zklockfs-ml-log-")
    plan = [(m1, ".all/a,b/write", "ab"), (m2, ".all/b,a/write", "ab"),
            (m2, ".all/a,b/write", "ab"), (m1, ".all/b,a/write", "ab"),
            (m1, "a/write", "a"), (m2, "b/write", "b")]
    procs = [subprocess.Popen(
        [sys.executable, WORKER, mount.path(*path.split("/")), log,
         str(rounds)] + [sections[r] for r in covers],
        stdout=subprocess.PIPE, text=True) for mount, path, covers in plan]
    finish_all(procs, 90, "the lockers (a deadlock?)")
    with open(log) as f:
        entries = f.read()
    assert "OVERLAP" not in entries, entries
    assert entries.count("ENTER") == rounds * 10, entries.count("ENTER")
    assert all(p.returncode == 0 for p in procs)


def getlk(path, hold_read=False):
    """F_GETLK of a write lock on path, from a process of its own (which
    first takes a read lock through it if hold_read): the l_type."""
    script = ("import fcntl, os, struct, sys\n"
              "fd = os.open(sys.argv[1], os.O_RDWR)\n"
              + ("fcntl.lockf(fd, fcntl.LOCK_SH)\n" if hold_read else "") +
              "arg = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)\n"
              "res = fcntl.fcntl(fd, fcntl.F_GETLK, arg)\n"
              "print(struct.unpack('hhqqi', res)[0])\n")
    out = subprocess.run([sys.executable, "-c", script, path],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_getlk_on_the_lists_lock_file_names_the_first_blocker(zk, base, m1,
                                                             m2):
    holder = Locker(m2.path("b", "write"))
    holder.granted()
    assert getlk(all_path(m1, "a,b", "lock")) == fcntl.F_WRLCK, \
        "b's writer blocks the list"
    holder.close()
    wait_until(lambda: not busy(m2.path("b", "write")), 10, "b to be free")
    released(zk, base)  # busy()'s own try too
    assert getlk(all_path(m1, "a,b", "lock")) == fcntl.F_UNLCK


def test_getlk_never_names_the_callers_own_multi_lock(m1):
    """A process holding a read lock of the list asks whether a write lock
    would be blocked: its own nodes must not count (POSIX)."""
    assert getlk(all_path(m1, "a,b", "lock"), hold_read=True) == \
        fcntl.F_UNLCK, "its own read lock blocked it"


def test_kill_9_of_a_waiter_leaves_nothing(zk, base, m1, m2):
    holder = Locker(m2.path("b", "write"))
    holder.granted()
    waiter = Locker(all_path(m1, "a,b"))
    wait_until(lambda: len(lock_nodes(zk, base + "/a")) == 1, 10,
               "the waiter's node on a")
    waiter.kill()
    wait_until(lambda: lock_nodes(zk, base + "/a") == [], 10,
               "the killed waiter's node on a to go")
    assert len(lock_nodes(zk, base + "/b")) == 1, "only the holder's"
    holder.close()


def test_a_member_node_deleted_by_another_client_loses_the_whole_lock_once(
        zk, base, mounts):
    m = mounts.new("-o", "on_lost=signal:USR1")
    holder = Locker(all_path(m, "a,b"), "rw", extra=["--trap", "SIGUSR1"])
    holder.granted()
    zk.delete(lock_nodes(zk, base + "/b")[0])
    assert holder.next_line(5, "the on_lost signal") == "signal SIGUSR1"
    assert holder.command("read") == "err EIO"
    # One report for the one lock: no second signal.
    assert holder.silent_for(0.3), holder.next_line(0, "a second report")
    holder.close()
