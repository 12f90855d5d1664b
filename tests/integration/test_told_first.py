"""Nobody holds beside another, on real mounts (two and three sessions):
a request whose own node another client deleted is never granted, even
when the lock is handed on at that very moment; a multi-lock that loses
one member lets go of every member at once."""
import os
import subprocess
import sys
import time

import pytest
from kazoo.security import OPEN_ACL_UNSAFE, make_acl

from harness import (Child, Driver, Lines, Locker, lock_nodes, status,
                     wait_until)
from test_lease import write_limit
from test_maxhold import GRACE_MIN, set_maxhold
from test_exclusion import try_open
from test_revoke import revoke

pytestmark = pytest.mark.concurrency

ROUNDS = 4  # each round a fresh race between the delete and the handoff


def node_of(zk, resdir, locker):
    """The lock node under resdir whose identity names locker's pid."""
    tag = f"pid {locker.proc.pid}\n".encode()

    def find():
        for path in lock_nodes(zk, resdir):
            data = zk.get(path)[0] or b""
            if tag in data:
                return path
        return None
    return wait_until(find, 15, f"the node of pid {locker.proc.pid} "
                      f"under {resdir}")


# How the deleted waiter asks: its file, open flags and locker options.
WAITERS = {
    "write": ("r/write", "w", ()),
    "read": ("r/read", "r", ()),
    "all": (".all/r,s/write", "w", ()),
    "flock": ("r/lock", "r", ("--flock",)),
    "fcntl": ("r/lock", "rw", ("--fcntl",)),
    "lease": ("r/lease", "rw", ()),
}


@pytest.mark.parametrize("kind", sorted(WAITERS))
@pytest.mark.parametrize("next_on", ["same", "other"])
def test_a_deleted_waiter_is_never_granted_and_the_next_is(
        zk, base, mounts, kind, next_on):
    """The holder on one mount, the waiter whose node goes on another,
    the next waiter on the waiter's mount or a third one.  The delete and
    the release race: the deleted waiter must fail (EIO), never report
    a grant, and the next waiter must be granted."""
    m_hold, m_wait = mounts.new(), mounts.new()
    m_next = m_wait if next_on == "same" else mounts.new()
    path, flags, extra = WAITERS[kind]
    # Leases queue among leases (one of a limit of one, here).
    other = "lease" if kind == "lease" else "write"
    for _ in range(ROUNDS):
        holder = Locker(m_hold.path("r", other), "rw")
        holder.granted()
        victim = Locker(m_wait.path(path), flags, extra)
        node = node_of(zk, f"{base}/r", victim)
        nxt = Locker(m_next.path("r", other), "rw")
        wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 3, 15,
                   "the next waiter queued")
        zk.delete(node)  # another client, a moment before the handoff
        holder.close()
        res = victim.wait_result(15, "the deleted waiter's answer")
        assert res == "err EIO", \
            f"a waiter whose node was deleted answered {res!r}"
        nxt.granted()
        nxt.close()
        victim.close()


def test_a_waiter_is_told_at_once_when_its_node_goes(zk, base, m1, m2):
    """No handoff needed: the deletion alone fails the waiter."""
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    victim = Locker(m2.path("r", "write"), "w")
    zk.delete(node_of(zk, f"{base}/r", victim))
    assert victim.wait_result(15, "the deleted waiter's answer") == \
        "err EIO"
    assert holds(holder), "the holder is untouched"
    holder.close()


def holds(locker):
    """Its descriptor reads a fencing token: it still holds."""
    return locker.command("read").split("|")[0].isdigit()


def test_a_multilock_that_loses_a_member_lets_go_of_every_member(
        zk, base, m1, m2):
    holder = Locker(m1.path(".all", "r,s", "write"), "rw")
    holder.granted()
    waiter = Locker(m2.path("s", "write"), "w")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/s")) == 2, 15,
               "the waiter on s queued")
    zk.delete(node_of(zk, f"{base}/r", holder))  # one member broken
    # The holder has not closed: its lock on s must be gone all the same.
    waiter.granted()
    assert holder.command("read").startswith("err EIO"), \
        "the multi-lock reads as lost"
    waiter.close()
    holder.close()


NO_DELETE = [make_acl("world", "anyone", read=True, write=True, create=True,
                      admin=True, delete=False)]


@pytest.mark.parametrize("how", ["flock_un", "close"])
def test_a_release_zookeeper_refused_is_retried_until_it_lands(
        zk, base, m1, m2, how):
    """Another client takes DELETE off the resource's ACL while a lock is
    held: the unlock returns, the refusal is logged and counted, and the
    node goes within seconds of the ACL's return; the other host then
    takes the lock."""
    d = Driver()
    d.ok(f"open f {m1.path('r', 'lock')} rw")
    d.ok("flock f ex")
    (node,) = lock_nodes(zk, f"{base}/r")
    zk.set_acls(f"{base}/r", NO_DELETE)
    try:
        if how == "flock_un":
            d.ok("flock f un", timeout=5)  # returns, refused or not
        else:
            d.ok("close f")
        wait_until(lambda: int(status(m1)["delete_retries"]) >= 2, 15,
                   "the refused delete to be tried again")
        assert zk.exists(node), "ZooKeeper refused it: still there"
        assert "cannot delete lock node " + node in m1.log()
        assert try_open(m2.path("r", "write")) is None, \
            "other hosts see the lock held until the delete lands"
    finally:
        zk.set_acls(f"{base}/r", OPEN_ACL_UNSAFE)
    wait_until(lambda: not zk.exists(node), 15,
               "the delete to land once the ACL allows it")
    fd = wait_until(lambda: try_open(m2.path("r", "write")), 15,
                    "the other host to take the lock")
    os.close(fd)
    d.exit()


HOLDREADER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "holdreader.py")


class HoldReader(Child):
    """A holder that reads its descriptor in a tight loop (holdreader.py)
    and reports when the last successful read returned."""

    def __init__(self, path):
        self.proc = subprocess.Popen(
            [sys.executable, HOLDREADER, path], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True)
        self.lines = Lines(self.proc.stdout)
        Child.alive.add(self)

    def line(self, timeout, what):
        return self.lines.next(timeout, what) or ""


BREAKS = ["maxhold", "revoke_same", "revoke_other"]


@pytest.mark.parametrize("how", BREAKS)
def test_a_break_tells_the_holder_before_anyone_else_holds(
        zk, base, m1, m2, how):
    """The holder reads its descriptor without pause; the next waiter is
    on the other mount.  Whoever breaks the lock, no read() the holder
    made after the waiter's open() returned succeeded (one
    CLOCK_MONOTONIC): it was told before anyone else could hold."""
    trials = 6 if how == "maxhold" else 10
    if how == "maxhold":
        set_maxhold(m2, 1)  # broken 1 s + the grace after each grant
    for _ in range(trials):
        holder = HoldReader(m1.path("r", "write"))
        assert holder.line(15, "the holder's grant") == "ok"
        waiter = Locker(m2.path("r", "write"), "w", ["--stamp"])
        wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
                   "the waiter queued")
        if how == "revoke_same":
            revoke(m1, "break")
        elif how == "revoke_other":
            revoke(m2, "break")
        lost = holder.line(GRACE_MIN + 15, "the holder's loss").split()
        got = waiter.granted()
        assert lost[:2] == ["lost", "EIO"], lost
        last_read, granted_at = float(lost[2]), float(got.split("@")[1])
        assert int(lost[3]) > 0, "the holder read at least once"
        assert last_read < granted_at, (
            f"the waiter's open returned at {granted_at:.6f}, and a "
            f"read() the holder made at {last_read:.6f} still succeeded")
        waiter.close()
        holder.kill()
    if how == "maxhold":
        set_maxhold(m2, 0)


def run_flock_w(how, path):
    """flock -w 1 on path, as a file flock(1) opens itself or as a shell's
    descriptor; returns (its exit status, the Popen of what still holds
    the description open, or None)."""
    if how == "file":
        return subprocess.run(["flock", "-w", "1", path, "true"],
                              timeout=30).returncode, None
    shell = subprocess.Popen(
        ["bash", "-c", 'exec 9<>"$1" || exit 9; flock -w 1 9; echo "rc $?"; '
         "read -r _ || true", "_", path], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True)
    line = shell.stdout.readline().split()
    return int(line[1]), shell


@pytest.mark.parametrize("how", ["file", "shell_fd"])
def test_a_timed_out_flock_leaves_nothing_once_it_returns(
        zk, base, m1, m2, how):
    """flock -w's SIGALRM is caught and does not restart the call: its
    node must be gone when flock(1) returns (not a second later), so that
    another host's flock -n right after the holder's release succeeds."""
    holder = Driver()
    holder.ok(f"open f {m2.path('r', 'lock')} rw")
    holder.ok("flock f ex")
    held = lock_nodes(zk, base)
    for _ in range(3):
        rc, shell = run_flock_w(how, m1.path("r", "lock"))
        assert rc == 1, f"flock -w 1 under contention exited {rc}"
        assert lock_nodes(zk, base) == held, \
            "a node of the timed-out flock is left after it returned"
        if shell:
            shell.stdin.close()
            assert shell.wait(10) == 0
    holder.ok("flock f un")
    assert subprocess.run(["flock", "-n", m1.path("r", "lock"), "true"],
                          timeout=30).returncode == 0, \
        "another host's try right after the release failed"
    holder.exit()


def test_a_caught_signal_that_does_not_restart_gives_the_place_up_at_once(
        zk, base, m1, m2):
    """A handler that ends the wait (Python's, raising): the open fails
    EINTR, so no close of it ever comes, and the program goes on (here it
    exits).  The place goes as soon as the thread is seen elsewhere, well
    before the second a restart is waited for."""
    holder = Locker(m1.path("r", "write"), "w")
    holder.granted()
    waiter = Locker(m2.path("r", "write"), "w", ["--alarm", "1"])
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
               "the waiter queued")
    assert waiter.wait_result(15, "the alarm's EINTR") == "err EINTR"
    t0 = time.monotonic()
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 1, 5,
               "the interrupted waiter's node to go")
    took = time.monotonic() - t0
    assert took < 0.5, f"its node stayed {took:.2f} s after its EINTR"
    holder.close()


@pytest.mark.parametrize("path", ["r/write", ".all/r,s/write"])
def test_a_note_never_hides_a_mark_from_other_hosts(zk, base, m1, m2, path):
    """Another host asks the holder to let go (its node's data becomes the
    mark) just before the holder writes a note: the note fails EAGAIN
    (its data changed since the holder's mount read it) or keeps the mark
    before it; never does the mark vanish.  A second note right after
    the first succeeds too."""
    for _ in range(4):
        holder = Locker(m1.path(path), "rw")
        holder.granted()
        (node,) = lock_nodes(zk, f"{base}/r")
        zk.set(node, b"__REVOKE__")
        res = holder.command("note racing the mark")
        assert res in ("ok", "err EAGAIN"), res
        wait_until(lambda: holder.command("read").split("|")[-1]
                   .startswith("revoke requested"), 15, "the holder told")
        assert holder.command("note after the mark") == "ok"
        assert holder.command("note again") == "ok"
        data = zk.get(node)[0]
        assert data.startswith(b"__REVOKE__\n"), data
        assert b"note again" in data, data
        holder.close()


def test_a_lease_held_past_a_lowered_limit_shows_held_and_is_asked(
        zk, base, m1, m2):
    """Lowering the limit takes nothing away: holders still shows both
    leases held, and revoke asks both."""
    write_limit(m1, "jobs", "2")
    a = Locker(m1.path("jobs", "lease"), "rw")
    b = Locker(m2.path("jobs", "lease"), "rw")
    a.granted()
    b.granted()
    write_limit(m2, "jobs", "1")
    with open(m2.path("jobs", "holders")) as f:
        lines = f.read().splitlines()
    assert [line.split(" ")[0] for line in lines[:-1]] == ["held", "held"], \
        lines
    revoke(m2, "ask", "jobs")
    for h in (a, b):
        wait_until(lambda: h.command("read").split("|")[-1]
                   .startswith("revoke requested"), 15,
                   "each lease's holder asked")
        h.close()
