"""Semaphores under load: a queue of leases over two mounts is served
first come, first served, and a handoff costs the server a small constant
number of requests, whatever the length of the queue."""
import os
import queue
import threading

import pytest

from harness import wait_until
from test_lease import leases_of, write_limit
from test_scale import packets_received, total_watches

LIMIT = 2


class LeaseThread(threading.Thread):
    """Opens path for writing (waiting for a lease), reports its fencing
    token on `granted`, holds the lease until release() and closes."""

    def __init__(self, path, granted):
        super().__init__(daemon=True)
        self.path, self.granted = path, granted
        self.go = threading.Event()

    def run(self):
        fd = os.open(self.path, os.O_RDWR)
        try:
            self.token = int(os.read(fd, 64).split()[0])
            self.granted.put(self)
            self.go.wait(120)
        finally:
            os.close(fd)

    def release(self):
        self.go.set()
        self.join(30)
        assert not self.is_alive(), f"lease {self.token} did not close"


def serve_queue(zookeeper, zk, base, m1, m2, n):
    """LIMIT holders, then n waiters alternating between the two mounts;
    release the oldest holder, one at a time, and check that the lease
    goes to the oldest waiter.  Returns server requests per handoff."""
    res = f"lease-{n}"
    write_limit(m1, res, str(LIMIT))
    granted = queue.Queue()
    mounts = (m1, m2)
    holders = []
    for i in range(LIMIT):
        t = LeaseThread(mounts[i % 2].path(res, "lease"), granted)
        t.start()
        holders.append(granted.get(timeout=30))
    waiters = [LeaseThread(mounts[i % 2].path(res, "lease"), granted)
               for i in range(n)]
    try:
        for t in waiters:
            t.start()
        wait_until(lambda: len(leases_of(zk, base, res)) == LIMIT + n, 60,
                   f"{n} waiters to queue")
        wait_until(lambda: total_watches(zookeeper) >= n, 60,
                   f"{n} waiters to set their watches")
        # Herd-free: each waiter watches its predecessor, the first one
        # the LIMIT holders, each session the resource's data once and
        # the table of hold limits (maxhold) once; and each waiter its own
        # node (a deletion by another client fails it), which nobody
        # else's change fires.
        watches = total_watches(zookeeper)
        assert watches <= 2 * n + LIMIT + 2 + 2 + 2, \
            f"{watches} watches for {n} waiting leases: a herd"
        assert granted.empty(), "a lease granted beyond the limit"
        # Queue order is sequence order, and so czxid (token) order.
        expected = sorted(zk.get(f"{base}/{res}/{name}")[1].czxid
                          for name in zk.get_children(f"{base}/{res}")
                          if "-lease-" in name)[LIMIT:]
        before = packets_received(zookeeper)
        for want in expected:
            holders.pop(0).release()
            got = granted.get(timeout=30)
            assert got.token == want, \
                f"lease {got.token} granted before the older {want}"
            assert granted.empty(), "one return granted two leases"
            holders.append(got)
        after = packets_received(zookeeper)
    finally:
        for t in holders + waiters:
            t.go.set()
    for t in holders:
        t.release()
    return (after - before) / n


@pytest.mark.concurrency
def test_leases_are_fifo_across_hosts_and_a_handoff_costs_the_same_for_20_and_1000(
        zookeeper, zk, base, m1, m2):
    short = serve_queue(zookeeper, zk, base, m1, m2, 20)
    long = serve_queue(zookeeper, zk, base, m1, m2, 1000)
    # A return: the holder's delete, the grant's mark, the get that
    # watches the granted node again after its mark, and the next
    # waiter's gets of the LIMIT holders ahead of it (some already
    # watched); session pings fall inside too.
    assert short <= LIMIT + 4, f"{short:.2f} requests per handoff with 20"
    assert long <= LIMIT + 4, f"{long:.2f} requests per handoff with 1000"
    assert long <= short + 1, \
        f"handoffs cost more with a longer queue: {short:.2f} -> {long:.2f}"
    print(f"requests per handoff: {short:.2f} with 20 queued, "
          f"{long:.2f} with 1000")
