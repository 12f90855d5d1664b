"""Exclusion against a hostile world: nodes another client made by hand
never let two mounts hold one lock, and a holder whose node someone else
deletes is told at once (EIO, on_lost, the log, .status)."""
import errno
import os
import platform
import subprocess
import sys
import time

import pytest

from harness import HERE, Locker, lock_nodes, status, wait_until
from test_core import still_waiting

pytestmark = pytest.mark.concurrency

TRY_WRITE = os.O_WRONLY | os.O_NONBLOCK

# Nodes of the ZooKeeper recipe's grammar whose numbers lie more than 2^31
# apart: under the old order (wrapped difference) no order at all, and
# two mounts held one lock in 27 of 160 trials.
HOSTILE = ["h281470-write-0766332488", "h802464-write--1600172925",
           "h849723-write-0936031609", "h137087-write-0384086879"]


def try_open(path):
    """The descriptor of a try-lock of path, or None if it is busy."""
    try:
        return os.open(path, TRY_WRITE)
    except OSError as e:
        assert e.errno == errno.EAGAIN, f"{path}: {os.strerror(e.errno)}"
        return None


def test_hand_made_numbers_never_let_two_mounts_hold(zk, base, m1, m2):
    """The reported probe: hand-made persistent nodes under the resource,
    then 160 trials in which each mount in turn takes the lock (a try, as
    the probe did) while the other tries too.  Never both."""
    res = base + "/r"
    zk.ensure_path(res)
    for name in HOSTILE:
        zk.create(f"{res}/{name}", b"")
    both, held = 0, 0
    for trial in range(160):
        first, second = (m1, m2) if trial % 2 == 0 else (m2, m1)
        a = try_open(first.path("r", "write"))
        b = try_open(second.path("r", "write"))
        both += a is not None and b is not None
        held += a is not None or b is not None
        for fd in (a, b):
            if fd is not None:
                os.close(fd)
    assert both == 0, f"two mounts held one lock in {both} of 160 trials"
    # The hand-made nodes stand in the way of everyone: no holder.
    assert held == 0, f"granted beside hand-made write nodes {held} times"
    # holders shows them as what they are: nobody's, to be removed.
    lines = open(m2.path("r", "holders")).read().splitlines()
    assert sorted(line.split()[8] for line in lines) == sorted(HOSTILE), lines
    assert all(line.startswith("orphan write ") for line in lines), lines
    for name in HOSTILE:
        zk.delete(f"{res}/{name}")
    wait_until(lambda: not lock_nodes(zk, res), 10, "the tries' nodes to go")
    # Without them, the same probe holds one at a time.
    for trial in range(40):
        first, second = (m1, m2) if trial % 2 == 0 else (m2, m1)
        a = try_open(first.path("r", "write"))
        assert a is not None, "a free lock was refused"
        assert try_open(second.path("r", "write")) is None, "both held"
        os.close(a)
        # The close's release reaches the daemon after close() returns.
        wait_until(lambda: not lock_nodes(zk, res), 10, "the release")


def test_a_held_node_deleted_by_another_client_is_a_lost_lock(zk, base,
                                                               mounts):
    m1 = mounts.new("-o", "on_lost=signal:USR1")
    m2 = mounts.new()
    holder = Locker(m1.path("r", "write"), "rw", extra=["--trap", "SIGUSR1"])
    holder.granted()
    waiter = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 2, 10,
               "the other mount's waiter to queue")
    assert still_waiting(waiter)
    node = holder.command("read").split("|")[1].split(" ", 1)[1]
    assert node in lock_nodes(zk, base + "/r"), node

    zk.delete(node)  # an operator's zkCli, a hostile client
    deleted = time.monotonic()
    assert holder.next_line(5, "on_lost signal") == "signal SIGUSR1"
    told = time.monotonic() - deleted
    assert told < 1.0, f"the holder was told {told:.2f} s after the delete"
    assert holder.command("read") == "err EIO"
    assert holder.command("fsync") == "err EIO"
    waiter.granted()  # the next waiter may hold now, and does
    log = m1.log()
    assert f"lost lock {node}" in log and "deleted by another client" in log, log
    st = status(m1)
    assert (st["losses"], st["held"]) == ("1", "0"), st
    holder.close()
    waiter.close()
    # Nothing of the lost lock is left, and the lock works again on m1.
    wait_until(lambda: not lock_nodes(zk, base + "/r"), 10, "no node left")
    again = Locker(m1.path("r", "write"))
    again.granted()
    again.close()


def test_a_note_does_not_count_as_a_loss(zk, base, m1, m2):
    """The held node's own data changes (a note): still held, watched."""
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    assert holder.command("note first") == "ok"
    assert holder.command("note second") == "ok"
    assert holder.command("fsync") == "ok"
    assert status(m1)["losses"] == "0"
    node = lock_nodes(zk, base + "/r")[0]
    zk.delete(node)  # still watched after two notes
    wait_until(lambda: holder.command("fsync") == "err EIO", 5,
               "the holder to see the loss")
    holder.close()


@pytest.fixture(scope="module")
def int80_open(tmp_path_factory):
    """int80_open.c, built here: an open as a 32-bit program makes it."""
    if platform.machine() != "x86_64":
        pytest.skip("the i386 system call gate is x86's")
    exe = tmp_path_factory.mktemp("int80") / "int80_open"
    subprocess.run(["gcc", "-O2", "-no-pie", "-o", str(exe),
                    os.path.join(HERE, "int80_open.c")], check=True)
    return str(exe)


def test_a_32_bit_programs_read_only_open_waits_for_the_lock(zk, base, m1,
                                                               m2, int80_open):
    """Flags of exactly O_RDONLY (no O_LARGEFILE) are also what the
    kernel's own ioctl open has; this one is a program's, and must take
    the lock like any other open."""
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    opener = subprocess.Popen([int80_open, m1.path("r", "write")],
                              stdout=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 2, 10,
                   "the 32-bit open to queue")
        time.sleep(0.3)  # a wrong grant would come now
        assert opener.poll() is None, "opened while another host held it"
        holder.close()
        out, _ = opener.communicate(timeout=15)
        assert opener.returncode == 0 and int(out) >= 0, out
    finally:
        if opener.poll() is None:
            opener.kill()
            opener.wait()
    wait_until(lambda: not lock_nodes(zk, base + "/r"), 10,
               "its lock to go with its exit")


def test_kazoo_dialect_holders_shows_every_child_kazoo_counts(zk, base,
                                                              mounts):
    """kazoo's Semaphore counts every child of its path as a lease: a stray
    one (a directory another layout left) takes a lease from everyone, and
    holders says so."""
    m = mounts.new("-o", "dialect=kazoo")
    zk.create(base + "/jobs/locks", b"", makepath=True)  # persistent
    lines = open(m.path("jobs", "holders")).read().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].split()[:2] == ["orphan", "lease"], lines
    assert lines[0].split()[8] == "locks", lines
    assert lines[1] == "limit 1 held 1 free 0", lines
    try:
        os.close(os.open(m.path("jobs", "lease"), TRY_WRITE))
        raise AssertionError("a lease beside the one kazoo counts")
    except BlockingIOError:
        pass
    zk.delete(base + "/jobs/locks")


THREAD_HOLDER = r"""
import os, signal, sys, threading
got = threading.Event()
signal.signal(signal.SIGUSR1, lambda *_: got.set())
fds = []
t = threading.Thread(target=lambda: fds.append(os.open(sys.argv[1], os.O_RDWR)))
t.start()
t.join()  # the thread that took the lock has ended
print("held", flush=True)
print("signalled" if got.wait(20) else "not signalled", flush=True)
"""


def test_a_lock_taken_by_a_thread_that_ended_belongs_to_its_process(
        zk, base, mounts):
    """FUSE names the asking thread: the lock's pid is its process's, so
    that on_lost reaches it after the thread is gone, and F_GETLK and
    holders name the process."""
    m = mounts.new("-o", "on_lost=signal:USR1")
    p = subprocess.Popen([sys.executable, "-c", THREAD_HOLDER,
                          m.path("r", "write")], stdout=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "held"
        [line] = open(m.path("r", "holders")).read().splitlines()
        assert line.split()[4] == str(p.pid), line
        [node] = lock_nodes(zk, base + "/r")
        zk.delete(node)
        assert p.stdout.readline().strip() == "signalled"
    finally:
        p.kill()
        p.wait()
