"""MOUNT/<resource>/revoke on real mounts: `echo ask > revoke` marks every
holding node of the resource, of any tool, with Curator's __REVOKE__ and
takes nothing away; `echo break > revoke` deletes them (orphans too), so
another host takes the lock at once and the holder's mount treats its
lock as lost.  Only root or the mount's owner may break; anything but
ask or break is EINVAL."""
import errno
import fcntl
import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest

from harness import (Driver, Locker, exec_holder, expect_impostor_spared,
                     expect_killed_by, lock_nodes, pid_of_a_gone_holder,
                     running, status, wait_until)
from test_core import still_waiting
from test_exclusion import try_open
from test_names_and_errors import expect_errno

pytestmark = pytest.mark.concurrency


def revoke(mount, word, res="r"):
    """As the shell writes it: one write of the word and a newline."""
    fd = os.open(mount.path(res, "revoke"), os.O_WRONLY)
    try:
        return os.write(fd, (word + "\n").encode())
    finally:
        os.close(fd)


def test_revoke_is_a_write_only_file_of_every_resource(m1):
    assert "revoke" in os.listdir(m1.path("r"))
    st = os.stat(m1.path("r", "revoke"))
    assert st.st_mode & 0o777 == 0o200, "root's and the owner's alone"
    expect_errno(errno.EACCES, os.open, m1.path("r", "revoke"), os.O_RDONLY)
    assert not os.path.exists(m1.path(".all", "a,b", "revoke"))


@pytest.mark.parametrize("word", ["", "asks", "ASK", "break now", "ask\nask"])
def test_anything_but_ask_or_break_is_einval(m1, word):
    expect_errno(errno.EINVAL, revoke, m1, word)


def test_ask_marks_the_holders_nodes_and_takes_nothing(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m1.path("r", "read"), "r")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
               "the waiter queued")
    held, waiting = sorted(lock_nodes(zk, f"{base}/r"),
                           key=lambda p: p[-10:])
    assert revoke(m2, "ask") == 4
    assert zk.get(held)[0] == b"__REVOKE__", "the holder's node is asked"
    assert zk.get(waiting)[0] != b"__REVOKE__", "a waiter is not"
    assert try_open(m2.path("r", "write")) is None, "still held"
    assert still_waiting(waiter)
    holder.close()
    waiter.granted()
    waiter.close()


def test_break_takes_the_lock_away_and_the_holder_loses_it(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
               "the waiter queued")
    assert revoke(m2, "break") == 6
    assert status(m2)["breaks_sent"] == "1"
    waiter.granted()
    assert holder.command("read") == "err EIO", "told its lock is gone"
    holder.close()
    waiter.close()
    said = [line for line in m2.log().splitlines() if ": broke " in line]
    assert len(said) == 1 and re.search(
        r"/r: broke 1 holder \(0 failed\), for pid \d+ \([^,]+, uid 0\)$",
        said[0]), f"the breaker's log line: {said}"


def test_a_break_from_the_holders_own_mount_is_logged_as_a_break(zk, base, m1):
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    assert revoke(m1, "break") == 6
    assert holder.command("read") == "err EIO", "told its lock is gone"
    holder.close()
    lost = [line for line in m1.log().splitlines() if "the lock is lost" in line]
    assert lost and all("broken" in line for line in lost), lost


def test_break_removes_orphans_too(zk, base, m1):
    orphan = zk.create(f"{base}/r/_c_0123abcd-0000-4000-8000-00000000000a"
                       "-write-", b"", sequence=True, makepath=True)
    assert try_open(m1.path("r", "write")) is None, "the orphan blocks"
    revoke(m1, "break")
    assert not zk.exists(orphan)
    fd = try_open(m1.path("r", "write"))
    assert fd is not None
    os.close(fd)


def write_as(uid, path, text):
    """Write text to path as uid (and gid) uid, no other groups: "ok" or
    the errno name."""
    code = ("import errno, os, sys\n"
            "try:\n"
            "    fd = os.open(sys.argv[1], os.O_WRONLY)\n"
            "    os.write(fd, sys.argv[2].encode())\n"
            "    os.close(fd)\n"
            "    print('ok')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n")
    out = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}",
                          "--clear-groups", sys.executable, "-c", code, path,
                          text], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.parametrize("owner", [None, 65534])
def test_only_root_or_the_owner_may_break(zk, base, mounts, owner):
    opts = "allow_other" + (f",uid={owner}" if owner else "")
    m = mounts.new("-o", opts)
    holder = Locker(m.path("r", "write"), "rw")
    holder.granted()
    if owner is None:
        assert write_as(65534, m.path("r", "revoke"), "break\n") == "EACCES"
        assert write_as(65534, m.path("r", "revoke"), "ask\n") == "EACCES"
        assert len(lock_nodes(zk, f"{base}/r")) == 1, "nothing broken"
        assert zk.get(lock_nodes(zk, f"{base}/r")[0])[0] != b"__REVOKE__"
        assert "(python3, uid 65534) refused to revoke locks" in m.log()
    else:
        assert write_as(owner, m.path("r", "revoke"), "break\n") == "ok"
        wait_until(lambda: not lock_nodes(zk, f"{base}/r"), 15,
                   "the holder's node deleted by the mount's owner")
    holder.close()


def test_anyone_may_ask_lets_every_user_ask_but_not_break(zk, base, mounts):
    m = mounts.new("-o", "allow_other,anyone_may_ask")
    assert os.stat(m.path("r", "revoke")).st_mode & 0o777 == 0o222
    holder = Locker(m.path("r", "write"), "rw")
    holder.granted()
    assert write_as(65534, m.path("r", "revoke"), "break\n") == "EPERM"
    assert len(lock_nodes(zk, f"{base}/r")) == 1, "nothing broken"
    assert write_as(65534, m.path("r", "revoke"), "ask\n") == "ok"
    assert zk.get(lock_nodes(zk, f"{base}/r")[0])[0] == b"__REVOKE__"
    holder.close()


def test_a_holder_asked_is_told_and_keeps_its_lock(zk, base, mounts, m2):
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    holder = Locker(m1.path("r", "write"), "rw", ["--trap", "SIGUSR1"])
    holder.granted()
    revoke(m2, "ask")
    assert holder.next_line(15, "on_revoke signal") == "signal SIGUSR1"
    text = holder.command("read").split("|")
    assert text[0].isdigit() and text[-1].startswith("revoke requested 20"), \
        text
    for m in (m1, m2):
        with open(m.path("r", "holders")) as f:
            line = f.read().splitlines()[0].split(" ")
        assert line[0] == "held" and line[9].endswith(":revoke"), line
    assert try_open(m2.path("r", "write")) is None, "asking took nothing"
    assert status(m1)["asked"] == "1", "counted where the holder is"
    assert status(m2)["asks_sent"] == "1", "and where the ask came from"
    holder.close()


def test_on_revoke_signals_a_holder_that_exec_d(zk, base, mounts, m2):
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    with exec_holder(m1) as holder:
        revoke(m2, "ask")
        expect_killed_by(holder, signal.SIGUSR1, m1, "on_revoke")


def test_on_revoke_spares_a_process_that_took_a_gone_holders_pid(
        zk, base, mounts, m2):
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    with pid_of_a_gone_holder(m1) as impostor:
        revoke(m2, "ask")
        expect_impostor_spared(m1, impostor)


POLLER = ("import fcntl, os, select, sys\n"
          "fd = os.open(sys.argv[1], os.O_RDWR)\n"
          "fcntl.flock(fd, fcntl.LOCK_EX)\n"
          "p = select.poll()\n"
          "p.register(fd, select.POLLPRI)\n"
          "print('before', p.poll(0), flush=True)\n"
          "print('after', p.poll(15000), flush=True)\n")


def poll_sees_the_ask(lock_file, asker, res):
    """A holder of lock_file polls for POLLPRI; asker asks res's holders:
    the poll returns with it, and not before."""
    with running([sys.executable, "-c", POLLER, lock_file],
                 stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "before []"
        revoke(asker, "ask", res)
        line = proc.stdout.readline().strip()
        assert line.startswith("after [(") and "2)" in line, line
        assert proc.wait(15) == 0


def test_poll_reports_pollpri_when_the_lock_is_asked(zk, base, m1, m2):
    poll_sees_the_ask(m1.path("r", "lock"), m2, "r")


def test_an_ask_reaches_a_revocable_curator_holder(zookeeper, zk, base, m1,
                                                   curator_java):
    svc = curator_java.service(zookeeper.connect)
    try:
        held = svc.hold("revocable", f"{base}/r")
        revoke(m1, "ask")
        assert svc.wait_for(held, "Curator's RevocationListener call") == \
            "revoke requested"
        assert try_open(m1.path("r", "write")) is None, "asking took nothing"
        svc.release(held)
    finally:
        svc.close()


def test_curators_revoker_reaches_a_mount_holder(zookeeper, zk, base, mounts,
                                                 curator_java):
    m = mounts.new("-o", "on_revoke=signal:USR1")
    holder = Locker(m.path("r", "write"), "rw", ["--trap", "SIGUSR1"])
    holder.granted()
    node, = lock_nodes(zk, f"{base}/r")
    svc = curator_java.service(zookeeper.connect)
    try:
        svc.send(f"revoke R1 {node}")
        assert svc.wait_for("R1", "Revoker.attemptRevoke") == "asked"
        assert holder.next_line(15, "the on_revoke signal") == \
            "signal SIGUSR1"
        assert holder.command("read").split("|")[-1].startswith(
            "revoke requested")
    finally:
        svc.close()
    holder.close()


def test_a_mark_set_on_a_waiting_node_is_seen_at_its_grant(zk, base, m1, m2):
    """Curator's Revoker sets the mark on any node it is given: a waiter
    asked before its turn is told when it holds."""
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m2.path("r", "write"), "rw")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/r")) == 2, 15,
               "the waiter queued")
    waiting = max(lock_nodes(zk, f"{base}/r"), key=lambda p: p[-10:])
    zk.set(waiting, b"__REVOKE__")
    holder.close()
    waiter.granted()
    # Told a moment after the grant: the get that watches the held node
    # reads the mark (no round trip more before the grant).
    wait_until(lambda: waiter.command("read").split("|")[-1].startswith(
        "revoke requested"), 15, "the new holder told it was asked")
    assert status(m2)["asked"] == "1"
    waiter.close()


def next_lines(child, n, timeout):
    """The child's next n output lines, within timeout seconds in all."""
    deadline = time.monotonic() + timeout
    return [child.next_line(max(deadline - time.monotonic(), 0),
                            f"line {i + 1} of {n}") for i in range(n)]


def test_a_waiting_multi_lock_is_told_only_once_it_holds(zk, base, mounts,
                                                         m2):
    m1 = mounts.new("-o", "on_revoke=signal:USR1")
    other = Locker(m2.path("b", "write"), "rw")
    other.granted()
    multi = Locker(m1.path(".all", "a,b", "write"), "rw",
                   ["--trap", "SIGUSR1"])
    wait_until(lambda: len(lock_nodes(zk, f"{base}/a")) == 1 and
               len(lock_nodes(zk, f"{base}/b")) == 2, 15, "the multi-lock queued")
    revoke(m2, "ask", "a")  # its node on a holds, the multi-lock waits
    assert still_waiting(multi), "a waiting multi-lock was signalled"
    other.close()
    # Told once it holds: the signal and the open's return race to the
    # locker's output, two lines in any order.
    # (The handler may print in the middle of the "ok" line.)
    text = "".join(next_lines(multi, 2, 15))
    assert "signal SIGUSR1" in text and \
        text.replace("signal SIGUSR1", "", 1) == "ok", text
    assert multi.command("read").split("|")[-1].startswith(
        "revoke requested"), "asked, as its read shows once it holds"
    multi.close()


def test_poll_wakes_for_any_resource_of_a_multi_lock(zk, base, m1, m2):
    poll_sees_the_ask(m1.path(".all", "a,b", "lock"), m2, "b")  # the second


def test_a_downgrade_is_still_asked(zk, base, m1, m2):
    holder = Driver()
    holder.ok(f"open f {m1.path('r', 'lock')}")
    holder.ok("flock f ex")
    revoke(m2, "ask")
    wait_until(lambda: holder.ok("read f").split("|")[-1].startswith(
        "revoke requested"), 15, "the holder told")
    holder.ok("flock f sh")
    assert holder.ok("read f").split("|")[-1].startswith("revoke requested")
    holder.exit()


def test_a_kazoo_mounts_sub_resources_are_no_holders(zk, base, mounts):
    """In kazoo's layout every child of the resource counts as a lease
    (kazoo's Semaphore counts them): a sub-resource is none to ask."""
    m = mounts.new("-o", "dialect=kazoo")
    with open(m.path("db", "sub", "limit"), "w") as f:  # makes its znode
        f.write("3\n")
    revoke(m, "ask", "db")
    revoke(m, "break", "db")
    assert zk.get(f"{base}/db/sub")[0] == b"3", "its limit left as it was"


def test_a_read_pass_is_one_text_when_an_ask_comes_between_its_reads(
        zk, base, m1):
    """read() of a lock file in several calls: an ask seen between two of
    them lengthens the text, but the pass goes on with the text it began
    with; the next pass shows the ask."""
    fd = os.open(m1.path("r", "write"), os.O_RDWR)
    try:
        first = os.read(fd, 10)
        (node,) = lock_nodes(zk, f"{base}/r")
        zk.set(node, b"__REVOKE__")
        p = select.poll()
        p.register(fd, select.POLLPRI)
        assert p.poll(5000), "the ask was not seen"
        rest = b""
        while chunk := os.read(fd, 7):
            rest += chunk
        text = (first + rest).decode()
        assert text.splitlines()[-1].startswith("mode write"), text
        again = b""
        while chunk := os.read(fd, 4096):
            again += chunk
        assert again.decode().startswith(text), (again, text)
        assert again.decode().splitlines()[-1].startswith(
            "revoke requested"), again
    finally:
        os.close(fd)


def test_a_read_pass_ends_when_its_lock_is_let_go_and_taken_again(m1):
    """`read -r token <&9; flock -u 9; flock 9; read ...`: the first read
    leaves its pass open. A read after the lock was let go and another
    taken through the same descriptor ends that pass (end of file), and
    the next pass tells the new lock's token, not the old one's."""
    fd = os.open(m1.path("r", "lock"), os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        first = b""
        while (c := os.read(fd, 1)) != b"\n":
            first += c
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert os.read(fd, 4096) == b"", "the old lock's pass went on"
        again = b""
        while chunk := os.read(fd, 4096):
            again += chunk
        token = again.decode().splitlines()[0]
        assert int(token) > int(first), (first, again)
    finally:
        os.close(fd)


def test_a_read_pass_after_the_lock_is_lost_fails_eio(zk, base, m1):
    """bash's `read -r token <&9` reads a byte at a time and stops at the
    newline: the pass stays open. A read after the lock was lost (its
    node deleted by another client) fails EIO, not the old text."""
    fd = os.open(m1.path("r", "write"), os.O_RDWR)
    try:
        while os.read(fd, 1) != b"\n":
            pass
        lost_before = int(status(m1)["losses"])
        (node,) = lock_nodes(zk, f"{base}/r")
        zk.delete(node)
        wait_until(lambda: int(status(m1)["losses"]) > lost_before, 5,
                   "the mount to count the loss")
        with pytest.raises(OSError) as e:
            os.read(fd, 64)
        assert e.value.errno == errno.EIO
    finally:
        os.close(fd)
