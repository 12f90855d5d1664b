"""Byte-range fcntl locks (doc/locks.md, "Byte ranges"): a range locks the
whole resource, on every host; an owner's own ranges follow POSIX's rules
(an unlock of part of them keeps the rest; only a call of the whole
file changes the owner's lock), and its ZooKeeper lock goes with its last
range.  The owner is a lock driver on one mount, the other host another
driver, flock(1) or an opener on the second mount."""
import errno

import pytest

from harness import Locker, lock_nodes, released, wait_until
from test_core import still_waiting
from test_flock import driver_on, flock_cmd, no_answer_yet, queued

pytestmark = pytest.mark.concurrency


def kept_out(m, what, nb_range="wr 1000 1"):
    """The other host (mount m) finds the resource taken for `what`: its
    flock -n exits 1, and a try of a range (disjoint from the owner's)
    is refused."""
    assert flock_cmd("-n", m.path("r", "lock"), "true")[0] == 1, \
        f"flock -n got the resource while {what}"
    d = driver_on(m.path("r", "lock"))
    try:
        res = d.do(f"range f {nb_range} nb")
        assert res == "err EAGAIN", \
            f"a range try got {res!r} while {what}"
    finally:
        d.exit()


def free_for(m, what):
    """The other host (mount m) takes the whole resource with flock -n."""
    assert flock_cmd("-n", m.path("r", "lock"), "true")[0] == 0, \
        f"flock -n was refused once {what}"


def test_a_range_lock_keeps_the_whole_resource_from_the_other_host(
        zk, base, m1, m2):
    """A write lock of 10 bytes on one host: the other host's flock -n and
    its try of a range those bytes do not touch are both refused, and its
    F_GETLK of a range names the lock over the whole file."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 0 10")
    kept_out(m2, "another host held bytes 0-9")
    b = driver_on(m2.path("r", "lock"))
    assert b.do("range f rd 100 10 nb") == "err EAGAIN"
    assert b.ok("getlk f rd 100 10") == f"wr {a.pid} 0 0", \
        "F_GETLK of a range: the blocking lock over the whole file"
    a.ok("range f un 0 10")  # returns once the other host can take it
    b.ok("range f wr 100 10 nb")
    assert a.do("range f rd 0 1 nb") == "err EAGAIN"
    assert a.ok("getlk f wr 5 1") == f"wr {b.pid} 0 0"
    b.ok("range f un 100 10")
    assert a.ok("getlk f wr 5 1") == "unlocked"
    a.exit()
    b.exit()
    assert not lock_nodes(zk, base)


def test_unlocking_one_of_two_ranges_keeps_the_resource_until_the_last(
        zk, base, m1, m2):
    """Two write ranges of one owner are one lock node; letting go of one
    keeps the resource held for every host, letting go of the other
    releases it."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 0 10")
    a.ok("range f wr 100 10")
    queued(zk, base, 1, "one lock node for both ranges")
    a.ok("range f un 0 10")
    kept_out(m2, "bytes 100-109 were still held")
    a.ok("range f un 100 10")
    assert not lock_nodes(zk, base), "the last range let go left its node"
    free_for(m2, "the last range was let go")
    a.exit()


def test_unlocking_part_of_a_range_keeps_the_rest_locked(zk, base, m1, m2):
    """POSIX splits a range an unlock cuts through: what is left of it
    stays locked until it is let go too."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 0 100")
    a.ok("range f un 10 10")
    kept_out(m2, "bytes 0-9 and 20-99 were still held")
    a.ok("range f un 0 10")
    kept_out(m2, "bytes 20-99 were still held")
    a.ok("range f un 20 0")  # to the end of the file: the last of it
    free_for(m2, "every byte was let go")
    a.exit()


def test_a_write_range_let_go_beside_a_read_range_keeps_the_write_lock(
        zk, base, m1, m2):
    """An owner holds bytes 100-109 to write and 0-9 to read: the resource
    is write-locked.  Letting go of the write range changes nothing in
    ZooKeeper (an unlock never converts): the other host's reader stays
    out.  A read lock of the whole file then downgrades it in place (the
    fencing token stays): the reader gets in, the writer does not, until
    the owner lets go."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 100 10")
    a.ok("range f rd 0 10")  # under the write lock
    token = a.ok("read f").split("|")[0]
    assert token.isdigit(), token
    kept_out(m2, "a write range was held", nb_range="rd 1000 1")
    a.ok("range f un 100 10")
    kept_out(m2, "the write lock was kept over a read range",
             nb_range="rd 1000 1")
    a.ok("range f rd 0 0")  # the whole file: a downgrade
    assert a.ok("read f").split("|")[0] == token, \
        "the downgrade did not keep the write lock's token"
    b = driver_on(m2.path("r", "lock"))
    b.ok("range f rd 1000 1 nb")  # the reader gets in
    kept_out(m2, "a read lock was held")  # the writer does not
    b.ok("range f un 1000 1")
    kept_out(m2, "a read lock was still held")
    a.ok("range f un 0 0")
    free_for(m2, "the whole file was let go")
    a.exit()
    b.exit()


def test_a_writer_queued_behind_does_not_get_in_when_a_write_range_goes(
        zk, base, m1, m2):
    """A writer that waits on the other host while the owner holds a read
    and a write range: letting go of the write range leaves the owner its
    read range, and the writer waiting; it gets in with the last range."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 100 10")
    a.ok("range f rd 0 10")  # under the write lock
    w = Locker(m2.path("r", "write"))
    queued(zk, base, 2, "the writer to queue")
    a.ok("range f un 100 10")
    assert still_waiting(w), \
        f"the writer got in when one range of two was let go: {w.result}"
    a.ok("range f un 0 10")
    w.granted()
    w.close()
    released(zk, base)
    a.exit()


def test_a_range_wait_is_granted_when_the_other_host_lets_go(zk, base, m1,
                                                             m2):
    """F_SETLKW of a range waits for the other host's lock, and holds the
    resource once granted."""
    holder = Locker(m2.path("r", "write"))
    holder.granted()
    a = driver_on(m1.path("r", "lock"))
    a.send("range f rd 0 10")
    assert no_answer_yet(a, 0.5), "a range was granted beside a writer"
    holder.close()
    assert a.answer() == "ok"
    kept_out(m2, "the waiting range was granted")
    a.ok("range f un 0 10")
    free_for(m2, "the range was let go")
    a.exit()


def test_a_write_range_over_a_read_lock_fails_and_keeps_it(zk, base, m1,
                                                          m2):
    """A write range over the owner's read range would wait for its own
    read lock: EDEADLK, said in the log, and the read lock stays (the
    other host's reader shares it, its writer stays out)."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f rd 0 10")
    assert a.do("range f wr 100 10") == \
        f"err {errno.errorcode[errno.EDEADLK]}"
    wait_until(lambda: "zklockfs turns a read lock into a write lock only "
               "for the whole file" in m1.log(), 10,
               "the daemon to log the refused upgrade")
    kept_out(m2, "the read range was kept")
    b = driver_on(m2.path("r", "lock"))
    b.ok("range f rd 1000 1 nb")
    b.ok("range f un 1000 1")
    a.ok("range f un 0 10")
    free_for(m2, "the read range was let go")
    a.exit()
    b.exit()


def test_a_failed_try_upgrade_of_the_whole_file_leaves_no_lock(zk, base, m1,
                                                               m2):
    """A write lock of the whole file over the owner's read range is an
    upgrade: as doc/locks.md's table says for fcntl, the read lock is
    dropped first, and a try that then finds another reader fails and
    leaves nothing."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f rd 0 10")
    b = driver_on(m2.path("r", "lock"))
    b.ok("range f rd 0 10 nb")  # readers share
    assert a.do("range f wr 0 0 nb") == "err EAGAIN"
    b.ok("range f un 0 10")
    free_for(m2, "a failed upgrade left no lock, and the reader let go")
    a.exit()
    b.exit()


def test_an_upgrade_of_the_whole_file_holds_it_to_write(zk, base, m1, m2):
    """A blocking write lock of the whole file over the owner's read
    range: once the other host's reader lets go, the owner holds the
    whole file to write, and one unlock of it lets go of everything."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f rd 0 10")
    b = driver_on(m2.path("r", "lock"))
    b.ok("range f rd 0 10 nb")
    a.send("range f wr 0 0")
    assert no_answer_yet(a, 0.5), "an upgrade got in beside a reader"
    b.ok("range f un 0 10")
    assert a.answer() == "ok"
    kept_out(m2, "the upgrade was granted", nb_range="rd 1000 1")
    a.ok("range f un 0 0")
    free_for(m2, "the whole file was let go")
    a.exit()
    b.exit()


def test_closing_any_descriptor_drops_every_range(zk, base, m1, m2):
    """The POSIX rule: a close of any descriptor of the file by the owner
    ends all its ranges, and the resource is free for the other host."""
    a = driver_on(m1.path("r", "lock"))
    a.ok("range f wr 0 10")
    a.ok("range f rd 100 0")
    a.ok(f"open g {m1.path('r', 'lock')}")
    a.ok("close g")
    free_for(m2, "the owner closed a descriptor of the file")
    a.exit()
