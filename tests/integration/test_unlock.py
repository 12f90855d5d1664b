"""An explicit unlock is over for every host when the call returns
(doc/locks.md, "Semantics"): flock(LOCK_UN), POSIX F_UNLCK and OFD F_UNLCK on one
mount, then at once a try-lock on a second mount (another session) must
succeed, round after round.  Also the drop half of a conversion, a FLUSH
that ends a process's fcntl locks, and a try or an interrupted wait that
failed: none leaves a node another host still sees."""
import errno
import fcntl
import os
import struct
import subprocess
import time

import pytest

from harness import Driver, Locker, lock_nodes, wait_until

pytestmark = pytest.mark.concurrency

ROUNDS = 300
FLOCK_FMT = "hhqqi4x"  # struct flock on Linux x86-64 / arm64


def ofd(fd, kind, wait=False):
    cmd = fcntl.F_OFD_SETLKW if wait else fcntl.F_OFD_SETLK
    fcntl.fcntl(fd, cmd, struct.pack(FLOCK_FMT, kind, os.SEEK_SET, 0, 0, 0))


KINDS = {
    "flock": (lambda fd: fcntl.flock(fd, fcntl.LOCK_EX),
              lambda fd: fcntl.flock(fd, fcntl.LOCK_UN),
              lambda fd: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)),
    "posix": (lambda fd: fcntl.lockf(fd, fcntl.LOCK_EX),
              lambda fd: fcntl.lockf(fd, fcntl.LOCK_UN),
              lambda fd: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)),
    "ofd": (lambda fd: ofd(fd, fcntl.F_WRLCK, wait=True),
            lambda fd: ofd(fd, fcntl.F_UNLCK),
            lambda fd: ofd(fd, fcntl.F_WRLCK)),
}


def late(kind, fd):
    """Try a lock of `kind` on fd; if it is still taken, wait for it, so
    that the next round starts clean.  Returns 1 if the try failed."""
    lock, _, trylock = KINDS[kind]
    try:
        trylock(fd)
        return 0
    except OSError as e:
        assert e.errno in (errno.EAGAIN, errno.EACCES), e
        lock(fd)
        return 1


def rounds_failing(m1, m2, kind, rounds=ROUNDS):
    """Lock and unlock on m1, then at once try on m2; returns how many of
    the tries failed."""
    lock, unlock, _ = KINDS[kind]
    a = os.open(m1.path("r", "lock"), os.O_RDWR)
    b = os.open(m2.path("r", "lock"), os.O_RDWR)
    failed = 0
    try:
        for _ in range(rounds):
            lock(a)
            unlock(a)
            failed += late(kind, b)
            unlock(b)
    finally:
        os.close(a)
        os.close(b)
    return failed


def test_flock_unlock_is_seen_by_another_mount_when_it_returns(m1, m2):
    failed = rounds_failing(m1, m2, "flock")
    assert failed == 0, f"{failed} of {ROUNDS} tries on the other mount " \
        "failed right after flock(LOCK_UN) returned"


def test_posix_unlock_is_seen_by_another_mount_when_it_returns(m1, m2):
    failed = rounds_failing(m1, m2, "posix")
    assert failed == 0, f"{failed} of {ROUNDS} tries on the other mount " \
        "failed right after F_UNLCK returned"


def test_ofd_unlock_is_seen_by_another_mount_when_it_returns(m1, m2):
    failed = rounds_failing(m1, m2, "ofd")
    assert failed == 0, f"{failed} of {ROUNDS} tries on the other mount " \
        "failed right after F_OFD_SETLK(F_UNLCK) returned"


def test_closing_a_descriptor_ends_fcntl_locks_before_close_returns(m1, m2):
    """POSIX: any close of the file by the process drops its fcntl locks;
    close() returns after their FLUSH, which waits for the delete."""
    b = os.open(m2.path("r", "lock"), os.O_RDWR)
    failed = 0
    try:
        for _ in range(ROUNDS // 3):
            a = os.open(m1.path("r", "lock"), os.O_RDWR)
            fcntl.lockf(a, fcntl.LOCK_EX)
            os.close(a)
            failed += late("posix", b)
            fcntl.lockf(b, fcntl.LOCK_UN)
    finally:
        os.close(b)
    assert failed == 0, f"{failed} of {ROUNDS // 3} tries failed right " \
        "after close() ended an fcntl lock"


def test_flock_unlock_of_an_open_write_file_is_seen_at_once(m1, m2):
    """doc/locks.md's advice for a release other hosts can rely on at once:
    `flock -u` on the descriptor of an open `write` file ends the lock its
    open took before it returns (a close alone only starts the release)."""
    failed = 0
    for _ in range(ROUNDS // 3):
        a = os.open(m1.path("w", "write"), os.O_WRONLY)
        fcntl.flock(a, fcntl.LOCK_UN)
        try:
            b = os.open(m2.path("w", "write"), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            assert e.errno == errno.EAGAIN, e
            failed += 1
            b = os.open(m2.path("w", "write"), os.O_WRONLY)
        os.close(a)
        fcntl.flock(b, fcntl.LOCK_UN)  # so the next open is not late
        os.close(b)
    assert failed == 0, f"{failed} of {ROUNDS // 3} tries failed right " \
        "after flock(LOCK_UN) on a write file returned"


def test_conversion_drops_the_old_lock_for_every_host_first(m1, m2):
    """flock(LOCK_SH -> LOCK_EX|LOCK_NB) that fails has still dropped the
    shared lock: the other mount's exclusive try succeeds at once."""
    a = os.open(m1.path("r", "lock"), os.O_RDWR)
    b = os.open(m2.path("r", "lock"), os.O_RDWR)
    c = os.open(m2.path("r", "lock"), os.O_RDWR)
    failed = 0
    try:
        for _ in range(ROUNDS // 3):
            fcntl.flock(c, fcntl.LOCK_SH)       # keeps a's upgrade waiting
            fcntl.flock(a, fcntl.LOCK_SH)
            try:
                fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("upgrade granted beside a reader")
            except BlockingIOError:
                pass
            fcntl.flock(c, fcntl.LOCK_UN)
            failed += late("flock", b)
            fcntl.flock(b, fcntl.LOCK_UN)
    finally:
        for fd in (a, b, c):
            os.close(fd)
    assert failed == 0, f"{failed} of {ROUNDS // 3} tries failed after a " \
        "failed upgrade (its shared lock was still seen)"


def test_a_failed_try_leaves_nothing_another_host_sees(m1, m2):
    """A try that fails must not make a try on another host fail once the
    holder is gone: its own node is deleted before EAGAIN comes back."""
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    a = os.open(m1.path("r", "lock"), os.O_RDWR)
    try:
        try:
            fcntl.flock(a, fcntl.LOCK_EX | fcntl.LOCK_NB)
            raise AssertionError("try granted while another mount holds")
        except BlockingIOError:
            pass
    finally:
        os.close(a)
    holder.close()
    b = os.open(m2.path("r", "lock"), os.O_RDWR)
    try:
        wait_until(lambda: try_ok(b), 10, "the holder's close to be seen")
    finally:
        os.close(b)


def try_ok(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return True


def try_flock_within(fd, seconds):
    """LOCK_EX|LOCK_NB, again until it succeeds or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def test_an_interrupted_wait_leaves_nothing_when_eintr_returns(m1, m2):
    """SIGALRM, caught by a handler, ends a blocked flock with EINTR; then
    another mount's try, once the holder has unlocked explicitly, fails
    because of the interrupted waiter's node for a moment at most: kept
    for the call again, which does not come, it holds a grant no longer
    than a tenth of a second."""
    holder_fd = os.open(m2.path("r", "lock"), os.O_RDWR)
    other = os.open(m2.path("r", "lock"), os.O_RDWR)
    a = Driver()  # the waiter, whose handler makes flock return EINTR
    try:
        a.ok(f"open a {m1.path('r', 'lock')} rw")
        for _ in range(20):
            fcntl.flock(holder_fd, fcntl.LOCK_EX)
            a.ok("alarm 0.05")
            assert a.do("flock a ex") == "err EINTR", \
                "granted while another mount holds"
            fcntl.flock(holder_fd, fcntl.LOCK_UN)
            try_flock_within(other, 1.5)
            fcntl.flock(other, fcntl.LOCK_UN)
    finally:
        a.exit()
        for fd in (holder_fd, other):
            os.close(fd)


def test_unmount_in_the_middle_of_traffic_exits_cleanly(mounts, zk, base):
    """SIGTERM while locks are taken, released and listed: the daemon
    waits for the deletes it sent, frees the texts and listings whose
    RELEASE will not come, and exits 0 with nothing left in ZooKeeper
    (mounts.finish checks the status and, in the sanitizer builds, the
    leak and race reports)."""
    m = mounts.new()
    script = (
        "for i in $(seq 200); do "
        f"exec 9>{m.path('r$((i % 3))', 'write')} 2>/dev/null || exit 0; "
        "flock -n -x 9 2>/dev/null; exec 9>&-; "
        f"cat {m.path('r$((i % 3))', 'holders')} >/dev/null 2>&1 || exit 0; "
        f"ls {m.path('r$((i % 3))')} >/dev/null 2>&1 || exit 0; "
        "done")
    workers = [subprocess.Popen(["bash", "-c", script],
                                stderr=subprocess.DEVNULL)
               for _ in range(30)]
    try:
        wait_until(lambda: m.log().count("granted") >= 100, 30,
                   "the workers to take 100 locks")
        m.stop()  # mounts.finish judges its exit status and log
    finally:
        for w in workers:
            w.kill()
            w.wait(10)
    assert not lock_nodes(zk, base), lock_nodes(zk, base)
