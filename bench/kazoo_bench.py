"""kazoo's Lock (or WriteLock, or a Semaphore of 2 leases) acquire/release
in a loop: the Python library zklockfs is compared with.  Or a lease's
handoff: one lease of 2 held throughout by a third session, two sessions
take turns at the other, timed from the holder's release to the waiter's
acquire returning.

    python3 kazoo_bench.py HOSTS PATH N
            [lock|write|semaphore|semaphore-handoff]

Prints the line bench/stats.c prints (first tenth left out); appends the
samples to $ZKBENCH_SAMPLES if set, as stats.c does.
"""
import logging
import os
import sys
import threading
import time

from kazoo.client import KazooClient

KINDS = ("lock", "write", "semaphore", "semaphore-handoff")


def connect(hosts):
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=15)
    return client


def cycles(hosts, path, n, kind):
    client = connect(hosts)
    try:
        if kind == "semaphore":
            lock = client.Semaphore(path, max_leases=2)
        else:
            lock = (client.WriteLock if kind == "write" else client.Lock)(path)
        us = []
        for _ in range(n):
            t0 = time.perf_counter()
            lock.acquire()
            lock.release()
            us.append((time.perf_counter() - t0) * 1e6)
        return us
    finally:
        client.stop()
        client.close()


def wait_queued(client, path, n):
    """Until path has n children; bounded, as a hung benchmark tells
    nothing."""
    deadline = time.monotonic() + 10
    while True:
        stat = client.exists(path)
        if (stat.numChildren if stat else 0) == n:
            return
        if time.monotonic() > deadline:
            sys.exit(f"kazoo_bench: no {n} nodes in {path} after 10 s")
        time.sleep(0.0002)


def handoffs(hosts, path, n):
    clients = [connect(hosts) for _ in range(3)]
    try:
        filler = clients[0].Semaphore(path, max_leases=2)
        filler.acquire()
        sems = [c.Semaphore(path, max_leases=2) for c in clients[1:]]
        lock_path = path + "-__lock__"  # where kazoo's Semaphore queues
        holder = 0
        sems[holder].acquire()
        us = []
        for _ in range(n):
            got = []
            nxt = sems[1 - holder]
            waiter = threading.Thread(
                target=lambda: got.append(nxt.acquire() and
                                          time.perf_counter()))
            waiter.start()
            wait_queued(clients[0], lock_path, 1)
            t0 = time.perf_counter()
            sems[holder].release()
            waiter.join(10)
            if not got:
                sys.exit("kazoo_bench: the waiter got no lease in 10 s")
            us.append((got[0] - t0) * 1e6)
            holder = 1 - holder
            wait_queued(clients[0], lock_path, 0)  # its lock let go
        sems[holder].release()
        filler.release()
        return us
    finally:
        for c in clients:
            c.stop()
            c.close()


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[4:5] and \
            sys.argv[4] not in KINDS:
        sys.exit("usage: kazoo_bench.py HOSTS PATH N [" + "|".join(KINDS) +
                 "]")
    hosts, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kind = sys.argv[4] if len(sys.argv) == 5 else "lock"
    logging.basicConfig(level=logging.ERROR)
    if kind == "semaphore-handoff":
        us = handoffs(hosts, path, n)
    else:
        us = cycles(hosts, path, n, kind)
    kept = us[n // 10:]
    dump = os.environ.get("ZKBENCH_SAMPLES")
    if dump:
        with open(dump, "a") as f:
            f.writelines(f"{x:.1f}\n" for x in kept)
    v = sorted(kept)
    print(f"median_us={v[len(v) // 2]:.1f} p99_us={v[len(v) * 99 // 100]:.1f} "
          f"mean_us={sum(v) / len(v):.1f} n={len(v)}")


if __name__ == "__main__":
    main()
