"""One party of a lock library test: take a lock on PATH the way a
library or a Python file mode does, say so, hold it until stdin closes,
let it go.

usage: libparty.py HOW PATH [try]
       libparty.py HOW PATH count N COUNTER
  HOW: fasteners-read, fasteners-write (InterProcessReaderWriterLock),
       fasteners-lock (InterProcessLock), portalocker-a, portalocker-w
       (portalocker.Lock(mode='a' or 'w')), filelock (filelock.FileLock),
       or a Python file mode
       (a+, r+, w+) that the open alone locks with
  try: one attempt that does not wait (else it waits); not for file modes
Prints "held" once it holds (for a file mode, then "seek TOKEN-LINE": the
first line read after seek(0)), or "busy" if `try` found it held; then,
after stdin closes, "released".  With `count`, N times: take the lock,
add one to the number in the local file COUNTER, let go, print "did K".
"""
import os
import sys
import time


def fasteners_lock(path, write, wait):
    import fasteners
    if write is None:
        lock = fasteners.InterProcessLock(path)
        if not lock.acquire(blocking=wait, timeout=30 if wait else None):
            return None
        return lock.release
    lock = fasteners.InterProcessReaderWriterLock(path)
    take = lock.acquire_write_lock if write else lock.acquire_read_lock
    if not take(blocking=wait, timeout=30 if wait else None):
        return None
    return lock.release_write_lock if write else lock.release_read_lock


def portalocker_lock(path, mode, wait):
    import portalocker
    lock = portalocker.Lock(path, mode=mode, timeout=30 if wait else 0,
                            fail_when_locked=not wait)
    try:
        lock.acquire()
    except portalocker.exceptions.BaseLockException:  # AlreadyLocked too
        return None
    return lock.release


def filelock_lock(path, wait):
    import filelock
    lock = filelock.FileLock(path, timeout=30 if wait else 0)
    try:
        lock.acquire()
    except filelock.Timeout:
        return None
    return lock.release


def file_mode(path, mode):
    """open() in a buffered mode that reads and writes: the open takes the
    lock (on `write`, `read`, `lease`), and seek(0) must work."""
    f = open(path, mode)
    f.seek(0)
    print("seek", f.readline().strip(), "seekable" if f.seekable() else "",
          flush=True)
    return f.close


def take(how, path, wait):
    """Take the lock HOW says: its release, or None if `wait` is false and
    it is held."""
    if how.startswith("fasteners-"):
        return fasteners_lock(
            path, {"read": False, "write": True}.get(how[10:]), wait)
    if how.startswith("portalocker-"):
        return portalocker_lock(path, how[12:], wait)
    if how == "filelock":
        return filelock_lock(path, wait)
    return file_mode(path, how)


def count(how, path, n, counter):
    """The lost-update check: read, add one, write back, under the lock."""
    for k in range(1, n + 1):
        release = take(how, path, True)
        with open(counter, "r+") as f:
            value = int(f.read() or 0)
            time.sleep(0.005)  # a window: two holders at once lose one
            f.seek(0)
            f.write(f"{value + 1}\n")
            f.truncate()
        release()
        print("did", k, flush=True)


def main():
    how, path = sys.argv[1], sys.argv[2]
    if sys.argv[3:4] == ["count"]:
        return count(how, path, int(sys.argv[4]), sys.argv[5])
    release = take(how, path, "try" not in sys.argv[3:])
    if release is None:
        print("busy", flush=True)
        return
    print("held", flush=True)
    sys.stdin.read()
    release()
    print("released", flush=True)


main()
