"""One torture worker: until END (a time.time() value), take a random kind
of lock on MOUNT/RESOURCE (open of write or read, flock, fcntl, try-locks,
waits cut short by a timer), hold it in a checked critical section, let go.
usage: MOUNT RESOURCE SECTION-DIR LOG END SEED
Exits 0 at END; logs ERROR and exits 3 on an unexpected error."""
import errno
import fcntl
import os
import random
import signal
import sys
import time

from sections import Section

mount, resource, directory, log, end, seed = sys.argv[1:7]
end = float(end)
rng = random.Random(int(seed))
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
res = os.path.join(mount, resource)


armed = False  # a timer may cut the wait in take() short


def on_timer(*_):
    # Only while waiting: a timer that fires as the wait ends must not
    # raise out of the code that disarms it.  (If it fires just after the
    # open or flock returned, before its fd was stored, close_leaked()
    # finds that fd.)
    global armed
    if armed:
        armed = False
        raise InterruptedError(errno.EINTR, "timer")


signal.signal(signal.SIGALRM, on_timer)


def close_leaked():
    """Close any descriptor of the mount's files still open: one whose
    open (or lock) had succeeded when the timer's exception took it over
    before it was stored.  Kept, it would hold that lock while this worker
    waits for its next one, behind itself, for ever."""
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(res + "/"):
            os.close(int(name))


def take(kind):
    """Open and lock; returns (fd, mode) or None if the try or wait gave up."""
    if kind == "open-w":
        return os.open(f"{res}/write", os.O_WRONLY), "W"
    if kind == "open-r":
        return os.open(f"{res}/read", os.O_RDONLY), "R"
    if kind == "try-w":
        return os.open(f"{res}/write", os.O_WRONLY | os.O_NONBLOCK), "W"
    fd = os.open(f"{res}/lock", os.O_RDWR)
    try:
        if kind == "flock-x":
            fcntl.flock(fd, fcntl.LOCK_EX)
        elif kind == "flock-s":
            fcntl.flock(fd, fcntl.LOCK_SH)
        elif kind == "flock-nb":
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif kind == "lockf-w":
            fcntl.lockf(fd, fcntl.LOCK_EX)
        else:
            fcntl.lockf(fd, fcntl.LOCK_SH)
    except BaseException:
        os.close(fd)
        raise
    return fd, "R" if kind in ("flock-s", "lockf-r") else "W"


KINDS = ["open-w", "open-r", "try-w", "flock-x", "flock-s", "flock-nb",
         "lockf-w", "lockf-r"]

while time.time() < end:
    kind = rng.choice(KINDS)
    if rng.random() < 0.2:  # a wait cut short, as timeout(1) would
        armed = True
        signal.setitimer(signal.ITIMER_REAL, rng.uniform(0.02, 0.3))
    try:
        fd, mode = take(kind)
    except (InterruptedError, BlockingIOError):
        armed = False  # first, before any call: no timer raises in here
        close_leaked()
        continue
    except OSError as e:
        os.write(logfd, f"ERROR {kind}: {e}\n".encode())
        sys.exit(3)
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
    with Section(directory, mode, logfd):
        time.sleep(rng.uniform(0, 0.01))
    if kind.startswith("flock") and rng.random() < 0.5:
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
