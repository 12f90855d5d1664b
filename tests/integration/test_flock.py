"""flock(2) and fcntl(2) on the lock files (doc/locks.md, "Using flock(1)"): flock(1)'s
idioms become distributed locks, across two mounts (two sessions)."""
import os
import signal
import subprocess
import time

import pytest

from harness import (Driver, Locker, exec_holder, lock_nodes, released,
                     pid_of_a_gone_holder, wait_until)
from test_core import still_waiting

pytestmark = pytest.mark.concurrency


def driver_on(path):
    """A lock driver with `path` open as its descriptor f."""
    d = Driver()
    d.ok(f"open f {path}")
    return d


def queued(zk, base, n, what):
    wait_until(lambda: len(lock_nodes(zk, base)) == n, 10, what)


def modes_queued(zk, base, writes, reads, what):
    """Wait until exactly that many write and read nodes are queued."""
    def counts():
        nodes = lock_nodes(zk, base)
        return (sum("-write-" in n for n in nodes),
                sum("-read-" in n for n in nodes))
    wait_until(lambda: counts() == (writes, reads), 10, what)


def no_answer_yet(waiter, settle=0.2):
    """Negative check: a waiting process (or a driver's blocking command)
    has not finished after a short settle time (absence of an event is
    observed over an interval)."""
    time.sleep(settle)
    return waiter.poll() is None


def flock_cmd(*args, timeout=20):
    """Run flock(1); returns (status, seconds taken)."""
    start = time.monotonic()
    status = subprocess.run(["flock", *args], timeout=timeout).returncode
    return status, time.monotonic() - start


def test_flock_n_fails_while_another_mount_holds_write(zk, base, m1, m2):
    assert flock_cmd("-n", m1.path("r", "lock"), "true")[0] == 0, "free lock refused"
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    assert flock_cmd("-n", m1.path("r", "lock"), "true")[0] == 1
    assert flock_cmd("-n", "-s", m1.path("r", "lock"), "true")[0] == 1
    holder.close()
    released(zk, base)
    assert flock_cmd("-n", m1.path("r", "lock"), "true")[0] == 0


def test_flock_w_times_out_and_leaves_nothing(zk, base, m1, m2):
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    held = lock_nodes(zk, base)
    status, took = flock_cmd("-w", "2", m1.path("r", "lock"), "true")
    assert status == 1, f"flock -w 2 under contention exited {status}"
    assert 1.5 <= took <= 3, f"flock -w 2 took {took:.2f} s"
    # Its SIGALRM is caught: the node is kept for a call again, which
    # does not come; flock(1)'s exit closes the file, which gives the
    # place up before the exit completes (test_told_first.py).
    assert lock_nodes(zk, base) == held, "the timed-out waiter's node"
    holder.close()


def test_shared_flocks_share_across_mounts_and_exclusive_waits(zk, base, m1, m2):
    a, b = driver_on(m1.path('r', 'lock')), driver_on(m2.path('r', 'lock'))
    a.ok("flock f sh")
    b.ok("flock f sh")
    assert flock_cmd("-n", "-x", m1.path("r", "lock"), "true")[0] == 1
    x = subprocess.Popen(["flock", "-x", m2.path("r", "lock"), "true"])
    queued(zk, base, 3, "flock -x to queue behind two shared holders")
    assert x.poll() is None, "flock -x granted while two shared holders"
    a.ok("flock f un")  # returns once the node is gone everywhere
    assert len(lock_nodes(zk, base)) == 2, "LOCK_UN returned, node still there"
    assert no_answer_yet(x), "flock -x granted while one shared holder"
    b.ok("close f")
    assert x.wait(15) == 0


def test_bash_exec_then_flock_fd_then_unlock(m1, m2):
    script = ('exec 9>"$1"; flock 9 && echo locked; read _; '
              'flock -u 9 && echo unlocked; read _; exit 0')
    sh = subprocess.Popen(["bash", "-c", script, "bash", m1.path("r", "lock")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, bufsize=1)
    try:
        assert sh.stdout.readline().strip() == "locked"
        assert flock_cmd("-n", m2.path("r", "lock"), "true")[0] == 1
        other = Locker(m2.path("r", "write"))
        assert still_waiting(other), "open(write) granted while bash held flock"
        sh.stdin.write("\n")
        sh.stdin.flush()
        assert sh.stdout.readline().strip() == "unlocked"
        other.granted()  # while bash still has the file open
        other.close()
    finally:
        sh.stdin.close()
        assert sh.wait(15) == 0


def test_flock_on_write_file_holds_what_open_took(m1, m2):
    # flock(1) opens write (taking the lock), then flocks it: no self-wait.
    assert flock_cmd(m1.path("r", "write"), "true", timeout=15)[0] == 0
    assert flock_cmd("-s", m1.path("r", "read"), "true", timeout=15)[0] == 0


def test_fcntl_excludes_open_write_and_getlk_names_the_holder(zk, base, m1, m2):
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    d = driver_on(m1.path('r', 'lock'))
    assert d.ok("getlk f wr") == f"wr {holder.proc.pid}"
    assert d.ok("getlk f rd") == f"wr {holder.proc.pid}"
    assert d.do("lockf f wr nb") == "err EAGAIN"
    d.send("lockf f wr")
    queued(zk, base, 2, "F_SETLKW to queue behind open(write)")
    assert no_answer_yet(d), "F_SETLKW granted while open(write) held"
    holder.close()
    assert d.answer() == "ok"
    token = d.ok("read f").split("|")[0]
    assert int(token) > 0, "read() through the fcntl owner gives no fencing token"
    # Now the driver holds: another mount's open waits, its getlk sees us.
    e = driver_on(m2.path('r', 'lock'))
    assert e.ok("getlk f rd") == f"wr {d.pid}"
    w = Locker(m2.path("r", "write"))
    assert still_waiting(w)
    # POSIX: closing any descriptor of the file drops the process's lock.
    d.ok(f"open other {m1.path('r', 'lock')}")
    d.ok("close other")
    w.granted()
    assert e.ok("getlk f wr") == f"wr {w.proc.pid}"
    w.close()
    assert e.ok("getlk f wr") == "unlocked"


def test_getlk_names_a_holder_by_its_process_not_its_pid_alone(m1):
    """A holder that exec'd is still named; one that handed its lock on
    and exited is not, nor the process that took its pid since."""
    d = Driver()
    d.ok(f"open a {m1.path('a', 'lock')}")
    d.ok(f"open b {m1.path('b', 'lock')}")
    with exec_holder(m1, "a") as holder:
        assert d.ok("getlk a wr") == f"wr {holder.pid}"
    with pid_of_a_gone_holder(m1, "b") as impostor:
        assert d.ok("getlk b wr") == "wr 0", \
            f"pid {impostor.pid} only took the gone holder's pid"
    d.exit()


def test_fcntl_lock_is_dropped_at_exit_and_by_unlock(m1, m2):
    d = driver_on(m1.path('r', 'lock'))
    d.ok("lockf f rd")
    e = driver_on(m2.path('r', 'lock'))
    e.ok("lockf f rd nb")  # readers share
    assert e.do("lockf f wr nb") == "err EAGAIN"  # converting drops e's read lock
    d.ok("lockf f un")
    e.ok("lockf f wr nb")
    e.kill()  # exit without closing: the kernel flushes
    d.ok("lockf f wr nb")
    d.ok("lockf f un")


def test_ofd_lock_lives_with_its_open_file_description(m1, m2):
    d = driver_on(m1.path('r', 'lock'))
    d.ok("ofd f wr")
    w = Locker(m2.path("r", "write"))
    d.ok(f"open g {m1.path('r', 'lock')}")
    d.ok("close g")  # not the POSIX rule: another descriptor's close keeps it
    assert still_waiting(w), "closing another descriptor dropped an OFD lock"
    d.ok("close f")
    w.granted()
    w.close()


def test_fcntl_takes_a_byte_range_and_answers_from_held_lock(m1):
    d = driver_on(m1.path('r', 'lock'))
    d.ok("range f wr 0 1 nb")  # the whole resource: test_ranges.py
    d.ok("range f un 0 1")
    d.ok(f"open w {m1.path('r', 'write')}")
    d.ok("lockf w wr nb")  # covered by the lock open() took
    assert d.ok("getlk w wr") == "unlocked"
    d.ok("close w")
    d.ok(f"open rd {m1.path('r', 'read')} r")
    assert d.do("lockf rd rd nb") == "ok"
    d.ok("close rd")


def test_killed_while_blocked_in_flock_leaves_nothing(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    waiter = subprocess.Popen(["flock", m2.path("r", "lock"), "true"])
    queued(zk, base, 2, "flock's node to queue")
    waiter.kill()
    waiter.wait(10)
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 10,
               "the killed flock's node to go")
    holder.close()
    released(zk, base)
    assert flock_cmd("-n", m2.path("r", "lock"), "true")[0] == 0


def test_upgrade_and_downgrade_follow_flock2(zk, base, m1, m2):
    a, b = driver_on(m1.path('r', 'lock')), driver_on(m2.path('r', 'lock'))
    a.ok("flock f sh")
    b.ok("flock f sh")
    # Upgrading drops the shared lock first, then queues: two holders
    # upgrading at once do not deadlock; one wins, then the other.
    a.send("flock f ex")
    modes_queued(zk, base, 1, 1, "a's upgrade to queue behind b's shared lock")
    assert no_answer_yet(a), "upgrade granted while another shared holder"
    b.send("flock f ex")
    assert a.answer() == "ok"
    assert b.poll() is None
    # Downgrading keeps a's place (test_conversions.py): its shared lock
    # at once, and b, queued for its exclusive lock, still waits.
    a.ok("flock f sh")
    modes_queued(zk, base, 1, 1, "a's shared lock ahead of b's writer")
    assert no_answer_yet(b), "b's exclusive lock beside a's shared one"
    a.ok("flock f un")
    assert b.answer() == "ok"
    b.ok("flock f sh")  # b downgrades too, and keeps a shared lock
    # A failed try at converting loses the old lock, as flock(2) does.
    a.ok("flock f sh")
    c = driver_on(m1.path('r', 'lock'))
    c.ok("flock f sh nb")
    assert a.do("flock f ex nb") == "err EAGAIN"
    assert len(lock_nodes(zk, base)) == 2, "a's shared lock survived a failed upgrade"
    for d in (a, b, c):
        d.exit()


def test_open_flock_and_fcntl_are_one_fifo_queue(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    f = driver_on(m2.path('r', 'lock'))
    f.send("flock f ex")
    queued(zk, base, 2, "the flock to queue")
    p = driver_on(m1.path('r', 'lock'))
    p.send("lockf f wr")
    queued(zk, base, 3, "the fcntl lock to queue")
    o = Locker(m2.path("r", "write"))
    queued(zk, base, 4, "the open to queue")
    assert f.poll() is None and p.poll() is None and o.poll_result() is None
    holder.close()
    assert f.answer() == "ok"
    assert p.poll() is None and o.poll_result() is None
    f.ok("flock f un")
    assert p.answer() == "ok"
    assert still_waiting(o, 0.2)
    p.ok("lockf f un")
    o.granted()
    o.close()


def test_stopped_and_continued_flock_waiter_keeps_its_place(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    first = driver_on(m2.path('r', 'lock'))
    first.send("flock f ex")
    queued(zk, base, 2, "first waiter to queue")
    first_nodes = lock_nodes(zk, base)
    second = driver_on(m1.path('r', 'lock'))
    second.send("flock f ex")
    queued(zk, base, 3, "second waiter to queue")
    os.kill(first.pid, signal.SIGSTOP)
    time.sleep(0.2)
    os.kill(first.pid, signal.SIGCONT)
    time.sleep(0.2)
    assert set(first_nodes) <= set(lock_nodes(zk, base)), "the stopped waiter lost its node"
    holder.close()
    assert first.answer() == "ok", "the stopped waiter lost its place"
    assert second.poll() is None
    first.ok("flock f un")
    assert second.answer() == "ok"
    second.ok("flock f un")


def test_interrupted_flock_returns_eintr_and_leaves_nothing(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    d = driver_on(m2.path('r', 'lock'))
    d.ok("alarm 1")
    assert d.do("flock f ex", timeout=10) == "err EINTR"
    # A caught signal: the node is kept for a second, for the call again
    # (which does not come), then deleted.
    wait_until(lambda: len(lock_nodes(zk, base)) == 1, 5,
               "the interrupted flock's node to be deleted")
    holder.close()
    released(zk, base)
    d.ok("flock f ex nb")
    assert d.ok("read f").split("|")[3] == "mode write"
    d.ok("flock f un")
    assert d.ok("read f") == "", "read() after LOCK_UN still shows a lock"


# Two lock calls of one holder at once: two processes sharing one open
# file description (the shell's `( flock 9; ... ) &` twice on an inherited
# descriptor), or two threads of one process taking fcntl locks.  Local
# locks answer the second from the first's grant; queued behind it, it
# would wait for its own holder for ever.
SAME_HOLDER = r'''
import fcntl, os, sys, threading
fd = os.open(sys.argv[2], os.O_RDWR)
if sys.argv[1].startswith("flock"):
    # flock-convert: the second asks LOCK_SH (flock(2) converts)
    ops = [fcntl.LOCK_EX, fcntl.LOCK_EX if sys.argv[1] == "flock"
           else fcntl.LOCK_SH]
    pids = []
    for op in ops:
        pid = os.fork()
        if pid == 0:
            fcntl.flock(fd, op)
            os._exit(0)
        pids.append(pid)
    print("waiting", flush=True)
    status = [os.waitpid(pid, 0)[1] for pid in pids]
    ok = status == [0, 0]
else:
    threads = [threading.Thread(target=fcntl.lockf, args=(fd, fcntl.LOCK_EX))
               for _ in range(2)]
    for t in threads:
        t.start()
    print("waiting", flush=True)
    for t in threads:
        t.join()
    ok = True
print("both returned" if ok else "a call failed", flush=True)
'''


def same_holder_both_return(zk, base, m1, m2, how):
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    p = subprocess.Popen(["/usr/bin/python3", "-c", SAME_HOLDER, how,
                          m1.path("r", "lock")],
                         stdout=subprocess.PIPE, text=True)
    try:
        queued(zk, base, 3, f"both {how} calls to queue behind the holder")
        holder.close()
        out, _ = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"the second {how} call of one holder is "
                             "still waiting 15 s after the holder let go")
    assert p.returncode == 0 and "both returned" in out, out
    wait_until(lambda: not lock_nodes(zk, base), 10,
               "every node gone once the descriptor is closed")


def test_a_flock_and_its_conversion_through_one_description_return(
        zk, base, m1, m2):
    same_holder_both_return(zk, base, m1, m2, "flock-convert")


def test_two_flocks_through_one_description_both_return(zk, base, m1, m2):
    same_holder_both_return(zk, base, m1, m2, "flock")


def test_two_threads_fcntl_locks_of_one_process_both_return(zk, base, m1, m2):
    same_holder_both_return(zk, base, m1, m2, "fcntl")
