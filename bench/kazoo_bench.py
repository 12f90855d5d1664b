"""kazoo's Lock (or WriteLock, or a Semaphore of 2 leases) acquire/release
in a loop: the Python library zklockfs is compared with.

    python3 kazoo_bench.py HOSTS PATH N [lock|write|semaphore]

Prints the line bench/stats.c prints (first tenth left out); appends the
samples to $ZKBENCH_SAMPLES if set, as stats.c does.
"""
import logging
import os
import sys
import time

from kazoo.client import KazooClient


def main():
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in (
            [], ["lock"], ["write"], ["semaphore"]):
        sys.exit("usage: kazoo_bench.py HOSTS PATH N [lock|write|semaphore]")
    hosts, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    kind = sys.argv[4] if len(sys.argv) == 5 else "lock"
    logging.basicConfig(level=logging.ERROR)
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=15)
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
    finally:
        client.stop()
        client.close()
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
