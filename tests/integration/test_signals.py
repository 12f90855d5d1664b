"""Interrupted waits (SPEC section 3): a waiter that is killed, timed out or
interrupted never holds, leaves no znode, and the next waiter is granted at
once; signals ignored by default (SIGCHLD) never cancel a wait."""
import signal
import subprocess
import time

from harness import Locker, lock_nodes, wait_until


def assert_waiter_gone_and_next_granted(zk, base, holder, mount, what):
    nxt = Locker(mount.path("r", "write"))
    time.sleep(0.2)
    assert nxt.poll_result() is None
    # Only the holder's and the next waiter's nodes remain.
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10,
               f"the {what} waiter's znode to be deleted")
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
    time.sleep(1.0)  # let every background job end and signal bash
    assert sh.poll() is None, "bash's wait ended while the lock was held"
    assert lock_nodes(zk, base) == first, "the wait lost its place in the queue"
    holder.close()
    out, _ = sh.communicate(timeout=10)
    assert sh.returncode == 0 and out.strip() == "held", (sh.returncode, out)
