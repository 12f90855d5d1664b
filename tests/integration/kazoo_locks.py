"""A Python service holding kazoo locks on command: the protocol of
CuratorLocks.java (see there), with kazoo's WriteLock, ReadLock and Lock
for write, read and mutex, and Semaphore(max_leases=N) for lease.

usage: kazoo_locks.py HOSTS SESSION_TIMEOUT_MS
"""
import sys
import threading

from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout

say_lock = threading.Lock()


def say(line):
    with say_lock:
        print(line, flush=True)


def hold(lock, lock_id, ms, release):
    try:
        lock.acquire(timeout=None if ms < 0 else ms / 1000)
    except LockTimeout:
        say(f"{lock_id} timeout")
        return
    except Exception as e:  # noqa: BLE001 - reported to the test
        say(f"{lock_id} error {e!r}")
        return
    say(f"{lock_id} held")
    release.wait()
    lock.release()
    say(f"{lock_id} released")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: kazoo_locks.py HOSTS SESSION_TIMEOUT_MS")
    client = KazooClient(hosts=sys.argv[1],
                         timeout=int(sys.argv[2]) / 1000)
    client.start(timeout=30)
    kinds = {"write": client.WriteLock, "read": client.ReadLock,
             "mutex": client.Lock}
    releases = {}
    say("ready")
    for line in sys.stdin:
        w = line.split()
        if len(w) == 2 and w[0] == "release" and w[1] in releases:
            releases.pop(w[1]).set()
        elif (len(w) == 4 and w[0] in kinds) or (len(w) == 5 and
                                                   w[0] == "lease"):
            lock = (client.Semaphore(w[2], max_leases=int(w[4]))
                    if w[0] == "lease" else kinds[w[0]](w[2]))
            releases[w[1]] = threading.Event()
            threading.Thread(target=hold, daemon=True, args=(
                lock, w[1], int(w[3]), releases[w[1]])).start()
        else:
            say(f"? error bad command: {line.strip()}")
    client.stop()
    client.close()


if __name__ == "__main__":
    main()
