"""A thread pool on one lock, for test_deadlock_owners.py.

    pool_worker.py open|flock|ofd PATH N

The main thread takes PATH's lock (opens `write`, or flock / F_OFD_SETLKW
on a descriptor of `lock`) and prints "held"; then N threads each take it
on a descriptor of their own, and it prints "started".  A line on stdin
makes the main thread let go; each thread, once it holds, lets go too,
and the last line says how many threads got the lock, and what the others
got instead: "done 300", or "done 236 EDEADLK EDEADLK ...".
"""
import errno
import fcntl
import os
import struct
import sys
import threading

MODE, PATH, N = sys.argv[1], sys.argv[2], int(sys.argv[3])


def take():
    if MODE == "open":
        return os.open(PATH, os.O_WRONLY)
    fd = os.open(PATH, os.O_RDWR)
    if MODE == "flock":
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW,
                    struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    return fd


results, results_lock = [], threading.Lock()


def worker():
    try:
        os.close(take())
        got = "ok"
    except OSError as e:
        got = errno.errorcode.get(e.errno, str(e.errno))
    with results_lock:
        results.append(got)


held = take()
print("held", flush=True)
threads = [threading.Thread(target=worker) for _ in range(N)]
for t in threads:
    t.start()
print("started", flush=True)
sys.stdin.readline()
os.close(held)
for t in threads:
    t.join()
print("done", results.count("ok"),
      *sorted(r for r in results if r != "ok"), flush=True)
