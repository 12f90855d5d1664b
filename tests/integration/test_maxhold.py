"""MOUNT/<resource>/maxhold on real mounts: the limit is stored in
ZooKeeper for every host (<base>/.maxhold, gone with its last limit); a
mount's hold that passes it is asked to let go, then broken a grace later
(lost: EIO), and only then is the next waiter of another host granted;
holders marks anyone's hold past it as overdue.  Only root or the mount's
owner may set it."""
import errno
import os
import subprocess
import threading
import time

import pytest

from harness import (Driver, Locker, Mounts, lock_nodes, released, status,
                     wait_until)
from tcpproxy import TcpProxy
from test_core import still_waiting
from test_names_and_errors import expect_errno
from test_revoke import write_as

# maxhold_grace_ms: a tenth of the limit, at least this.
GRACE_MIN = 2.0


def set_maxhold(mount, value, res="r"):
    """As the shell writes it: one write of the number and a newline."""
    fd = os.open(mount.path(res, "maxhold"), os.O_WRONLY)
    try:
        return os.write(fd, f"{value}\n".encode())
    finally:
        os.close(fd)


def maxhold(mount, res="r"):
    with open(mount.path(res, "maxhold")) as f:
        return f.read()


def holders(mount, res="r"):
    with open(mount.path(res, "holders")) as f:
        return f.read().splitlines()


def test_a_limit_set_on_one_host_is_read_on_another(zk, base, m1, m2):
    assert maxhold(m2) == "0\n", "none by default"
    assert set_maxhold(m1, 30) == 3
    assert maxhold(m2) == "30\n", "as soon as the write returned"
    assert zk.get(f"{base}/.maxhold")[0] == b"30 r\n"
    set_maxhold(m2, 7, "a/b")
    assert maxhold(m1, "a/b") == "7\n" and maxhold(m1) == "30\n"
    set_maxhold(m1, 0)
    set_maxhold(m1, 0, "a/b")
    assert maxhold(m2) == "0\n"
    assert not zk.exists(f"{base}/.maxhold"), "nothing left behind"
    assert ".maxhold" not in os.listdir(m1.path()), "no resource"


@pytest.mark.parametrize("text", ["", "-1", "1.5", "abc", "07", "31536001",
                                  "5 s", "5\n\n"])
def test_bad_limits_are_einval(m1, text):
    expect_errno(errno.EINVAL, set_maxhold, m1, text)
    assert maxhold(m1) == "0\n"


def test_hosts_setting_limits_at_once_lose_none(zk, base, m1, m2):
    """Each store rewrites the one table on the version it read: two hosts
    writing together must keep both limits."""
    for i in range(20):
        set_maxhold(m1 if i % 2 else m2, i + 1, f"r{i}")
    values = {f"r{i}": maxhold(m1, f"r{i}") for i in range(20)}
    assert values == {f"r{i}": f"{i + 1}\n" for i in range(20)}
    for i in range(20):
        set_maxhold(m2, 0, f"r{i}")
    assert not zk.exists(f"{base}/.maxhold")


def test_only_root_or_the_owner_may_set_it(zk, base, mounts):
    m = mounts.new("-o", "allow_other")
    assert write_as(65534, m.path("r", "maxhold"), "5\n") == "EACCES"
    assert maxhold(m) == "0\n"
    owned = mounts.new("-o", "allow_other,uid=65534")
    assert write_as(65534, owned.path("r", "maxhold"), "5\n") == "ok"
    assert maxhold(m) == "5\n"
    set_maxhold(m, 0)


@pytest.mark.concurrency
def test_a_stubborn_holder_is_asked_then_broken_then_the_next_granted(
        zk, base, mounts, m2):
    """The holder ignores the signal that asks it to let go: the order of
    events, as the holder and the other host see them, is asked (POLLPRI,
    the signal, holders' :revoke), then broken (EIO), and the waiter of
    the other host is granted only after that."""
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    limit = 2
    holder = Locker(m1.path("r", "write"), "rw", ["--trap", "SIGUSR1"])
    holder.granted()
    granted_at = time.monotonic()
    waiter = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
               "the waiter queued")
    set_maxhold(m2, limit)
    assert holder.next_line(15, "the on_revoke signal") == "signal SIGUSR1"
    asked_at = time.monotonic()
    assert asked_at - granted_at >= limit - 0.1, "not asked before its time"
    assert holder.command("read").split("|")[-1].startswith(
        "revoke requested 20")
    line = holders(m2)[0].split(" ")
    assert line[0] == "held" and ":revoke" in line[9], line
    assert still_waiting(waiter), "asking took nothing"
    waiter.granted(timeout=limit + 60)
    granted2_at = time.monotonic()
    assert granted2_at - asked_at >= GRACE_MIN - 0.5, \
        f"broken {granted2_at - asked_at:.1f} s after the ask, before the grace"
    assert holder.command("read") == "err EIO", "the holder lost it"
    assert status(m1)["maxhold_asks"] == "1"
    assert status(m1)["maxhold_breaks"] == "1"
    assert status(m1)["losses"] == "1"
    assert "held past its limit" in m1.log()
    waiter.close()
    holder.close()
    set_maxhold(m2, 0)


def test_a_holder_that_lets_go_when_asked_is_not_broken(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    set_maxhold(m2, 1)
    wait_until(lambda: holder.command("read").split("|")[-1].startswith(
        "revoke requested"), 15, "the holder asked")
    holder.close()
    again = Locker(m1.path("r", "write"), "rw")
    again.granted()
    assert status(m1)["maxhold_breaks"] == "0"
    again.close()
    set_maxhold(m2, 0)


def test_a_limit_removed_in_time_asks_nothing(zk, base, m1, m2):
    set_maxhold(m2, 2)
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    set_maxhold(m2, 0)
    time.sleep(3)  # past the limit that was: nothing may come
    assert holder.command("read").split("|")[-1] != "revoke requested"
    assert "revoke" not in holder.command("read")
    assert status(m1)["maxhold_asks"] == "0"
    holder.close()


@pytest.mark.concurrency
def test_flock_fcntl_leases_and_readers_are_bounded_alike(zk, base, m1, m2):
    holders_by_kind = {  # each on a resource of its own, named after it
        "flock": Locker(m1.path("of-flock", "lock"), "rw", ["--flock"]),
        "fcntl": Locker(m1.path("of-fcntl", "lock"), "rw", ["--fcntl"]),
        "lease": Locker(m1.path("of-lease", "lease"), "rw"),
        "read": Locker(m1.path("of-read", "read"), "r"),
    }
    for holder in holders_by_kind.values():
        holder.granted()
    for how in holders_by_kind:
        set_maxhold(m2, 1, f"of-{how}")
    for how, holder in holders_by_kind.items():
        wait_until(lambda: holder.command("read") == "err EIO", 30,
                   f"the {how} holder broken")
        # Told first, then its node goes (a break tells before it
        # grants): the node's deletion is awaited, not assumed.
        released(zk, f"{base}/of-{how}")
        holder.close()
        set_maxhold(m2, 0, f"of-{how}")


@pytest.mark.concurrency
def test_a_multi_lock_is_bounded_by_its_least_limit(zk, base, m1, m2):
    holder = Locker(m1.path(".all", "a,b", "write"), "rw")
    holder.granted()
    set_maxhold(m2, 1, "b")
    wait_until(lambda: holder.command("read") == "err EIO", 30,
               "the multi-lock broken")
    wait_until(lambda: not lock_nodes(zk, base), 15,
               "every node of it deleted")
    holder.close()
    set_maxhold(m2, 0, "b")


def test_another_tools_holder_is_marked_overdue_not_broken(
        zookeeper, zk, base, m1, m2, curator_java):
    svc = curator_java.service(zookeeper.connect)
    try:
        held = svc.hold("mutex", f"{base}/r")
        assert holders(m1)[-1].startswith("held"), holders(m1)
        set_maxhold(m1, 1)

        def overdue():
            lines = holders(m2)
            return ":overdue" in lines[0].split(" ")[9] and \
                lines[-1] == "maxhold 1 asked 0 overdue 1"
        wait_until(overdue, 15, "the Curator holder marked overdue")
        assert len(lock_nodes(zk, f"{base}/r")) == 1, \
            "another tool's holder is not broken"
        svc.release(held)
    finally:
        svc.close()
    set_maxhold(m1, 0)


FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def clock_off_by(offset):
    """A host whose clock is off: the daemon sees CLOCK_REALTIME moved by
    offset (libfaketime, as faketime(1) does; its monotonic clocks stay)."""
    return ("env", f"LD_PRELOAD={FAKETIME}", f"FAKETIME={offset}",
            "FAKETIME_DONT_FAKE_MONOTONIC=1")


# A sanitizer's runtime must be the first library loaded, and
# libfaketime is preloaded: the plain run has it.
@pytest.mark.plain
def test_overdue_goes_by_the_servers_clock_not_the_hosts(zk, base, mounts):
    """A kazoo holder (this test's own client) on a resource with a limit:
    a host an hour ahead must not call it overdue at once, and a host an
    hour behind must, once the limit passed on the server."""
    ahead = mounts.new(prefix=clock_off_by("+1h"))
    behind = mounts.new(prefix=clock_off_by("-1h"))
    lock = zk.Lock(f"{base}/r", "kazoo holder")
    assert lock.acquire(timeout=15)
    try:
        set_maxhold(ahead, 30)
        line = holders(ahead)[0].split(" ")
        assert line[9] == "kazoo" and int(line[7].rstrip("s")) < 30, line
        set_maxhold(behind, 1)

        def overdue_behind():
            return holders(behind)[0].split(" ")[9] == "kazoo:overdue"
        wait_until(overdue_behind, 15,
                   "the host an hour behind sees the holder overdue")
        assert holders(behind)[-1] == "maxhold 1 asked 0 overdue 1"
        set_maxhold(ahead, 0)
    finally:
        lock.release()
        # libfaketime's wrappers keep SIGTERM from waking libfuse's loop:
        # unmount instead, and the daemons end as they do on umount(8).
        for m in (ahead, behind):
            subprocess.run(["fusermount3", "-u", m.mountpoint], check=True)
            assert m.proc.wait(30) == 0, m.log()


@pytest.mark.concurrency
def test_a_limit_raised_after_the_ask_asks_again_and_gives_the_grace(
        zk, base, mounts, m2):
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    holder = Locker(m1.path("r", "write"), "rw", ["--trap", "SIGUSR1"])
    holder.granted()
    granted_at = time.monotonic()
    set_maxhold(m2, 2)
    assert holder.next_line(15, "the first ask") == "signal SIGUSR1"
    set_maxhold(m2, 5)
    assert holder.next_line(15, "the ask at the new limit") == \
        "signal SIGUSR1", "told again"
    wait_until(lambda: holder.command("read") == "err EIO", 30, "broken")
    took = time.monotonic() - granted_at
    assert took >= 5 + GRACE_MIN - 0.5, \
        f"broken {took:.1f} s after the grant: the new limit's grace skipped"
    assert status(m1)["maxhold_asks"] == "2", "asked again at the new limit"
    assert status(m1)["asked"] == "2", "and the holder told twice"
    holder.close()
    set_maxhold(m2, 0)


@pytest.mark.concurrency
def test_a_limit_removed_while_cut_off_breaks_nothing_when_back(
        zookeeper, zk, base, m2):
    proxy = TcpProxy(zookeeper.port)
    mounts = Mounts(proxy.connect + base)
    try:
        m = mounts.new("-o", "session_timeout=30")
        holder = Locker(m.path("r", "write"), "rw")
        holder.granted()
        set_maxhold(m2, 2)
        wait_until(lambda: status(m)["maxhold_asks"] == "1", 15, "asked")
        proxy.cut()
        wait_until(lambda: status(m)["state"] == "suspended", 10,
                   "the mount to see the connection lost")
        set_maxhold(m2, 0)
        time.sleep(GRACE_MIN + 2)  # past the grace of the limit that was
        proxy.accept()
        wait_until(lambda: status(m)["state"] == "connected", 20,
                   "the mount connected again")
        time.sleep(2)  # a sweep or two with the stale copy, if one ran
        assert status(m)["maxhold_breaks"] == "0"
        assert holder.command("read") != "err EIO", "broken by a stale limit"
        holder.close()
    finally:
        mounts.finish(zk, base)
        proxy.stop()


def test_many_users_and_hosts_setting_limits_at_once_all_succeed(
        zk, base, m1, m2):
    """One table for every limit: each store is a conditional write that
    starts over when another host wrote first.  60 writers on two mounts
    must all succeed and none be lost."""
    results = {}

    def one(i):
        try:
            set_maxhold(m1 if i % 2 else m2, 10 + i, f"r{i}")
            results[i] = "ok"
        except OSError as e:
            results[i] = errno.errorcode[e.errno]
    threads = [threading.Thread(target=one, args=(i,)) for i in range(60)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(not t.is_alive() for t in threads), "a write never returned"
    assert {i: r for i, r in results.items() if r != "ok"} == {}
    text = zk.get(f"{base}/.maxhold")[0].decode()
    assert sorted(text.splitlines()) == sorted(
        f"{10 + i} r{i}" for i in range(60)), "a limit lost"
    for i in range(60):
        set_maxhold(m1, 0, f"r{i}")
    assert not zk.exists(f"{base}/.maxhold")


def test_an_asked_downgrade_still_shows_its_token_and_holder(
        zk, base, m1, m2):
    d = Driver()
    d.ok(f"open f {m1.path('r', 'lock')} rw")
    d.ok("flock f ex")
    d.ok("flock f sh")
    before = holders(m2)[0].split(" ")
    set_maxhold(m2, 1)
    wait_until(lambda: ":revoke" in holders(m2)[0].split(" ")[9], 15,
               "the downgraded holder asked")
    after = holders(m2)[0].split(" ")
    assert after[2] == before[2], "its inherited token kept on every host"
    assert after[3:7] == before[3:7], "its holder still named"
    d.exit()
    set_maxhold(m2, 0)


def test_holders_stays_empty_with_nobody_queued(m1):
    set_maxhold(m1, 5)
    assert holders(m1) == []
    set_maxhold(m1, 0)


@pytest.mark.plain  # libfaketime is preloaded (see above)
def test_a_clock_stepped_after_the_last_create_marks_nobody_overdue(
        zk, base, mounts, tmp_path):
    """NTP steps this host's clock two hours forward after the mount
    last created a node: the server's clock, as estimated, must not."""
    stamp = tmp_path / "faketime"
    stamp.write_text("-2h\n")
    m = mounts.new(prefix=("env", f"LD_PRELOAD={FAKETIME}",
                           f"FAKETIME_TIMESTAMP_FILE={stamp}",
                           "FAKETIME_NO_CACHE=1",
                           "FAKETIME_DONT_FAKE_MONOTONIC=1"))
    lock = zk.Lock(f"{base}/r", "kazoo holder")
    assert lock.acquire(timeout=15)
    try:
        set_maxhold(m, 3600)
        assert holders(m)[0].split(" ")[9] == "kazoo"
        stamp.write_text("+0\n")
        line = holders(m)[0].split(" ")
        assert line[9] == "kazoo" and int(line[7].rstrip("s")) < 60, line
        set_maxhold(m, 0)
    finally:
        lock.release()
        subprocess.run(["fusermount3", "-u", m.mountpoint], check=True)
        assert m.proc.wait(30) == 0, m.log()
