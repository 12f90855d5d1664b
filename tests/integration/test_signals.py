"""Interrupted waits (doc/locks.md, "Semantics"): a waiter that is killed, timed out or
interrupted never holds, leaves no znode, and the next waiter is granted at
once; signals ignored by default (SIGCHLD) never cancel a wait."""
import os
import select
import signal
import subprocess
import sys
import time

import pytest

from harness import Locker, lock_nodes, wait_until

pytestmark = pytest.mark.concurrency


def assert_waiter_gone_and_next_granted(zk, base, holder, mount, what):
    nxt = Locker(mount.path("r", "write"))
    # Only the holder's and the next waiter's nodes remain.
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10,
               f"the {what} waiter's znode to be deleted and the next "
               "waiter to queue")
    assert nxt.poll_result() is None, "granted while the holder holds"
    holder.close()
    nxt.granted(timeout=5)
    nxt.close()


def test_waiter_killed_with_sigkill(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    waiter = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10, "the waiter to queue")
    waiter.kill(signal.SIGKILL)
    assert waiter.poll_result() in (None, ""), "a killed waiter reported a grant"
    assert_waiter_gone_and_next_granted(zk, base, holder, m2, "killed")


def test_waiter_ended_by_timeout_1(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    start = time.monotonic()
    res = subprocess.run(["timeout", "1", "sh", "-c",
                          f"exec 9>{m2.path('r', 'write')}; echo held"],
                         capture_output=True, text=True, timeout=20)
    elapsed = time.monotonic() - start
    assert res.returncode == 124, (res.returncode, res.stdout, res.stderr)
    assert "held" not in res.stdout
    assert elapsed < 5, f"timeout 1 took {elapsed:.1f}s to end the wait"
    assert_waiter_gone_and_next_granted(zk, base, holder, m2, "timed-out")


def test_waiter_interrupted_by_alarm_gets_eintr(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    waiter = Locker(m2.path("r", "write"), "w", ["--alarm", "1"])
    assert waiter.wait_result(10) == "err EINTR"
    waiter.close()
    assert_waiter_gone_and_next_granted(zk, base, holder, m2, "alarmed")


def test_sigchld_does_not_cancel_or_requeue_a_wait(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    # bash has a SIGCHLD handler; background jobs end while exec waits.
    script = (f"for i in 1 2 3 4 5; do (sleep 0.$i) & done; "
              f"exec 9>{m2.path('r', 'write')} || exit 3; echo held")
    sh = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE,
                          text=True)
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10, "bash to queue")
    first = lock_nodes(zk, base)
    wait_until(lambda: children_all_exited(sh.pid, 5), 10,
               "every background job to end (and signal bash)")
    assert sh.poll() is None, "bash's wait ended while the lock was held"
    assert lock_nodes(zk, base) == first, "the wait lost its place in the queue"
    holder.close()
    out, _ = sh.communicate(timeout=10)
    assert sh.returncode == 0 and out.strip() == "held", (sh.returncode, out)


def children_all_exited(pid, n):
    """pid has n children and all have exited (zombies not yet reaped: a
    shell blocked in open() reaps them only when it returns)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
    except FileNotFoundError:
        return False
    if len(kids) < n:
        return False
    for kid in kids:
        try:
            with open(f"/proc/{kid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    return False
        except FileNotFoundError:
            pass
    return True


def test_a_later_sigterm_ends_a_wait_that_ignored_sigchld(zk, base, m1, m2):
    """The kernel sends one FUSE interrupt per request: when the first
    signal (bash's SIGCHLD) does not cancel the wait, a later SIGTERM must
    still end it, in about the time timeout(1) gives."""
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    start = time.monotonic()
    res = subprocess.run(
        ["timeout", "-s", "TERM", "3", "bash", "-c",
         'sleep 0.3 & exec 9>"$1"; echo held', "bash",
         m2.path("r", "write")],
        capture_output=True, text=True, timeout=30)
    took = time.monotonic() - start
    assert res.returncode == 124, (res.returncode, res.stdout, res.stderr)
    assert "held" not in res.stdout, "the waiter held the lock"
    assert 2.5 < took < 4.5, f"SIGTERM after SIGCHLD ended the wait in " \
        f"{took:.1f} s, expected about 3 s"
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 10,
               "the terminated waiter's node to be deleted")
    holder.close()


# A flock(2) waiter that catches SIGCHLD (as a shell does) and whose child
# exits while it waits, then times out with SIGALRM as flock -w does.
FLOCK_AFTER_SIGCHLD = """
import fcntl, os, signal, subprocess, sys
signal.signal(signal.SIGCHLD, lambda *a: None)
def timed_out(*a):
    print("timed out", flush=True)
    os._exit(1)
signal.signal(signal.SIGALRM, timed_out)
fd = os.open(sys.argv[1], os.O_RDWR)
subprocess.Popen(["sleep", "0.3"])
signal.alarm(2)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
"""


def test_flock_alarm_ends_a_wait_that_ignored_sigchld(zk, base, m1, m2):
    """The same as above for flock(2) on `lock`, timed out by SIGALRM
    (flock -w's way) after a child's SIGCHLD did not cancel the wait."""
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    start = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", FLOCK_AFTER_SIGCHLD, m2.path("r", "lock")],
        capture_output=True, text=True, timeout=30)
    took = time.monotonic() - start
    assert res.stdout.strip() == "timed out", (res.stdout, res.stderr)
    assert 1.5 < took < 3.5, f"SIGALRM after SIGCHLD ended the wait in " \
        f"{took:.1f} s, expected about 2 s"
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 10,
               "the timed-out waiter's node to be deleted")
    holder.close()


def test_flock_w_times_out_after_its_wait_was_stopped_and_continued(
        zk, base, m1, m2):
    """Ctrl-Z and fg on `flock -w` while it waits: the stop is a signal
    that does not cancel, and flock's own SIGALRM later must still end
    the wait on time."""
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    start = time.monotonic()
    p = subprocess.Popen(["flock", "-w", "2", m2.path("r", "lock"), "true"])
    try:
        wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10,
                   "flock -w to queue")
        os.kill(p.pid, signal.SIGSTOP)
        os.kill(p.pid, signal.SIGCONT)
        status = p.wait(15)
    finally:
        if p.poll() is None:
            p.kill()
    took = time.monotonic() - start
    assert status == 1, f"flock -w 2 exited {status}"
    assert 1.5 < took < 3.5, f"flock -w 2 took {took:.1f} s after a stop"
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 10,
               "the timed-out waiter's node to be deleted")
    holder.close()


# A waiter interrupted every 10 ms by a timer it handles (setitimer with a
# SIGALRM handler; Python asks again after each EINTR, as SA_RESTART and
# most runtimes do).
TIMER_WAITER = r'''
import fcntl, os, signal, sys
signal.signal(signal.SIGALRM, lambda *args: None)
how, path = sys.argv[1:]
if how != "open":
    fd = os.open(path, os.O_RDWR)  # `lock`: takes no lock
signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
if how == "open":
    fd = os.open(path, os.O_WRONLY)
elif how == "flock":
    fcntl.flock(fd, fcntl.LOCK_EX)
else:
    fcntl.lockf(fd, fcntl.LOCK_EX)
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print("held", flush=True)
sys.stdin.readline()
'''


@pytest.mark.parametrize("how", ["open", "flock", "fcntl"])
def test_a_waiter_under_a_10ms_timer_keeps_its_place(zk, base, m1, m2, how):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    path = m2.path("r", "write" if how == "open" else "lock")
    timed = subprocess.Popen([sys.executable, "-c", TIMER_WAITER, how, path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    later = None
    try:
        wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10,
                   "the timed waiter to queue")
        before = lock_nodes(zk, base)
        time.sleep(0.5)  # 50 interrupts: its node must not change
        assert lock_nodes(zk, base) == before, \
            "the interrupted waiter queued anew (at the back)"
        later = Locker(m2.path("r", "write"))
        wait_until(lambda: len(lock_nodes(zk, base)) == 3, 10,
                   "a second waiter to queue behind it")
        holder.close()
        ready, _, _ = select.select([timed.stdout], [], [], 10)
        line = timed.stdout.readline() if ready else "(nothing in 10 s)"
        assert line.strip() == "held", \
            f"the first waiter, under its timer, did not get the lock: {line!r}"
        assert later.poll_result() is None, "the later waiter got it first"
        timed.stdin.write("\n")
        timed.stdin.flush()
        assert timed.wait(10) == 0
        later.granted(timeout=10)
        later.close()
    finally:
        if timed.poll() is None:
            timed.kill()
            timed.wait()
    wait_until(lambda: not lock_nodes(zk, base), 10, "every node gone")
