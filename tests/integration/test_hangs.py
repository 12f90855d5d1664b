"""Hangs: while ZooKeeper cannot be reached, no caller waits for it where
the answer can be given at once -- a try says EAGAIN, a signal ends a wait,
a killed process goes -- and what is left in ZooKeeper is cleaned up once
the connection is back."""
import os
import signal
import subprocess
import time

import pytest

from harness import Driver, Locker, lock_nodes, status, wait_until

pytestmark = pytest.mark.concurrency

TRY_WRITE = os.O_WRONLY | os.O_NONBLOCK


def answered_within(seconds, call, *args):
    start = time.monotonic()
    try:
        result = call(*args)
    finally:
        took = time.monotonic() - start
        assert took < seconds, f"answered after {took:.1f} s"
    return result


def test_a_try_while_disconnected_is_answered_at_once(cut_off):
    proxy, m = cut_off
    proxy.cut()
    wait_until(lambda: status(m)["state"] == "suspended", 10,
               "the mount to see the connection lost")
    for name in ("write", "read", "lease"):
        try:
            answered_within(1, os.open, m.path("r", name), TRY_WRITE)
            raise AssertionError(f"a try of {name} held while disconnected")
        except BlockingIOError:
            pass
    r = answered_within(2, subprocess.run, ["flock", "-n", m.path("r", "lock"),
                                            "true"])
    assert r.returncode == 1


def test_a_try_whose_connection_drops_midway_is_answered_at_once(zk, base,
                                                                 cut_off):
    proxy, m = cut_off
    proxy.hold()  # the try's create and listing wait in the proxy
    trier = Locker(m.path("r", "write"), "wn")
    time.sleep(0.2)  # let them reach it; nothing can answer them
    assert trier.poll_result() is None
    proxy.cut()
    res = trier.wait_result(2, "the try to be answered after the cut")
    assert res == "err EAGAIN", res
    trier.close()


def kill_a_waiter_during(outage, zk, base, mounts, m, seconds):
    """Queue a waiter on m behind another host's holder, start the
    outage, SIGKILL the waiter: it must be gone within `seconds`."""
    holder = Locker(mounts.new().path("r", "write"))  # another host
    holder.granted()
    waiter = Locker(m.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 2, 10,
               "the waiter to queue")
    outage()
    waiter.proc.send_signal(signal.SIGKILL)
    answered_within(seconds, waiter.proc.wait, 10)
    holder.close()


def test_a_killed_waiter_goes_at_once_while_disconnected(zk, base, mounts,
                                                        cut_off):
    proxy, m = cut_off

    def disconnected():
        proxy.cut()
        wait_until(lambda: status(m)["state"] == "suspended", 10,
                   "the mount to see the connection lost")
    kill_a_waiter_during(disconnected, zk, base, mounts, m, 2)


def test_a_posix_lock_holder_killed_while_disconnected_exits_at_once(
        zk, base, cut_off):
    """Its exit closes the file, and the close drops its fcntl lock: that
    unlock must not wait for ZooKeeper."""
    proxy, m = cut_off
    driver = Driver()
    driver.ok(f"open f {m.path('r', 'lock')} rw")
    driver.ok("lockf f wr")
    proxy.cut()
    wait_until(lambda: status(m)["state"] == "suspended", 10,
               "the mount to see the connection lost")
    driver.proc.send_signal(signal.SIGKILL)
    answered_within(2, driver.proc.wait, 10)


# A server that hangs without closing the connection (the proxy holds
# every byte): the client notices only after two thirds of the session
# timeout.  A try and a killed waiter are answered within a second all
# the same; their nodes go once ZooKeeper answers.

def test_a_try_is_answered_within_a_second_while_zookeeper_hangs(
        zk, base, cut_off):
    proxy, m = cut_off
    proxy.hold()
    try:
        for name in ("write", "lease"):
            try:
                answered_within(1.8, os.open, m.path("r", name), TRY_WRITE)
                raise AssertionError(f"a try of {name} held while "
                                     "ZooKeeper hangs")
            except BlockingIOError:
                pass
        r = answered_within(1.8, subprocess.run,
                            ["flock", "-n", m.path("r", "lock"), "true"])
        assert r.returncode == 1
    finally:
        proxy.cut()


def test_a_killed_waiter_goes_within_a_second_while_zookeeper_hangs(
        zk, base, mounts, cut_off):
    proxy, m = cut_off
    try:
        kill_a_waiter_during(proxy.hold, zk, base, mounts, m, 1.8)
    finally:
        proxy.cut()


def test_a_posix_lock_holder_killed_while_zookeeper_hangs_exits_in_a_second(
        zk, base, cut_off):
    """Its exit's close drops its fcntl lock: an unlock, which waits for
    ZooKeeper's delete, but no longer than a second."""
    proxy, m = cut_off
    driver = Driver()
    driver.ok(f"open f {m.path('r', 'lock')} rw")
    driver.ok("lockf f wr")
    proxy.hold()
    try:
        driver.proc.send_signal(signal.SIGKILL)
        answered_within(1.8, driver.proc.wait, 10)
    finally:
        proxy.cut()
