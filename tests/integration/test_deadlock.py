"""Deadlock detection for fcntl locks on one mount, as fcntl(2) does
locally (LTP's fcntl17): an F_SETLKW that would wait, through a chain of
this mount's lock owners and their waits, for a lock its own owner holds
fails with EDEADLK at once.  What is not detected: a cycle through
another host."""
import errno

import pytest

from harness import Driver, lock_nodes, wait_until

pytestmark = pytest.mark.concurrency

EDEADLK = "err " + errno.errorcode[errno.EDEADLK]  # EDEADLOCK on Linux


def holding(mount, res, kind="wr"):
    d = Driver()
    d.ok(f"open {res} {mount.path(res, 'lock')}")
    d.ok(f"lockf {res} {kind}")
    return d


def waiting(zk, base, d, mount, res, kind="wr"):
    """d asks res's lock and is queued behind its holder."""
    before = len(lock_nodes(zk, f"{base}/{res}"))
    d.ok(f"open {res} {mount.path(res, 'lock')}")
    d.send(f"lockf {res} {kind}")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/{res}")) > before, 15,
               f"a wait queued on {res}")


def test_two_owners_waiting_for_each_other_get_edeadlk(zk, base, m1):
    a, b = holding(m1, "r1"), holding(m1, "r2")
    waiting(zk, base, a, m1, "r2")
    b.ok(f"open r1 {m1.path('r1', 'lock')}")
    assert b.do("lockf r1 wr") == EDEADLK, "the cycle was not refused"
    assert len(lock_nodes(zk, f"{base}/r1")) == 1, "nothing queued"
    b.ok("lockf r2 un")
    assert a.answer() == "ok", "a gets r2 once b lets go"
    for d in (a, b):
        d.exit()


def test_a_cycle_of_three_is_found(zk, base, m1):
    a, b, c = holding(m1, "r1"), holding(m1, "r2"), holding(m1, "r3")
    waiting(zk, base, a, m1, "r2")
    waiting(zk, base, b, m1, "r3")
    c.ok(f"open r1 {m1.path('r1', 'lock')}")
    assert c.do("lockf r1 wr") == EDEADLK
    c.ok("lockf r3 un")
    assert b.answer() == "ok"
    b.ok("lockf r2 un")
    assert a.answer() == "ok"
    for d in (a, b, c):
        d.exit()


def test_a_chain_that_does_not_come_back_waits(zk, base, m1):
    a, b = holding(m1, "r1"), holding(m1, "r2")
    waiting(zk, base, a, m1, "r2")
    c = Driver()
    waiting(zk, base, c, m1, "r1")  # waits for a, who waits for b
    assert c.poll() is None, "no cycle: c must wait, not fail"
    b.ok("lockf r2 un")
    assert a.answer() == "ok"
    a.ok("lockf r1 un")
    assert c.answer() == "ok"
    for d in (a, b, c):
        d.exit()


def test_a_read_lock_does_not_block_a_reader(zk, base, m1):
    """a holds read r1 and waits for b's read r2 to write it; b's read
    lock of r1 shares a's: no wait, no cycle."""
    a, b = holding(m1, "r1", "rd"), holding(m1, "r2", "rd")
    waiting(zk, base, a, m1, "r2")
    b.ok(f"open r1 {m1.path('r1', 'lock')}")
    b.ok("lockf r1 rd")
    b.ok("lockf r2 un")
    assert a.answer() == "ok"
    for d in (a, b):
        d.exit()


def test_a_cycle_through_another_host_is_not_detected(zk, base, m1, m2):
    a, b = holding(m1, "r1"), holding(m2, "r2")
    waiting(zk, base, a, m1, "r2")
    waiting(zk, base, b, m2, "r1")
    assert a.poll() is None and b.poll() is None, \
        "each waits: neither mount sees the other's half of the cycle"
    b.proc.kill()  # what an operator, or a timeout, does
    b.proc.wait(15)
    assert a.answer() == "ok"
    a.exit()


def test_a_cycle_is_found_on_a_mount_busy_with_other_locks(zk, base, m1):
    """Many unrelated fcntl locks do not hide a cycle of two."""
    busy = Driver()
    for i in range(300):
        busy.ok(f"open x{i} {m1.path(f'x{i}', 'lock')}")
        busy.ok(f"lockf x{i} wr")
    a, b = holding(m1, "r1"), holding(m1, "r2")
    waiting(zk, base, a, m1, "r2")
    b.ok(f"open r1 {m1.path('r1', 'lock')}")
    assert b.do("lockf r1 wr") == EDEADLK
    b.ok("lockf r2 un")
    assert a.answer() == "ok"
    for d in (a, b, busy):
        d.exit()


def test_a_wait_asked_again_after_a_signal_is_checked_again(zk, base, m1):
    """a's wait for r2 is interrupted by a caught signal (its place kept);
    meanwhile b waits for a's r1; a asking again would close the cycle."""
    a, b = holding(m1, "r1"), holding(m1, "r2")
    a.ok(f"open r2 {m1.path('r2', 'lock')}")
    a.ok("alarm 1")
    assert a.do("lockf r2 wr") == "err EINTR"
    waiting(zk, base, b, m1, "r1")
    assert a.do("lockf r2 wr") == EDEADLK
    a.ok("lockf r1 un")
    assert b.answer() == "ok"
    for d in (a, b):
        d.exit()
