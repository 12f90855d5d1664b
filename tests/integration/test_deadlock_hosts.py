"""Deadlocks across hosts (doc/locks.md, "Deadlocks across hosts"): a
process that holds a lock and waits, through any mount, for a lock whose
holder waits, through a chain of such holders on any hosts, for a lock it
holds, closes a cycle.  Each wait is checked once it has lasted the
deadlock timeout (a second); exactly one wait of the cycle, the one whose
check came last, fails with EDEADLK, whatever call it is (open, flock,
fcntl), twice the other hosts' session timeout (4 s here) after that
check; the others go on once it lets go.  A chain without a cycle waits as
before.  Each mount is a host: its own ZooKeeper session."""
import errno
import os
import shlex
import signal
import sys
import time

import pytest

from harness import Driver, lock_nodes, pin_records, status, wait_until

pytestmark = pytest.mark.concurrency

EDEADLK = "err " + errno.errorcode[errno.EDEADLK]


def take(d, mount, res, how):
    """d takes res's exclusive lock through mount, the way `how` says."""
    if how == "open":
        d.ok(f"open {res} {mount.path(res, 'write')} w")
    else:
        d.ok(f"open {res} {mount.path(res, 'lock')}")
        d.ok(f"flock {res} ex" if how == "flock" else f"lockf {res} wr")


def ask(zk, base, d, mount, res, how):
    """d asks res's exclusive lock and is queued behind its holder."""
    before = len(lock_nodes(zk, f"{base}/{res}"))
    if how == "open":
        d.send(f"open {res}.w {mount.path(res, 'write')} w")
    else:
        d.ok(f"open {res}.w {mount.path(res, 'lock')}")
        d.send(f"flock {res}.w ex" if how == "flock" else f"lockf {res}.w wr")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/{res}")) > before, 15,
               f"a wait queued on {res}")


def ask_checked(zk, base, d, mount, res, how):
    """ask, then wait for that wait's check: the next wait asked is
    checked after it, and so is the one that closes the cycle."""
    before = checks(mount)
    ask(zk, base, d, mount, res, how)
    wait_until(lambda: checks(mount) > before, 15,
               f"the wait on {res} to be checked")


# A report comes a check's walk and a second look (twice the session
# timeout, 4 s) after the wait that closes the cycle was checked.
REPORT_S = 30


def deadlocks(mount):
    return int(status(mount)["deadlocks"])


def checks(mount):
    return int(status(mount)["deadlock_checks"])


@pytest.mark.parametrize("hows", [("open", "open"), ("flock", "lockf"),
                                  ("lockf", "open")])
def test_two_hosts_waiting_for_each_other(zk, base, m1, m2, hows):
    """a on host 1 holds ra and asks rb; b on host 2 holds rb and asks ra:
    b's wait, the younger, fails with EDEADLK; a's goes on once b lets
    go."""
    a, b = Driver(), Driver()
    take(a, m1, "ra", hows[0])
    take(b, m2, "rb", hows[1])
    ask_checked(zk, base, a, m1, "rb", hows[1])
    ask(zk, base, b, m2, "ra", hows[0])
    assert b.answer(timeout=REPORT_S) == EDEADLK, "the cycle was not reported"
    assert a.poll() is None, "the older wait was failed too, or granted"
    assert (deadlocks(m1), deadlocks(m2)) == (0, 1)
    # The log names the cycle: each process (host~pid~start and its
    # command) and what it holds or waits in.
    [line] = [x for x in m2.log().splitlines()
              if "fails with EDEADLK: its wait closes a cycle" in x]
    assert "(python3) holds ra and waits in rb" in line and \
        "(python3) holds rb and waits in ra" in line, line
    b.exit()  # lets rb go
    assert a.answer() == "ok", "a gets rb once b lets go"
    a.exit()


def test_three_hosts(zk, base, mounts):
    m = [mounts.new(), mounts.new(), mounts.new()]
    d = [Driver(), Driver(), Driver()]
    for i in range(3):
        take(d[i], m[i], f"r{i}", "open")
    for i in range(3):
        ask_checked(zk, base, d[i], m[i], f"r{(i + 1) % 3}",
                    ("open", "flock", "lockf")[i])
    assert d[2].answer(timeout=REPORT_S) == EDEADLK
    assert d[0].poll() is None and d[1].poll() is None
    assert [deadlocks(x) for x in m] == [0, 0, 1]
    d[2].exit()
    assert d[1].answer() == "ok"
    d[1].exit()
    assert d[0].answer() == "ok"
    d[0].exit()


def test_a_chain_without_a_cycle_waits(zk, base, m1, m2):
    """a holds ra and waits for rb, whose holder b waits for rc, held by c,
    who waits for nothing: no report, however long; all go on in turn."""
    a, b, c = Driver(), Driver(), Driver()
    take(a, m1, "ra", "open")
    take(b, m2, "rb", "open")
    take(c, m1, "rc", "open")
    ask(zk, base, b, m2, "rc", "flock")
    ask(zk, base, a, m1, "rb", "open")
    # Both waits are checked (their owners hold locks), to the end.
    wait_until(lambda: checks(m1) >= 1 and checks(m2) >= 1, 15,
               "both waits to be checked for a cycle")
    assert a.poll() is None and b.poll() is None, \
        "a wait without a cycle ended"
    assert deadlocks(m1) == deadlocks(m2) == 0
    # holders names, for each waiter, the node in its way: the chain can
    # be followed by hand from any host.
    rows = [line.split() for line in
            open(m2.path("rb", "holders")).read().splitlines()]
    assert [r[0] for r in rows] == ["held", "waiting"], rows
    assert rows[1][9] == "zklockfs:waits=" + rows[0][8], rows
    c.exit()
    assert b.answer() == "ok"
    b.exit()
    assert a.answer() == "ok"
    a.exit()


def test_both_start_waiting_at_once_one_report(zk, base, m1, m2):
    """The two waits of a cycle start together, so both checks run
    together: still exactly one EDEADLK, never two and never none.  Five
    rounds; run the file in a loop for more."""
    for round_ in range(5):
        a, b = Driver(), Driver()
        take(a, m1, "ra", "open")
        take(b, m2, "rb", "open")
        before = (deadlocks(m1), deadlocks(m2))
        checked = {a: checks(m1), b: checks(m2)}
        a.send(f"open rb.w {m1.path('rb', 'write')} w")
        b.send(f"open ra.w {m2.path('ra', 'write')} w")
        answers = {}

        def answered(x):
            if x not in answers and (r := x.poll()) is not None:
                answers[x] = r
            return answers.get(x)

        failed = wait_until(
            lambda: [x for x in (a, b) if answered(x) == EDEADLK], REPORT_S,
            f"round {round_}: an EDEADLK")
        [loser] = failed
        winner = b if loser is a else a
        # The winner's own check came too, as long before as the
        # loser's: a second report would have come by now.
        mount = m1 if winner is a else m2
        wait_until(lambda: checks(mount) > checked[winner], 15,
                   f"round {round_}: the other wait's check")
        assert answered(winner) is None, \
            f"round {round_}: both waits ended: {answers}"
        after = (deadlocks(m1), deadlocks(m2))
        assert sum(after) - sum(before) == 1, (before, after)
        loser.exit()
        assert winner.answer() == "ok"
        winner.exit()
        wait_until(lambda: lock_nodes(zk, base) == [], 15,
                   "every node of the round to go")


def cycle_of_two(zk, base, mounts, timeout_ms):
    """Two new hosts with that deadlock timeout; a on the first holds ra
    and waits for rb, b on the second holds rb and waits for ra."""
    m1 = mounts.new("-o", f"deadlock_timeout_ms={timeout_ms}")
    m2 = mounts.new("-o", f"deadlock_timeout_ms={timeout_ms}")
    a, b = Driver(), Driver()
    take(a, m1, "ra", "open")
    take(b, m2, "rb", "open")
    ask_checked(zk, base, a, m1, "rb", "open")
    ask(zk, base, b, m2, "ra", "open")
    return m1, m2, a, b


def test_a_wait_given_up_before_the_check_is_no_cycle(zk, base, mounts):
    """b closes the cycle, but is killed before the deadlock timeout: its
    locks and its wait go, and a, which waited for it, is granted; no
    report on either host."""
    m1, m2, a, b = cycle_of_two(zk, base, mounts, 3000)
    b.proc.kill()  # well within the 3 s before any check
    b.proc.wait(15)
    assert a.answer() == "ok", "a gets rb once b is gone"
    assert deadlocks(m1) == deadlocks(m2) == 0
    a.exit()


def test_a_multi_lock_in_a_cycle(zk, base, m1, m2):
    """a holds x and waits for .all/ha,hb, whose ha b holds; b asks for x:
    the cycle goes through one member of a's multi-lock; b's wait, the
    youngest, fails."""
    a, b = Driver(), Driver()
    take(a, m1, "x", "open")
    take(b, m2, "ha", "open")
    checked = checks(m1)
    a.send(f"open all {m1.path('.all', 'ha,hb', 'write')} w")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/ha")) == 2, 15,
               "a's multi-lock to queue on ha")
    wait_until(lambda: checks(m1) > checked, 15, "a's wait to be checked")
    ask(zk, base, b, m2, "x", "open")
    assert b.answer(timeout=REPORT_S) == EDEADLK
    b.exit()
    assert a.answer() == "ok", "a's multi-lock holds once b let go"
    a.exit()


def test_a_checked_multi_lock_given_up_leaves_the_mount_well(zk, base, m1,
                                                             m2):
    """A multi-lock whose members' waits are being checked is given up
    (its process killed): the mount lets every member go and stays up
    (the teardown checks the daemon's exit), no record is left."""
    a, b = Driver(), Driver()
    take(a, m1, "x", "open")
    take(b, m2, "ha", "open")
    checked = checks(m1)
    a.send(f"open all {m1.path('.all', 'ha,hb', 'write')} w")
    wait_until(lambda: checks(m1) > checked, 15, "a's wait to be checked")
    a.proc.kill()
    a.proc.wait(15)
    wait_until(lambda: not pin_records(zk, base), 15,
               "the killed wait's records to go")
    assert status(m1)["state"] == "connected"
    b.exit()


def test_a_host_that_dies_in_a_cycle_is_no_report(zk, base, mounts):
    """b's host dies (its daemon killed) before any check: its session's
    end takes b's locks and wait, a is granted once ZooKeeper ends that
    session, and the surviving host reports nothing."""
    m1, m2, a, b = cycle_of_two(zk, base, mounts, 2000)
    m2.kill()  # the host is gone; its session ends after its timeout
    # a's check runs while b's nodes still stand (the session lives a few
    # seconds more), but b's host published nothing: no cycle is seen.
    assert a.answer(timeout=30) == "ok", "a gets rb once b's session ends"
    assert deadlocks(m1) == 0 and checks(m1) >= 1, status(m1)
    a.exit()
    b.proc.kill()
    b.proc.wait(15)


def tree_waits(zk, base, m1, m2, how):
    """a on host 1 holds ra and runs a child, which asks rb; b on host 2
    holds rb and asks ra.  The child holds nothing itself: the cycle goes
    through its parent.  Returns (child, b, the child's pid)."""
    a, b = Driver(), Driver()
    take(a, m1, "ra", "open")
    # a now waits for its child, which reads the commands.
    pid = int(a.ok("child"))
    take(b, m2, "rb", how)
    ask(zk, base, a, m1, "rb", how)
    ask(zk, base, b, m2, "ra", how)
    return a, b, pid


@pytest.mark.parametrize("how", ["open", "flock"])
def test_a_parent_that_waits_for_its_child_pins_nothing(zk, base, mounts,
                                                         how):
    """Under -o reentrant too: the parent holds ra and waits for its child,
    which waits for rb; b holds rb and asks ra.  The parent, not blocked
    in a lock, may still let ra go (a signal's handler, a timeout), and
    the child shares ra's open file: nothing is pinned, no report.  Once
    the parent is killed, b gets ra."""
    m1 = mounts.new("-o", "reentrant", "-o", "deadlock_timeout_ms=100")
    m2 = mounts.new("-o", "deadlock_timeout_ms=100")
    c2 = checks(m2)
    child, b, pid = tree_waits(zk, base, m1, m2, how)
    wait_until(lambda: checks(m2) > c2, 15, "b's wait to be checked")
    time.sleep(10)  # longer than a report would take; no event to await
    assert child.poll() is None and b.poll() is None, "a wait ended"
    assert deadlocks(m1) == deadlocks(m2) == 0
    os.kill(pid, signal.SIGKILL)  # the parent goes, and ra with it
    child.exit()
    assert b.answer() == "ok", "b gets ra once the tree lets go"
    b.exit()


def test_without_reentrant_a_child_is_its_own_owner(zk, base, m1, m2):
    """The same tree on a mount without -o reentrant: the child is an
    owner of its own that holds nothing, so no cycle is seen (a parent
    that waits for its child is not a wait ZooKeeper can see); b's wait is
    checked and goes on waiting."""
    checked = checks(m2)
    child, b, pid = tree_waits(zk, base, m1, m2, "open")
    wait_until(lambda: checks(m2) > checked, 15, "b's wait to be checked")
    assert child.poll() is None and b.poll() is None
    assert deadlocks(m1) == deadlocks(m2) == 0
    os.kill(pid, signal.SIGKILL)  # the parent goes on, and exits
    child.exit()
    assert b.answer() == "ok"
    b.exit()


def test_a_curator_revoke_mark_on_a_wait_hides_no_cycle(zk, base, mounts):
    """Curator's Revoker writes __REVOKE__ into whatever node it is given,
    a waiting one too (its mount keeps waiting): the cycle through it is
    still reported (a check reads no node's data)."""
    m1, m2, a, b = cycle_of_two(zk, base, mounts, 3000)
    nodes = lock_nodes(zk, f"{base}/ra")
    waiting = max(nodes, key=lambda n: zk.get(n)[1].czxid)  # b's
    zk.set(waiting, b"__REVOKE__")
    assert b.answer(timeout=REPORT_S) == EDEADLK, \
        "the cycle was not reported"
    assert deadlocks(m1) + deadlocks(m2) == 1
    b.exit()
    assert a.answer() == "ok"
    a.exit()


def test_a_job_in_the_background_is_no_cycle(zk, base, mounts, tmp_path):
    """Under -o reentrant, p holds ra and runs a child in the background
    that asks .all/ra,rc (a multi-lock never takes a lock again), then goes
    on without waiting for it: no cycle, however long
    (here longer than a report would take; there is no event to await for
    a report that must not come); the child gets the lock once p lets
    go."""
    m1 = mounts.new("-o", "reentrant", "-o", "deadlock_timeout_ms=100")
    p = Driver()
    take(p, m1, "ra", "open")
    script = ("import os, sys\n"
              "try:\n"
              f"    os.open({m1.path('.all', 'ra,rc', 'write')!r}, "
              "os.O_WRONLY)\n"
              "    print('ok', flush=True)\n"
              "except OSError as e:\n"
              "    print(e, flush=True)\n")
    job = tmp_path / "job.py"
    job.write_text(script)
    # p's child, in the background: p goes on reading its commands.
    p.ok(f"spawn {shlex.quote(sys.executable)} {shlex.quote(str(job))}")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/ra")) == 2, 15,
               "the child's multi-lock to queue behind p's lock")
    time.sleep(10)  # longer than a report would take
    assert p.do("reap nohang") == "ok running", \
        "the child's wait ended: " + "\n".join(
            x for x in m1.log().splitlines() if "deadlock" in x)
    assert deadlocks(m1) == 0
    p.ok("close ra")
    assert p.do("reap", timeout=15) == "ok ok", "the child got the lock"
    p.exit()
