"""-o reentrant on real mounts: a lock asked again by its holder's process,
or by a descendant of it, is granted at once with no new node and
counted; the lock ends with the last of those holds; a write lock asked
over a held read lock is EDEADLK.  Anyone else, another host or an
unrelated process of the same host, still waits.  Without the option
nothing changes."""
import errno
import os
import select
import signal
import subprocess
import sys

import pytest

from harness import LOCKER, Driver, Locker, lock_nodes, running, wait_until
from test_core import still_waiting

pytestmark = pytest.mark.concurrency

EDEADLK = "err " + errno.errorcode[errno.EDEADLK]  # EDEADLOCK on Linux


@pytest.fixture
def rm(mounts):
    """A mount with -o reentrant."""
    return mounts.new("-o", "reentrant")


def nodes(zk, base, count):
    """Wait until the resource has exactly count lock nodes."""
    wait_until(lambda: len(lock_nodes(zk, base)) == count, 15,
               f"{count} lock nodes")
    return lock_nodes(zk, base)


def holders_tool(mount):
    with open(mount.path("r", "holders")) as f:
        return [line.split(" ")[9] for line in f.read().splitlines()]


def test_a_second_open_by_the_holder_is_counted_and_ends_with_the_last(
        zk, base, rm, m2):
    holder = Driver()
    holder.ok(f"open a {rm.path('r', 'write')} w")
    other_host = Locker(m2.path("r", "write"))
    nodes(zk, base, 2)
    holder.ok(f"open b {rm.path('r', 'write')} w")
    holder.ok(f"open c {rm.path('r', 'read')} r")
    assert len(lock_nodes(zk, base)) == 2, "no new node for a hold again"
    tools = holders_tool(rm)
    assert tools[0] == "zklockfs:holds=3" and \
        tools[1].startswith("zklockfs:waits="), tools
    holder.ok("close a")
    holder.ok("close c")
    assert still_waiting(other_host), "the lock ended before its last hold"
    assert holders_tool(rm)[0] == "zklockfs"
    holder.ok("close b")
    other_host.granted()
    other_host.close()
    holder.exit()


def test_a_childs_flock_takes_its_parents_lock_and_a_stranger_waits(
        zk, base, rm):
    """The issue's nested scripts: a script holds write through fd 9 and
    runs another that takes the resource's lock with flock(1)."""
    stranger = Driver()
    stranger.ok(f"open f {rm.path('r', 'lock')}")
    script = (f"exec 9>{rm.path('r', 'write')} || exit 9\n"
              f"bash -c 'flock {rm.path('r', 'lock')} -c \"echo inner\"'\n"
              "echo $? >&2\n"
              "read go\n")
    with running(["bash", "-c", script], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True) as outer:
        assert outer.stdout.readline().strip() == "inner"
        assert outer.stderr.readline().strip() == "0"
        nodes(zk, base, 1)
        assert stranger.do("flock f ex nb") == "err EAGAIN", \
            "an unrelated process got the lock beside the script"
        outer.stdin.write("go\n")
        outer.stdin.flush()
        assert outer.wait(15) == 0
    nodes(zk, base, 0)
    stranger.ok("flock f ex nb")
    stranger.exit()


def test_a_childs_fcntl_lock_is_counted_too(zk, base, rm):
    lock = rm.path("r", "lock")
    child = ("import fcntl, os\n"
             f"fd = os.open({lock!r}, os.O_RDWR)\n"
             "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "print('child ok')\n")
    parent = ("import fcntl, os, subprocess, sys\n"
              f"fd = os.open({lock!r}, os.O_RDWR)\n"
              "fcntl.lockf(fd, fcntl.LOCK_EX)\n"
              f"r = subprocess.run([sys.executable, '-c', {child!r}],\n"
              "                   capture_output=True, text=True, timeout=15)\n"
              "print(r.stdout.strip() or r.stderr.strip().splitlines()[-1],\n"
              "      flush=True)\n"
              "sys.stdin.readline()\n")
    with running(["python3", "-c", parent], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "child ok"
        nodes(zk, base, 1)
        stranger = Driver()
        stranger.ok(f"open f {lock}")
        assert stranger.do("lockf f wr nb") == "err EAGAIN", \
            "a process outside the holder's tree took its lock"
        stranger.exit()
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(15) == 0
    nodes(zk, base, 0)


def test_a_write_lock_over_a_read_lock_of_the_tree_is_edeadlk(zk, base, rm):
    holder = Driver()
    holder.ok(f"open r {rm.path('r', 'read')} r")
    assert holder.do(f"open w {rm.path('r', 'write')} w") == EDEADLK
    holder.ok(f"open l {rm.path('r', 'lock')}")
    assert holder.do("flock l ex") == EDEADLK
    assert holder.do("lockf l wr") == EDEADLK
    holder.ok("flock l sh")  # read over read: taken again
    nodes(zk, base, 1)
    holder.exit()
    nodes(zk, base, 0)


def test_leases_are_not_reentrant(zk, base, rm):
    holder = Driver()  # one lease (no limit set)
    holder.ok(f"open a {rm.path('r', 'lease')} w")
    holder.send(f"open b {rm.path('r', 'lease')} w")
    nodes(zk, base, 2)
    assert holder.poll() is None, "a second lease was granted at once"
    holder.proc.kill()
    holder.proc.wait(15)
    nodes(zk, base, 0)


def test_without_the_option_a_second_open_waits(zk, base, m1):
    holder = Driver()
    holder.ok(f"open a {m1.path('r', 'write')} w")
    holder.send(f"open b {m1.path('r', 'write')} w")
    nodes(zk, base, 2)
    assert holder.poll() is None, "granted beside its own first lock"
    holder.proc.kill()
    holder.proc.wait(15)
    nodes(zk, base, 0)


def test_a_downgrade_of_a_shared_hold_leaves_the_others_write_lock(
        zk, base, rm, m2):
    holder = Driver()
    holder.ok(f"open a {rm.path('r', 'write')} w")
    holder.ok(f"open b {rm.path('r', 'write')} w")
    write_node, = nodes(zk, base, 1)
    holder.ok("flock b sh")  # taken again, from a's write lock
    assert lock_nodes(zk, base) == [write_node], \
        "a's write lock was replaced under it"
    other_host = Locker(m2.path("r", "read"), "r")
    assert still_waiting(other_host), "a reader beside a's write lock"
    holder.ok("close a")
    assert still_waiting(other_host, 0.2), "b's hold ended with a's"
    holder.ok("close b")
    other_host.granted()
    other_host.close()
    holder.exit()


def test_a_holder_that_passed_its_descriptor_on_holds_nothing(zk, base, rm):
    """The shell takes write, leaves fd 9 to a background job and closes
    its own: its next flock is not the job's lock again."""
    script = (f"exec 9>{rm.path('r', 'write')} || exit 9\n"
              "sleep 30 &\n"
              "exec 9>&-\n"
              f"flock -n {rm.path('r', 'lock')} -c 'echo second holder'\n"
              "echo rc=$?\n"
              "kill $!\n")
    res = subprocess.run(["bash", "-c", script], capture_output=True,
                         text=True, timeout=30)
    assert res.stdout.split() == ["rc=1"], res.stdout
    nodes(zk, base, 0)


def test_a_downgrade_by_one_of_several_owners_keeps_the_write_lock(
        zk, base, rm, m2):
    holder = Driver()
    holder.ok(f"open a {rm.path('r', 'lock')}")
    holder.ok("flock a ex")
    holder.ok(f"open b {rm.path('r', 'write')} w")  # taken again
    write_node, = nodes(zk, base, 1)
    holder.ok("flock a sh nb")  # b still holds write: nothing changes
    assert lock_nodes(zk, base) == [write_node]
    reader = Locker(m2.path("r", "read"), "r")
    assert still_waiting(reader), "a reader beside b's write lock"
    holder.exit()
    reader.granted()
    reader.close()


def test_getlk_counts_a_lock_others_hold_too(zk, base, rm):
    """Its own read lock, held by a second description too, blocks the
    caller's write: F_GETLK says so, as F_SETLK would find."""
    holder = Driver()
    holder.ok(f"open a {rm.path('r', 'lock')}")
    holder.ok("lockf a rd")
    holder.ok(f"open b {rm.path('r', 'read')} r")  # taken again
    assert holder.ok("getlk a wr").startswith("rd"), "the shared read lock"
    assert holder.ok("getlk a rd") == "unlocked"
    holder.exit()


def test_a_lost_lock_of_several_owners_signals_each(zk, base, mounts):
    """The first owner let go and is gone; the one that took the lock
    again holds it still, and is the one told when another client deletes
    the node (whose data names the first)."""
    m = mounts.new("-o", "reentrant", "-o", "on_lost=signal:USR1")
    write = m.path("r", "write")
    script = (f"exec 9>{write} || exit 9\n"
              # Its input a pipe that stays open (a job's is /dev/null),
              # not holding the shell's own descriptor of it (9>&-).
              f"{{ sleep 300 | {sys.executable} {LOCKER} {write} w "
              "--trap SIGUSR1; } 9>&- &\n"
              "read go\n"
              "exec 9>&-\n"
              "echo parent-let-go\n")  # and exits: nobody is named now
    with running(["bash", "-c", script], stdin=subprocess.PIPE,
                 stdout=subprocess.PIPE, text=True,
                 start_new_session=True) as sh:
        assert sh.stdout.readline().strip() == "ok", "the child took it"
        node, = nodes(zk, base, 1)
        assert holders_tool(m) == ["zklockfs:holds=2"]
        sh.stdin.write("go\n")
        sh.stdin.flush()
        assert sh.stdout.readline().strip() == "parent-let-go"
        assert sh.wait(15) == 0
        wait_until(lambda: holders_tool(m) == ["zklockfs"], 15,
                   "one owner left")
        zk.delete(node)
        ready, _, _ = select.select([sh.stdout], [], [], 15)
        assert ready, "the holder left was not signalled within 15 s"
        assert sh.stdout.readline().strip() == "signal SIGUSR1"
        os.killpg(sh.pid, signal.SIGKILL)
