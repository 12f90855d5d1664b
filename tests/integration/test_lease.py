"""Semaphores: MOUNT/<res>/limit keeps N in ZooKeeper for every host, and
MOUNT/<res>/lease takes one of N leases."""
import errno
import fcntl
import os
import signal
import struct
import subprocess

import pytest

from harness import Locker, Mounts, lock_nodes, released, wait_until
from tcpproxy import TcpProxy
from test_core import still_waiting
from test_names_and_errors import expect_errno

pytestmark = pytest.mark.concurrency


def read_limit(mount, resource):
    with open(mount.path(resource, "limit")) as f:
        return f.read()


def write_limit(mount, resource, text):
    fd = os.open(mount.path(resource, "limit"), os.O_WRONLY | os.O_TRUNC)
    try:
        return os.write(fd, text.encode())
    finally:
        os.close(fd)


def test_a_limit_never_set_is_one(m1):
    assert read_limit(m1, "jobs") == "1\n"
    assert "limit" in os.listdir(m1.path("jobs"))


def test_a_limit_written_on_one_host_is_read_on_the_other(zk, base, m1, m2):
    # No znode yet for jobs (nothing locked it): the write creates it.
    # As a shell sets it: echo's one write, then close.
    subprocess.run(["sh", "-c", f"echo 3 > {m1.path('jobs', 'limit')}"],
                   check=True, timeout=30)
    assert read_limit(m2, "jobs") == "3\n"
    # A nested resource's parents are created too.
    write_limit(m2, "a/b", "4")
    assert zk.get(f"{base}/a/b")[0] == b"4"
    assert zk.get(f"{base}/jobs")[0] == b"3", "stored as decimal text"
    assert write_limit(m2, "jobs", "1000000") == 7
    assert read_limit(m1, "jobs") == "1000000\n"


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1000001", "3 4",
                                  " 2", "02", "2\n\n", "1e3"])
def test_a_bad_limit_is_refused_and_changes_nothing(zk, base, m1, text):
    write_limit(m1, "jobs", "2")
    expect_errno(errno.EINVAL, write_limit, m1, "jobs", text)
    assert read_limit(m1, "jobs") == "2\n"
    assert zk.get(f"{base}/jobs")[0] == b"2"


def test_the_shell_sees_a_refused_limit_fail(m1):
    res = subprocess.run(["bash", "-c", f"echo 0 > {m1.path('jobs', 'limit')}"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0
    assert "Invalid argument" in res.stderr, res.stderr


def test_a_limit_another_client_stored_is_read(zk, base, m1):
    """kazoo's Semaphore keeps max_leases in the same place, as text."""
    zk.create(f"{base}/jobs", b"5", makepath=True)
    assert read_limit(m1, "jobs") == "5\n"
    zk.set(f"{base}/jobs", b"five")
    expect_errno(errno.EIO, read_limit, m1, "jobs")
    assert "its data is not a limit" in m1.log()


def test_limit_and_lease_are_no_resource_names(m1):
    for name in ("limit", "lease"):
        expect_errno(errno.EEXIST, os.mkdir, m1.path("jobs", name))
        expect_errno(errno.EINVAL, os.mkdir, m1.path(name))
    assert "lease" in os.listdir(m1.path("jobs"))


def lease(mount, resource="jobs", flags="w"):
    """A process that opens the resource's lease file (for writing: that
    open waits for a lease)."""
    return Locker(mount.path(resource, "lease"), flags)


def leases_of(zk, base, resource="jobs"):
    return [n for n in lock_nodes(zk, f"{base}/{resource}")
            if "-lease-" in n]


def test_two_leases_of_two_are_held_across_hosts_and_a_third_waits(
        zk, base, m1, m2):
    write_limit(m1, "jobs", "2")
    assert read_limit(m2, "jobs") == "2\n"
    a = lease(m1)
    a.granted()
    b = lease(m2)
    b.granted()
    c = lease(m1)
    assert still_waiting(c), "a third lease granted with a limit of 2"
    t = lease(m2, flags="wn")
    assert t.wait_result() == "err EAGAIN", "a try of a third lease"
    t.close()
    wait_until(lambda: len(leases_of(zk, base)) == 3, 10,
               "the failed try's node to go")
    b.close()  # the other host's return grants the waiter
    c.granted()
    t = lease(m2, flags="wn")
    assert t.wait_result() == "err EAGAIN", "full again: a and c hold"
    t.close()
    a.close()
    wait_until(lambda: len(leases_of(zk, base)) == 1, 10, "a's lease to go")
    t = lease(m2, flags="wn")
    t.granted()
    t.close()
    c.close()


def test_a_lease_reads_as_its_token_and_mode_and_keeps_a_note(zk, m1):
    h = lease(m1, flags="rw")
    h.granted()
    fields = h.command("read").split("|")
    info = dict(f.split(" ", 1) for f in fields[1:])
    assert info["mode"] == "lease"
    assert "-lease-" in info["node"]
    data, stat = zk.get(info["node"])
    assert stat.czxid == int(fields[0])
    assert stat.version >= 1, "a granted lease marks its node"
    assert h.command("note batch 7") == "ok"
    assert b"batch 7" in zk.get(info["node"])[0]
    h.close()


def test_a_note_written_at_once_after_the_open_is_stored(m1):
    """`exec 8<>lease; echo ... >&8`: the note comes while the grant's
    mark is on its way, and follows it; it never fails for the mark."""
    for i in range(20):
        fd = os.open(m1.path("jobs", "lease"), os.O_RDWR)
        try:
            assert os.write(fd, f"job {i}\n".encode()) == len(f"job {i}\n")
        finally:
            os.close(fd)


def test_raising_the_limit_grants_at_once_and_lowering_takes_nothing(
        zk, base, m1, m2):
    a = lease(m1)
    a.granted()
    b = lease(m2)
    assert still_waiting(b), "a second lease with no limit set (1)"
    write_limit(m1, "jobs", "2")  # on the other host
    b.granted()
    write_limit(m2, "jobs", "1")
    c = lease(m1)
    assert still_waiting(c), "granted while two held a limit of 1"
    a.close()
    assert still_waiting(c), "granted while one held a limit of 1"
    b.close()
    c.granted()
    c.close()


def test_a_read_only_open_of_lease_takes_nothing(zk, base, m1, m2):
    """flock(1) opens its file read-only: its -w and -n must govern the
    wait, so that open returns at once and holds nothing."""
    a = lease(m2)
    a.granted()
    with open(m1.path("jobs", "lease")) as f:
        assert f.read() == "", "no lease, no token"
    assert len(leases_of(zk, base)) == 1
    a.close()


def test_flock_takes_a_lease_with_its_timeout_and_its_try(zk, base, m1, m2):
    write_limit(m1, "jobs", "2")
    path = m1.path("jobs", "lease")
    a, b = lease(m2), lease(m2)
    a.granted()
    b.granted()
    res = subprocess.run(["flock", "-n", path, "true"], timeout=30)
    assert res.returncode == 1, "flock -n with both leases held"
    res = subprocess.run(["flock", "-w", "1", path, "true"], timeout=30)
    assert res.returncode == 1, "flock -w 1 with both leases held"
    # flock -w's SIGALRM is caught: its node is kept a second for the call
    # again, which does not come.
    wait_until(lambda: len(leases_of(zk, base)) == 2, 5,
               "the timed-out flock's node to be deleted")
    # -s and -x alike take a lease: one of the two returns, and flock holds
    # it while its command runs (a try of the second then fails).
    holder = subprocess.Popen(
        ["flock", "-s", "-w", "10", path, "sh", "-c",
         f"flock -n -x {path} true; echo $?; read x"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        a.close()
        assert holder.stdout.readline().strip() == "1", \
            "a second lease while flock's and b's held a limit of 2"
        assert len(leases_of(zk, base)) == 2
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0
    b.close()
    wait_until(lambda: not leases_of(zk, base), 10, "every lease to go")


def test_kill_9_of_a_holder_and_of_a_waiter(zk, base, m1, m2):
    a = lease(m1)
    a.granted()
    w1 = lease(m2)
    w2 = lease(m1)
    wait_until(lambda: len(leases_of(zk, base)) == 3, 10, "two waiters")
    assert still_waiting(w1) and still_waiting(w2, 0)
    w1.kill(signal.SIGKILL)  # a waiter: its place goes, nobody is granted
    wait_until(lambda: len(leases_of(zk, base)) == 2, 10,
               "the killed waiter's node to go")
    assert still_waiting(w2)
    a.kill(signal.SIGKILL)  # the holder: the lease passes on
    w2.granted()
    w2.close()
    wait_until(lambda: not leases_of(zk, base), 10, "every lease to go")


def test_an_interrupted_waiter_leaves_nothing(zk, base, m1, m2):
    a = lease(m2)
    a.granted()
    w = Locker(m1.path("jobs", "lease"), "w", ["--alarm", "1"])
    assert w.wait_result(15) == "err EINTR"
    w.close()
    wait_until(lambda: len(leases_of(zk, base)) == 1, 10,
               "the interrupted waiter's node to go")
    late = lease(m1)
    assert still_waiting(late)
    a.close()
    late.granted()
    late.close()


def status_of(mount):
    with open(os.path.join(mount.mountpoint, ".status")) as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines())


def test_holders_and_status_show_the_leases(zk, base, m1, m2):
    write_limit(m1, "jobs", "2")
    a, b = lease(m1), lease(m2)
    a.granted()
    b.granted()
    c = lease(m1)
    assert still_waiting(c)
    with open(m2.path("jobs", "holders")) as f:
        lines = f.read().splitlines()
    nodes = [line.split(" ") for line in lines[:-1]]
    assert [(n[0], n[1]) for n in nodes] == [
        ("held", "lease"), ("held", "lease"), ("waiting", "lease")], lines
    assert all(len(n) == 11 for n in nodes), lines
    assert lines[-1] == "limit 2 held 2 free 0", lines
    status = status_of(m1)
    assert status["leases_held"] == "1" and status["leases_waiting"] == "1", \
        status
    write_limit(m2, "jobs", "4")
    c.granted()
    with open(m1.path("jobs", "holders")) as f:
        assert f.read().splitlines()[-1] == "limit 4 held 3 free 1"
    for h in (a, b, c):
        h.close()
    released(zk, base)  # b's, from the other mount
    with open(m1.path("jobs", "holders")) as f:
        assert f.read() == "", "no leases, no line"


def test_fcntl_locks_on_a_lease_file_are_leases(zk, base, m1, m2):
    """F_SETLK takes a lease (F_RDLCK here: the descriptor is read-only, as
    an open that takes no lease must be); F_GETLK answers under the
    limit."""
    write_limit(m1, "jobs", "2")
    a = lease(m2)
    a.granted()
    fd = os.open(m1.path("jobs", "lease"), os.O_RDONLY)
    try:
        probe = struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0)
        got = struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, probe))
        assert got[0] == fcntl.F_UNLCK, "one lease of two is free"
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        assert len(leases_of(zk, base)) == 2
        other = os.open(m2.path("jobs", "lease"), os.O_RDONLY)
        try:
            got = struct.unpack("hhqqi",
                                fcntl.fcntl(other, fcntl.F_GETLK, probe))
            assert got[0] == fcntl.F_WRLCK, "both leases taken"
            expect_errno(errno.EAGAIN, fcntl.lockf, other,
                         fcntl.LOCK_SH | fcntl.LOCK_NB)
        finally:
            os.close(other)
    finally:
        os.close(fd)  # the POSIX lock ends with any close
    a.close()
    wait_until(lambda: not leases_of(zk, base), 10, "every lease to go")


def expire_session(m1, paused, freed, holder, waiter):
    """Stop m1's daemon until its session has expired (freed() waits for
    what another session gets from it then), and check what m1's openers
    see: the holder lost its lease (on_lost, EIO), the waiter nothing."""
    paused.append(m1)
    os.kill(m1.proc.pid, signal.SIGSTOP)  # no heartbeats: it expires
    freed()
    os.kill(m1.proc.pid, signal.SIGCONT)
    assert holder.next_line(20, "on_lost signal") == "signal SIGUSR1"
    assert holder.command("read") == "err EIO"
    wait_until(lambda: status_of(m1)["state"] == "connected", 20,
               "m1's new session")
    assert waiter.poll_result() is None, "the waiter noticed the expiry"


def test_an_expired_session_loses_its_lease_and_requeues_its_waiter(
        zk, base, mounts, paused):
    m1 = mounts.new("-o", "on_lost=signal:USR1")
    m2 = mounts.new()
    holder = Locker(m1.path("jobs", "lease"), "rw",
                    extra=["--trap", "SIGUSR1"])
    holder.granted()
    other = lease(m2, "pool")
    other.granted()
    waiter = lease(m1, "pool", "rw")  # queued on m1's session
    wait_until(lambda: len(leases_of(zk, base, "pool")) == 2, 10,
               "m1's waiter to queue")
    rival = lease(m2)
    assert still_waiting(rival)

    # ZooKeeper freed the lease:
    expire_session(m1, paused, lambda: rival.granted(timeout=20), holder,
                   waiter)
    other.close()
    waiter.granted()
    assert "mode lease" in waiter.command("read")
    assert len(leases_of(zk, base)) == 1, "a lost lease taken back"
    for h in (holder, rival, waiter):
        h.close()


def test_a_limit_lost_with_the_connection_fails_no_other_waiter(
        zookeeper, zk, base, mounts):
    """A lease waiter whose create, limit read and listing are in flight
    when the connection drops must not pass its transient error on to the
    mount's other waiter: the holder returns its lease during the outage,
    and once connected again the first waiter holds (not EAGAIN), the
    second keeps its place behind it."""
    proxy = TcpProxy(zookeeper.port)
    via_proxy = Mounts(proxy.connect + base)
    try:
        m1 = via_proxy.new()
        m2 = mounts.new()
        write_limit(m2, "jobs", "1")
        holder = lease(m2)
        holder.granted()
        first = lease(m1)
        wait_until(lambda: len(leases_of(zk, base)) == 2, 10,
                   "the first waiter to queue")
        proxy.hold()  # what m1 sends now waits in the proxy
        second = lease(m1)
        wait_until(lambda: "waiting 2" in open(m1.path(".status")).read(),
                   10, "the second waiter to be under way")
        proxy.cut()  # in flight: lost with the connection
        holder.close()  # returned during the outage
        wait_until(lambda: len(leases_of(zk, base)) == 1, 10,
                   "the holder's lease to go")
        proxy.accept()
        first.granted(timeout=20)
        assert still_waiting(second), "the second waiter lost its place"
        first.close()
        second.granted(timeout=20)
        second.close()
    finally:
        via_proxy.finish(zk, base)
        proxy.stop()
