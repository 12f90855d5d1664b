"""Deadlocks across hosts, as real programs use locks (doc/locks.md,
"Deadlocks across hosts"): a wait fails with EDEADLK only when every
member of the cycle is blocked in it and nothing else could let go of what
it holds.  A thread pool whose threads wait for a lock their process's
main thread holds, a lock handed to a job in the background, a forked
child that keeps the descriptor: each wait ends by itself, and none is
failed.  Cycles through a multi-lock's held member, and cycles of twenty,
are found; a dead mount's records are no blocked owner; and a crowd of
checked waits costs at most three ZooKeeper requests each."""
import errno
import os
import select
import shlex
import signal
import subprocess
import sys
import time

import pytest

from harness import (HERE, Child, Driver, Lines, lock_nodes,
                     packets_received, pin_records, status, wait_until)

pytestmark = pytest.mark.concurrency

EDEADLK = "err " + errno.errorcode[errno.EDEADLK]


def checks(mount):
    return int(status(mount)["deadlock_checks"])


def deadlocks(mount):
    return int(status(mount)["deadlocks"])


class Worker(Child):
    """A helper script of this directory run as a child: its lines read
    with a bound, its stdin written."""

    def __init__(self, script, *args):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, script), *map(str, args)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1, start_new_session=True)
        self.lines = Lines(self.proc.stdout)  # "held" and "started" at once
        Child.alive.add(self)

    def line(self, timeout, what):
        return self.lines.next(timeout, what)

    def tell(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def end(self, timeout=30):
        self.proc.wait(timeout)
        Child.alive.discard(self)


POOL = 300


@pytest.mark.parametrize("how", ["open", "flock", "ofd"])
def test_a_thread_pool_waiting_for_its_main_thread_is_no_cycle(
        zk, base, mounts, how):
    """One process: its main thread holds x, 300 threads each ask x on a
    descriptor of their own.  As on a local file, each waits for the one
    before it and every one is granted in turn: a thread blocked in its
    own wait does not stop another from letting go.  Every wait is checked
    (the timeout is short) before the main thread lets go, and none
    fails."""
    m = mounts.new("-o", "deadlock_timeout_ms=100")
    path = m.path("x", "write" if how == "open" else "lock")
    before = checks(m)
    pool = Worker("pool_worker.py", how, path, POOL)
    assert pool.line(30, "the main thread's lock") == "held"
    assert pool.line(30, "the threads") == "started"
    wait_until(lambda: len(lock_nodes(zk, f"{base}/x")) == POOL + 1, 60,
               f"{POOL} threads to queue behind the main thread")
    wait_until(lambda: checks(m) - before >= POOL, 60,
               f"the {POOL} waits to be checked")
    pool.tell("go")
    assert pool.line(120, "every thread's turn") == f"done {POOL}"
    pool.end()
    assert deadlocks(m) == 0


class Shell(Child):
    """bash -c script, in a session of its own: a failed test kills the
    whole group (its jobs too)."""

    def __init__(self, script):
        self.proc = subprocess.Popen(
            ["bash", "-c", script], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
        Child.alive.add(self)

    def kill(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        super().kill(sig)


def test_a_lock_handed_to_a_job_in_the_background_is_no_cycle(
        zk, base, mounts, tmp_path):
    """Host 1's script takes a, starts a job in the background that keeps
    the descriptor, closes its own, and asks b; host 2 holds b and asks a.
    The job waits on nothing of ours: a frees when it ends, so neither
    wait is failed, however long it lasts."""
    m1 = mounts.new("-o", "deadlock_timeout_ms=100")
    m2 = mounts.new("-o", "deadlock_timeout_ms=100")
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    h2 = Driver()
    h2.ok(f"open b {m2.path('b', 'write')} w")
    script = (f"exec 9<>{shlex.quote(m1.path('a', 'write'))}\n"
              f"cat {shlex.quote(str(gate))} >/dev/null &\n"
              "exec 9>&-\n"
              f"exec 8<>{shlex.quote(m1.path('b', 'write'))}\n"
              "echo got b\n")
    shell = Shell(script)
    job = shell.proc
    wait_until(lambda: len(lock_nodes(zk, f"{base}/b")) == 2, 15,
               "the script to queue on b")
    c1, c2 = checks(m1), checks(m2)
    h2.send(f"open a {m2.path('a', 'write')} w")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/a")) == 2, 15,
               "host 2 to queue on a")
    wait_until(lambda: checks(m1) > c1 and checks(m2) > c2, 15,
               "both waits to be checked")
    # Longer than a report would take: a check's walk, then a second look
    # twice the session timeout (4 s) later.  No event comes of a report
    # that must not come.
    select.select([], [], [], 10)
    assert h2.poll() is None, "host 2's wait ended: " + m2.log()
    assert job.poll() is None, "the script's wait ended"
    assert deadlocks(m1) == deadlocks(m2) == 0
    with open(gate, "w"):
        pass  # the job ends: a is free
    assert h2.answer(timeout=30) == "ok", "host 2 gets a once the job ends"
    h2.exit()  # lets b go
    assert job.stdout.readline().strip() == "got b"
    job.wait(15)
    Child.alive.discard(shell)


def test_a_forked_child_that_keeps_the_lock_is_no_cycle(zk, base, mounts):
    """p holds a and forks a child that keeps the descriptor; p asks b,
    whose holder on host 2 asks a.  The child could let a go at any
    moment: no report.  Once it is killed and p too, host 2 gets a."""
    m1 = mounts.new("-o", "deadlock_timeout_ms=100")
    m2 = mounts.new("-o", "deadlock_timeout_ms=100")
    p, h2 = Driver(), Driver()
    p.ok(f"open a {m1.path('a', 'write')} w")
    child = int(p.ok("fork").split()[-1])  # keeps p's descriptors: a
    h2.ok(f"open b {m2.path('b', 'write')} w")
    c1, c2 = checks(m1), checks(m2)
    p.send(f"open b {m1.path('b', 'write')} w")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/b")) == 2, 15,
               "p to queue on b")
    h2.send(f"open a {m2.path('a', 'write')} w")
    wait_until(lambda: checks(m1) > c1 and checks(m2) > c2, 15,
               "both waits to be checked")
    select.select([], [], [], 10)  # longer than any report would take
    assert p.poll() is None and h2.poll() is None, "a wait was failed"
    assert deadlocks(m1) == deadlocks(m2) == 0
    os.kill(child, 9)
    p.kill()
    assert h2.answer(timeout=30) == "ok"
    h2.exit()


def test_a_cycle_through_a_multi_locks_held_member(zk, base, m1, m2):
    """x holds a; y's .all/a,b holds b and waits for a; then x asks b.
    The cycle goes through the member y holds while it waits: one
    EDEADLK, x's, whose check came last."""
    x, y = Driver(), Driver()
    x.ok(f"open a {m1.path('a', 'write')} w")
    c2 = checks(m2)
    y.send(f"open all {m2.path('.all', 'a,b', 'write')} w")
    wait_until(lambda: len(lock_nodes(zk, f"{base}/a")) == 2 and
               len(lock_nodes(zk, f"{base}/b")) == 1, 15,
               "y to hold b and wait for a")
    wait_until(lambda: checks(m2) > c2, 15, "y's wait to be checked")
    x.send(f"open b {m1.path('b', 'write')} w")
    assert x.answer(timeout=30) == EDEADLK, "the cycle was not reported"
    assert y.poll() is None, "y's wait ended too"
    assert deadlocks(m1) + deadlocks(m2) == 1
    x.exit()  # lets a go
    assert y.answer(timeout=15) == "ok"
    y.exit()


CYCLE = 20


def test_a_cycle_of_twenty_over_three_hosts(zk, base, mounts):
    """Twenty processes on three hosts, each holding r<i> and asking
    r<i+1>, the last asking r0: exactly one EDEADLK, the last check's."""
    ms = [mounts.new("-o", "deadlock_timeout_ms=100") for _ in range(3)]
    ds = [Driver() for _ in range(CYCLE)]
    for i, d in enumerate(ds):
        d.ok(f"open r{i} {ms[i % 3].path(f'r{i}', 'write')} w")
    for i, d in enumerate(ds):
        nxt = (i + 1) % CYCLE
        m = ms[i % 3]
        before = checks(m)
        d.send(f"open r{nxt} {m.path(f'r{nxt}', 'write')} w")
        # One at a time: each check comes before the next wait's.
        wait_until(lambda: checks(m) > before, 15, f"wait {i}'s check")
    loser = ds[-1]
    r, _, _ = select.select([loser.proc.stdout], [], [], 40)
    assert r, "the cycle was not reported: " + "\n".join(
        m.log() for m in ms)
    assert loser.answer() == EDEADLK
    assert all(d.poll() is None for d in ds[:-1]), "another wait ended"
    assert sum(deadlocks(m) for m in ms) == 1
    loser.exit()  # lets r19 go: r18's holder gets it, and so on down
    for d in reversed(ds[:-1]):
        assert d.answer(timeout=15) == "ok"
        d.exit()


def test_a_dead_hosts_records_are_no_blocked_owner(zk, base, mounts):
    """p on host 1 holds r1 and waits for r2, held by q on host 2; p's
    wait is checked (its record published).  Host 1's daemon dies: p's
    calls fail, but its session's nodes and records stand until ZooKeeper
    ends it.  q then asks r1, behind p's dead node: the cycle it reads
    runs through a mount that died, and is read again once that mount's
    session has had time to end, so q waits, and gets r1."""
    m1 = mounts.new("-o", "deadlock_timeout_ms=100")
    m2 = mounts.new("-o", "deadlock_timeout_ms=100")
    p, q = Driver(), Driver()
    p.ok(f"open r1 {m1.path('r1', 'write')} w")
    q.ok(f"open r2 {m2.path('r2', 'write')} w")
    c1 = checks(m1)
    p.send(f"open r2 {m1.path('r2', 'write')} w")
    wait_until(lambda: checks(m1) > c1 and pin_records(zk, base), 15,
               "p's wait to be checked and published")
    m1.kill()
    assert p.answer(timeout=15).startswith("err"), "p's wait outlived its mount"
    m3 = mounts.new("-o", "deadlock_timeout_ms=100")
    # The same process asks again, on the new mount, while the dead
    # session's nodes still stand.
    p.send(f"open r2 {m3.path('r2', 'write')} w")
    q.send(f"open r1 {m2.path('r1', 'write')} w")
    assert q.answer(timeout=40) == "ok", \
        "q was failed, or never got r1: " + m2.log()
    assert deadlocks(m2) == deadlocks(m3) == 0
    q.exit()
    assert p.answer(timeout=15) == "ok"
    p.exit()


CROWD = 100


def crowd_checks_requests(zookeeper, zk, base, mounts, timeout_ms):
    """ZooKeeper requests while the waits of a crowd are checked: CROWD
    processes that each hold a lock of their own and wait for one busy
    lock, through one mount; counted over the same window after the crowd
    queued (what the mounts send on their own, pings and the jeopardy
    heartbeat, alike in both)."""
    m = mounts.new("-o", f"deadlock_timeout_ms={timeout_ms}")
    # Resources of its own: each run makes them anew, as the other does.
    tag = f"t{timeout_ms}-"
    holder = Driver()
    holder.ok(f"open busy {m.path(tag + 'busy', 'write')} w")
    crowd = Worker("crowd_worker.py", m.mountpoint, CROWD, tag)
    assert crowd.line(60, "the crowd's own locks") == "held"
    wait_until(lambda: int(status(m)["waiting"]) >= CROWD, 60,
               "the crowd to queue on the busy lock")
    # The window opens once the queueing's own requests are done (creates,
    # listings, watches: well within a second) and closes when every check
    # is done: each comes the timeout (5 s) after its wait queued, so
    # every one falls in it.  .status costs no request.
    start = time.monotonic()
    time.sleep(1.5)
    before = packets_received(zookeeper)
    assert checks(m) == 0, "a check came before the window: queued slowly"
    time.sleep(max(0.0, start + 7 - time.monotonic()))
    requests = packets_received(zookeeper) - before
    if timeout_ms:
        assert checks(m) >= CROWD, "a wait was not checked in the window"
    assert len(pin_records(zk, base)) == (CROWD if timeout_ms else 0), \
        "a pin of the crowd's was not published"
    holder.exit()
    assert crowd.line(120, "the crowd's turns") == f"done {CROWD}"
    crowd.end()
    wait_until(lambda: not pin_records(zk, base), 15,
               "every pin's record deleted as its wait ended")
    return requests


def test_a_crowd_of_checked_waits_costs_three_requests_each(
        zookeeper, zk, base, mounts):
    """Each waiting process that holds a lock publishes its pin and reads
    the records once (no queue: no record pins a node in the busy queue),
    and deletes the pin when its wait ends: three requests, however long
    it waits, and none on a timer.  Detection off is the baseline of the
    same window (the checks' two requests a wait); the deletes, one a
    record, are seen done.  Before issue 54 a crowd cost some 36 a wait."""
    off = crowd_checks_requests(zookeeper, zk, base, mounts, 0)
    on = crowd_checks_requests(zookeeper, zk, base, mounts, 5000)
    print(f"the crowd's checks: {on} requests with detection, {off} "
          "without")
    # Its pin's create and the records' listing a wait, the records'
    # directory once; a few pings.
    assert on - off <= 2 * CROWD + 20, \
        f"{on} requests with detection, {off} without, while the waits " \
        f"were checked: {(on - off) / CROWD:.2f} a wait"
