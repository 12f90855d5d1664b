"""One client of the history test (test_history.py): lock, hold, unlock,
again, recording every hold.

usage: history_client.py MOUNTPOINT RESOURCES SEED UNTIL OUT
RESOURCES is a comma-separated list; UNTIL a CLOCK_MONOTONIC time; OUT a
file that gets two lines per hold, one when it begins (for the nemesis)
and one when it ends:
  begin RESOURCE START
  hold RESOURCE TOKEN START END HOW
START is when open() returned, END when the client stopped believing it
held: just before its close (HOW "released"), or when it was told the
lock was lost (HOW "EIO", "ENOTCONN" or "signal"); TOKEN is "-" when the
first read already failed.  Times are CLOCK_MONOTONIC, which every process
of the machine shares.  The client exits when its mount is gone.
"""
import errno
import os
import random
import signal
import sys
import time

from readall import read_all

POLL_S = 0.02      # how often a holder checks its lock
OPEN_LIMIT_S = 15  # an open not granted by then is given up (and noted)

told = []  # the time the on_lost signal came, once per hold


def on_lost(*_):
    told.append(time.monotonic())


def on_alarm(*_):
    raise InterruptedError(errno.EINTR, "open took too long")


def hold(fd, rng):
    """Hold for a while, checking the lock.  Returns (token, end, how)."""
    try:
        token = read_all(fd).split("\n", 1)[0]
    except OSError as e:
        return "-", time.monotonic(), errno.errorcode.get(e.errno, "?")
    # Mostly short; some longer than a session timeout, which only a
    # holder told of its loss in time ends before another host holds.
    length = rng.uniform(3, 12) if rng.random() < 0.3 else \
        rng.uniform(0.05, 0.4)
    until = time.monotonic() + length
    while time.monotonic() < until:
        if told:
            return token, told[0], "signal"
        try:
            read_all(fd)
        except OSError as e:
            return token, time.monotonic(), errno.errorcode.get(e.errno, "?")
        time.sleep(POLL_S)
    if told:
        return token, told[0], "signal"
    return token, time.monotonic(), "released"


def main():
    mountpoint, resources, seed, until, out = sys.argv[1:6]
    resources = resources.split(",")
    rng = random.Random(seed)
    until = float(until)
    signal.signal(signal.SIGUSR1, on_lost)
    signal.signal(signal.SIGALRM, on_alarm)
    with open(out, "a", buffering=1) as log:
        while time.monotonic() < until:
            res = rng.choice(resources)
            del told[:]
            signal.alarm(OPEN_LIMIT_S)
            try:
                fd = os.open(os.path.join(mountpoint, res, "write"),
                             os.O_RDWR)
            except OSError as e:
                signal.alarm(0)
                log.write(f"open {res} {errno.errorcode.get(e.errno, e.errno)}"
                          f" {time.monotonic():.4f}\n")
                if e.errno in (errno.ENOTCONN, errno.ENOENT, errno.EIO):
                    if not os.path.ismount(mountpoint):
                        return
                    time.sleep(0.2)
                continue
            signal.alarm(0)
            start = time.monotonic()
            log.write(f"begin {res} {start:.4f}\n")
            token, end, how = hold(fd, rng)
            log.write(f"hold {res} {token} {start:.4f} {end:.4f} {how}\n")
            try:
                os.close(fd)
            except OSError:
                pass
            if how == "ENOTCONN":
                return  # the daemon is gone: so is this mount
            time.sleep(rng.uniform(0, 0.1))


main()
