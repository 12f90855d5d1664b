"""Core semantics (doc/locks.md, "Semantics"): write/read files block on open and
release on close, across two mounts (two ZooKeeper sessions)."""
import signal
import time

import pytest

from harness import Locker, lock_nodes, released

pytestmark = pytest.mark.concurrency


def still_waiting(locker, settle=0.3):
    """Negative check: the waiter has no answer after a short settle time.
    (Absence of an event can only be observed over an interval.)"""
    time.sleep(settle)
    return locker.poll_result() is None


def test_writers_on_two_mounts_exclude_each_other(m1, m2):
    a = Locker(m1.path("r", "write"))
    a.granted()
    b = Locker(m2.path("r", "write"))
    assert still_waiting(b), f"second writer was granted while the first held: {b.result}"
    a.close()
    b.granted()
    b.close()


def test_release_on_process_exit_and_on_kill_9(m1, m2):
    a = Locker(m1.path("r", "write"))
    a.granted()
    b = Locker(m2.path("r", "write"))
    assert still_waiting(b)
    a.kill(signal.SIGKILL)
    b.granted()
    c = Locker(m1.path("r", "write"))
    assert still_waiting(c)
    b.proc.stdin.close()  # EOF: the child leaves its loop and exits
    b.proc.wait(10)
    c.granted()
    c.close()


def test_readers_share_across_mounts(m1, m2):
    r1 = Locker(m1.path("r", "read"), "r")
    r2 = Locker(m2.path("r", "read"), "r")
    r1.granted()
    r2.granted()
    r1.close()
    r2.close()


def test_writer_waits_for_readers_and_later_reader_waits_for_writer(m1, m2):
    r1 = Locker(m1.path("r", "read"), "r")
    r1.granted()
    r2 = Locker(m2.path("r", "read"), "r")
    r2.granted()
    w = Locker(m1.path("r", "write"))
    assert still_waiting(w), "writer granted while readers held"
    late = Locker(m2.path("r", "read"), "r")
    assert still_waiting(late), "reader jumped ahead of a waiting writer"
    r1.close()
    assert still_waiting(w, 0.2), "writer granted while a reader still held"
    r2.close()
    w.granted()
    assert still_waiting(late, 0.2)
    w.close()
    late.granted()
    late.close()


def test_nonblocking_open_is_a_try_lock(zk, base, m1, m2):
    a = Locker(m1.path("r", "write"))
    a.granted()
    t = Locker(m2.path("r", "write"), "wn")
    assert t.wait_result() == "err EAGAIN"
    t.close()
    nodes = lock_nodes(zk, base)
    assert len(nodes) == 1, f"try-lock left a node behind: {nodes}"
    a.close()
    released(zk, base)
    free = Locker(m2.path("r", "write"), "wn")
    free.granted()
    free.close()


def test_fencing_tokens_strictly_increase(m1, m2):
    tokens = []
    for i in range(6):
        m = (m1, m2)[i % 2]
        h = Locker(m.path("fence", "write"), "rw")
        h.granted()
        line = h.command("read").split("|")[0]
        assert line.isdigit(), f"first line of read() is not a token: {line!r}"
        tokens.append(int(line))
        h.close()
    assert tokens == sorted(set(tokens)), f"tokens not strictly increasing: {tokens}"


def test_read_gives_token_node_session_mode(zk, base, m1):
    h = Locker(m1.path("a", "b", "read"), "r")
    h.granted()
    fields = h.command("read").split("|")
    assert fields[0].isdigit(), fields
    info = dict(f.split(" ", 1) for f in fields[1:])
    assert info["mode"] == "read"
    assert info["node"].startswith(base + "/a/b/_c_"), info
    assert info["session"].startswith("0x")
    data, stat = zk.get(info["node"])
    assert stat.czxid == int(fields[0]), "token is not the node's czxid"
    assert b"pid " in data and b"cmd python3" in data, data
    assert h.command("read").split("|") == fields, \
        "a second read to end of file does not give the text again"
    h.close()
