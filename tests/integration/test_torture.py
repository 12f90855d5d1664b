"""Torture: three mounts, twelve workers taking random kinds of locks on
one resource, kill -9 of holders and waiters, waits cut short by timers,
daemon restarts.  The invariant checker (sections.py) sees every critical
section; no two writers, and no reader with a writer, may ever overlap.

Bounded (ZKLOCKFS_TORTURE_SECONDS, default 20) and seedable
(ZKLOCKFS_SEED); the seed is printed and named in every failure.
Longer on demand:  ZKLOCKFS_TORTURE_SECONDS=600 meson test -C build integration
  --test-args '-k torture -s'"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from sections import mark_killed

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "torture_worker.py")
WORKERS_PER_MOUNT = 4


def stuck_report(pid, mount):
    """What a worker that did not finish was doing, for the failure message:
    the kernel's view of its wait, the resource's queue as its mount sees
    it, and the end of that daemon's log."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError as e:
            return f"({e.strerror})"
    return (f"wchan {read(f'/proc/{pid}/wchan')}; "
            f"stack:\n{read(f'/proc/{pid}/stack')}\n"
            f"holders:\n{read(mount.path('t', 'holders'))}\n"
            f"log tail:\n" + "\n".join(mount.log().splitlines()[-20:]))


def test_torture(mounts):
    seconds = float(os.environ.get("ZKLOCKFS_TORTURE_SECONDS", "20"))
    seed = int(os.environ.get("ZKLOCKFS_SEED", random.randrange(1 << 30)))
    print(f"torture: {seconds:.0f} s, ZKLOCKFS_SEED={seed}")
    rng = random.Random(seed)
    sections = tempfile.mkdtemp(prefix="zklockfs-torture-")
    log = os.path.join(sections, "log")
    os.mkdir(os.path.join(sections, "cs"))
    end = time.time() + seconds
    ms = [mounts.new() for _ in range(3)]
    workers = {}  # slot -> Popen; slot // WORKERS_PER_MOUNT is its mount

    def spawn(slot):
        m = ms[slot // WORKERS_PER_MOUNT]
        workers[slot] = subprocess.Popen(
            [sys.executable, WORKER, m.mountpoint, "t",
             os.path.join(sections, "cs"), log, str(end), str(rng.randrange(1 << 30))])

    def kill(slot):
        mark_killed(os.path.join(sections, "cs"), workers[slot].pid)
        workers[slot].kill()
        workers[slot].wait(10)

    try:
        for slot in range(3 * WORKERS_PER_MOUNT):
            spawn(slot)
        kills = restarts = 0
        next_restart = time.time() + 4
        while time.time() < end - 1:
            time.sleep(rng.uniform(0.05, 0.3))
            if time.time() >= next_restart:
                # Restart a daemon: its workers die first, as they would with
                # their host; otherwise they would hold on past the lock.
                i = rng.randrange(3)
                for slot in range(i * WORKERS_PER_MOUNT, (i + 1) * WORKERS_PER_MOUNT):
                    kill(slot)
                problem = ms[i].exit_problem(ms[i].stop())
                assert not problem, f"seed {seed}: {problem}"
                ms[i] = mounts.new()
                for slot in range(i * WORKERS_PER_MOUNT, (i + 1) * WORKERS_PER_MOUNT):
                    spawn(slot)
                restarts += 1
                next_restart = time.time() + rng.uniform(3, 6)
            else:
                slot = rng.choice(list(workers))
                if workers[slot].poll() is None:
                    kill(slot)  # holder or waiter, whatever it is doing now
                    kills += 1
                    spawn(slot)
        for slot, w in workers.items():
            try:
                w.wait(60)
            except subprocess.TimeoutExpired:
                where = stuck_report(w.pid, ms[slot // WORKERS_PER_MOUNT])
                w.kill()
                raise AssertionError(
                    f"seed {seed}: worker {slot} did not finish\n{where}")
    finally:
        for w in workers.values():  # a failed check leaves none behind
            if w.poll() is None:
                w.kill()
                w.wait(10)
    with open(log) as f:
        lines = f.read().splitlines()
    shutil.rmtree(sections)
    bad = [line for line in lines if not line.startswith("ENTER")]
    entered = len(lines) - len(bad)
    print(f"torture: {entered} sections, {kills} kills, {restarts} restarts")
    assert not bad, f"seed {seed}: " + "\n".join(bad[:20])
    assert all(w.returncode == 0 for w in workers.values()), \
        f"seed {seed}: {[w.returncode for w in workers.values()]}"
    assert entered >= seconds * 5, f"seed {seed}: too little progress ({entered})"
    # The mounts fixture then checks that no lock node is left.
