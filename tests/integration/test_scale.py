"""Many waiters, FIFO order, and mutual exclusion under concurrency."""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import threading

from harness import (HERE, Locker, four_letter, lock_nodes, packets_received,
                     wait_until)
from sections import mark_killed

N_WAITERS = 200


def test_200_blocked_openers_do_not_block_the_mount_and_are_fifo(zk, base, m1, m2):
    holder = Locker(m2.path("q", "write"))
    holder.granted()
    waiters = []
    for i in range(N_WAITERS):
        waiters.append(Locker(m1.path("q", "write")))
        # Queue them one at a time so the expected order is known.
        wait_until(lambda: len(lock_nodes(zk, base)) == i + 2, 10,
                   f"waiter {i} to queue")
    t0 = time.monotonic()
    os.stat(m1.path("q"))
    os.stat(m1.path("other", "read"))
    os.listdir(m1.mountpoint)
    assert time.monotonic() - t0 < 2.0, "the mount stopped answering with 200 waiters"
    holder.close()
    for i, w in enumerate(waiters):
        w.granted(timeout=10)
        later = [j for j, o in enumerate(waiters[i + 1:], i + 1)
                 if o.poll_result() is not None]
        assert not later, f"waiters {later} granted before waiter {i}"
        w.close()


def total_watches(server):
    text = four_letter(server.port, "wchs")
    found = [int(w.split(":")[1]) for w in text.split()
             if w.startswith("watches:")]
    return found[0] if found else 0


def test_a_handoff_costs_one_request_however_long_the_queue(
        zookeeper, zk, base, m1, m2):
    """100 waiters of one mount queue behind a holder of another.  Each
    handoff must cost the server one request (the holder's delete): the
    next waiter learns from its watch and the listing the mount already
    has, not from a fresh listing of the whole queue (O(N^2) in all)."""
    n = 100
    holder = Locker(m2.path("chain", "write"))
    holder.granted()
    grants, lock = [], threading.Lock()

    def wait_for_lock():
        fd = os.open(m1.path("chain", "write"), os.O_RDWR)
        with lock:
            grants.append(int(os.read(fd, 64).split()[0]))
        os.close(fd)

    threads = [threading.Thread(target=wait_for_lock) for _ in range(n)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: total_watches(zookeeper) >= n, 30,
                   f"{n} waiters to watch their predecessors")
        before = packets_received(zookeeper)
        holder.close()
        for t in threads:
            t.join(30)
            assert not t.is_alive(), "a waiter was never granted"
        after = packets_received(zookeeper)
    finally:
        if any(t.is_alive() for t in threads):
            holder.kill()
    per_handoff = (after - before) / n
    # One delete per release; a few session pings may fall inside.
    assert per_handoff <= 1.3, \
        f"{per_handoff:.2f} requests per handoff, expected about 1"
    assert grants == sorted(grants), "not granted in queue order"


INVARIANT_WORKER = os.path.join(HERE, "invariant_worker.py")


def test_no_two_writers_overlap_across_mounts_with_kills(zk, base, m1, m2):
    """Six processes on two mounts loop on one lock; the critical section
    checks exclusivity with marker files (sections.py); some workers are
    killed with SIGKILL at random moments and replaced."""
    rng = random.Random(int(os.environ.get("ZKLOCKFS_SEED", "4242")))
    marker = tempfile.mkdtemp(prefix="zklockfs-cs-")
    log = tempfile.mktemp(prefix="zklockfs-cs-log-")
    deadline = time.monotonic() + 8
    procs = []

    def spawn(i):
        m = (m1, m2)[i % 2]
        return subprocess.Popen([sys.executable, INVARIANT_WORKER,
                                 m.path("inv", "write"), marker, log, "25"])

    procs = [spawn(i) for i in range(6)]
    kills = 0
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(0.05, 0.3))
        victim = rng.randrange(len(procs))
        if procs[victim].poll() is None and kills < 8:
            mark_killed(marker, procs[victim].pid)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait(10)
            kills += 1
            procs[victim] = spawn(victim)
        if all(p.poll() is not None for p in procs):
            break
    for p in procs:
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise AssertionError("a worker did not finish its loop")
    with open(log) as f:
        lines = f.read().split()
    os.unlink(log)
    shutil.rmtree(marker)  # with markers of workers killed inside
    assert "OVERLAP" not in lines, "two writers were in the critical section at once"
    assert lines.count("ENTER") >= 25, f"too little progress: {lines.count('ENTER')} entries"
