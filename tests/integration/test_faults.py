"""Lost locks and faults (doc/failures.md): a session that expires under a
holder, a ZooKeeper restart, a daemon killed with -9."""
import os
import signal

import pytest

from harness import (Driver, Locker, exec_holder, expect_impostor_spared,
                     expect_killed_by, lock_nodes, pid_of_a_gone_holder,
                     status, wait_until)
from test_core import still_waiting

pytestmark = pytest.mark.concurrency


def session_of(locker):
    fields = dict(line.split(" ", 1) for line in locker.command("read").split("|")[1:])
    return fields["session"]


def test_expired_session_loses_holder_and_requeues_waiter(zk, base, mounts, paused):
    m1 = mounts.new("-o", "on_lost=signal:USR1")
    m2 = mounts.new()
    holder = Locker(m1.path("a", "write"), "rw", extra=["--trap", "SIGUSR1"])
    holder.granted()
    other = Locker(m2.path("b", "write"))
    other.granted()
    waiter = Locker(m1.path("b", "write"), "rw")  # queued on m1's session
    wait_until(lambda: len(lock_nodes(zk, base + "/b")) == 2, 10, "m1's waiter to queue")
    rival = Locker(m2.path("a", "write"))
    assert still_waiting(rival)

    old_session = session_of(holder)
    paused.append(m1)
    os.kill(m1.proc.pid, signal.SIGSTOP)  # no heartbeats: the session expires
    rival.granted(timeout=20)  # ZooKeeper freed the lock
    os.kill(m1.proc.pid, signal.SIGCONT)

    # The holder is told, and its descriptor answers EIO from now on.
    assert holder.next_line(20, "on_lost signal to the holder") == "signal SIGUSR1"
    assert holder.command("read") == "err EIO"
    assert holder.command("note x") == "err EIO"
    assert holder.command("fsync") == "err EIO"
    assert "lost lock" in m1.log() and f"pid {holder.proc.pid}" in m1.log()
    # .status counts the loss and the expiry, and is on a new session.
    wait_until(lambda: status(m1)["state"] == "connected", 20, "m1's new session")
    st = status(m1)
    assert (st["losses"], st["expirations"]) == ("1", "1"), st
    assert st["session"] != old_session, st
    # The waiter noticed nothing: it queued again on the new session.
    assert waiter.poll_result() is None
    other.close()
    waiter.granted()
    assert "session" in waiter.command("read")
    assert waiter.command("fsync") == "ok"
    # A lost lock is never silently taken back: rival still holds alone.
    assert len(lock_nodes(zk, base + "/a")) == 1, lock_nodes(zk, base + "/a")
    holder.close()
    rival.close()
    waiter.close()


def test_on_lost_signals_a_holder_that_exec_d(zk, base, mounts):
    """The shell that took the lock and exec'd is still its holder: the
    same process, under another command name."""
    m = mounts.new("-o", "on_lost=signal:USR1")
    with exec_holder(m) as holder:
        node, = lock_nodes(zk, base + "/r")
        zk.delete(node)
        expect_killed_by(holder, signal.SIGUSR1, m, "on_lost")


def test_on_lost_spares_a_process_that_took_a_gone_holders_pid(zk, base,
                                                                mounts):
    m = mounts.new("-o", "on_lost=signal:USR1")
    with pid_of_a_gone_holder(m) as impostor:
        node, = lock_nodes(zk, base + "/r")
        zk.delete(node)
        expect_impostor_spared(m, impostor)


def test_zookeeper_restart_within_session_timeout_keeps_locks(zookeeper, zk, base, mounts):
    m1 = mounts.new("-o", "session_timeout=20")
    m2 = mounts.new("-o", "session_timeout=20")
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10, "the waiter to queue")
    before = sorted(lock_nodes(zk, base))
    token = holder.command("read").split("|")[0]

    zookeeper.restart()

    assert holder.command("read").split("|")[0] == token, \
        "the holder lost its lock\n" + m1.log()
    assert still_waiting(waiter), "the waiter was granted while the holder held"
    wait_until(lambda: zk.connected, 20, "the test's client to reconnect")
    assert sorted(lock_nodes(zk, base)) == before, "nodes were lost or duplicated"
    holder.close()
    waiter.granted()
    assert len(lock_nodes(zk, base)) == 1
    waiter.close()


def test_daemon_killed_frees_locks_after_session_timeout(zk, base, mounts):
    m1 = mounts.new()
    m2 = mounts.new()
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m2.path("r", "write"))
    assert still_waiting(waiter)
    m1.kill()
    waiter.granted(timeout=20)  # after the dead session's timeout
    assert holder.command("read") == "err ENOTCONN"
    waiter.close()
    holder.close()


def test_unmount_fails_parked_requests_and_leaves_nothing(zk, base, mounts):
    m1 = mounts.new()
    m2 = mounts.new()
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    opener = Locker(m2.path("r", "write"))
    flocker = Driver()
    flocker.ok(f"open f {m2.path('r', 'lock')}")
    flocker.send("flock f ex")
    fcntler = Driver()
    fcntler.ok(f"open f {m2.path('r', 'lock')}")
    fcntler.send("lockf f wr")
    wait_until(lambda: len(lock_nodes(zk, base)) == 4, 10, "three waiters to queue")
    problem = m2.exit_problem(m2.stop())
    assert not problem, problem
    assert opener.wait_result() == "err EIO"
    assert flocker.answer() == "err EIO"
    assert fcntler.answer() == "err EIO"
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 10,
               "the unmounted daemon's nodes to go")
    holder.close()
