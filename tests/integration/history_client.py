"""One client of the history test (test_history.py): lock, hold, unlock,
again, recording every hold.

usage: history_client.py MOUNTPOINT RESOURCES SEED UNTIL OUT
       history_client.py ... --resume FD RES START TOKEN HOLD_UNTIL LAST_OK
RESOURCES is a comma-separated list; UNTIL a CLOCK_MONOTONIC time; OUT a
file that gets two lines per hold, one when it begins (for the nemesis)
and one when it ends:
  begin RESOURCE START NODE
  hold RESOURCE TOKEN START END HOW LAST_OK NODE
START is when open() returned, END when the client stopped believing it
held: just before its close (HOW "released"), or when it was told the
lock was lost (HOW "EIO", "ENOTCONN" or "signal"); LAST_OK is the time
just before the last read that succeeded (a read made after another host
was granted must never succeed); TOKEN is "-" when the first read
already failed.  Times are CLOCK_MONOTONIC, which every process of the
machine shares.  Some holds exec the client again in the middle (--resume:
the same process, holding the same descriptor, under a new image), as a
script's `exec` would.  The client exits when its mount is gone.
"""
import errno
import os
import random
import signal
import sys
import time

from readall import read_all

POLL_S = 0.005     # how often a holder reads its lock
OPEN_LIMIT_S = 15  # an open not granted by then is given up (and noted)
EXEC_CHANCE = 0.1  # of a hold, to exec the client again in its middle

told = []  # the time the on_lost signal came, once per hold


def on_lost(*_):
    told.append(time.monotonic())


def on_alarm(*_):
    raise InterruptedError(errno.EINTR, "open took too long")


def node_of(text):
    """The node line of a lock file's text, or "-"."""
    for line in text.split("\n"):
        if line.startswith("node "):
            return line[5:]
    return "-"


def hold(fd, until, last_ok):
    """Hold until `until`, reading the lock.  Returns (end, how, last_ok);
    how None: still held at `until`."""
    while time.monotonic() < until:
        if told:
            return told[0], "signal", last_ok
        before = time.monotonic()
        try:
            read_all(fd)
        except OSError as e:
            return time.monotonic(), errno.errorcode.get(e.errno, "?"), \
                last_ok
        last_ok = before
        time.sleep(POLL_S)
    return None, None, last_ok


class Client:
    def __init__(self, argv):
        self.argv = argv[:6]
        self.mountpoint, resources, self.seed, until, self.out = argv[1:6]
        self.resources = resources.split(",")
        self.until = float(until)
        self.rng = random.Random(f"{self.seed}-{os.getpid()}-"
                                 f"{time.monotonic()}")

    def finish(self, log, res, fd, token, start, node, end, how, last_ok):
        log.write(f"hold {res} {token} {start:.4f} {end:.4f} {how} "
                  f"{last_ok:.4f} {node}\n")
        try:
            os.close(fd)
        except OSError:
            pass
        return how != "ENOTCONN"  # the daemon is gone: so is this mount

    def one(self, log, res, fd, start, token, hold_until, last_ok, node):
        """The rest of a hold; returns whether to go on."""
        if self.rng.random() < EXEC_CHANCE:
            mid = start + (hold_until - start) / 2
            end, how, last_ok = hold(fd, mid, last_ok)
            if how is None:
                log.flush()
                os.set_inheritable(fd, True)
                # A loss told during the exec waits for the new image's
                # handler (a mask and a pending signal survive execve).
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
                os.execv(sys.executable, [
                    sys.executable] + self.argv + [
                    "--resume", str(fd), res, f"{start:.6f}", token,
                    f"{hold_until:.6f}", f"{last_ok:.6f}", node])
        end, how, last_ok = hold(fd, hold_until, last_ok)
        if how is None:
            end, how = time.monotonic(), "released"
        if told:  # came as it let go: it was lost first
            end, how = min(end, told[0]), "signal"
        return self.finish(log, res, fd, token, start, node, end, how,
                           last_ok)

    def loop(self, log):
        while time.monotonic() < self.until:
            res = self.rng.choice(self.resources)
            del told[:]
            signal.alarm(OPEN_LIMIT_S)
            try:
                fd = os.open(os.path.join(self.mountpoint, res, "write"),
                             os.O_RDWR)
            except OSError as e:
                signal.alarm(0)
                log.write(f"open {res} {errno.errorcode.get(e.errno, e.errno)}"
                          f" {time.monotonic():.4f}\n")
                if e.errno in (errno.ENOTCONN, errno.ENOENT, errno.EIO):
                    if not os.path.ismount(self.mountpoint):
                        return
                    time.sleep(0.2)
                continue
            signal.alarm(0)
            start = time.monotonic()
            before = time.monotonic()
            try:
                text = read_all(fd)
            except OSError as e:
                how = errno.errorcode.get(e.errno, "?")
                if not self.finish(log, res, fd, "-", start, "-",
                                   time.monotonic(), how, start):
                    return
                continue
            token, node = text.split("\n", 1)[0], node_of(text)
            log.write(f"begin {res} {start:.4f} {node}\n")
            # Mostly short; some longer than a session timeout, which only
            # a holder told of its loss in time ends before another host
            # holds.
            length = self.rng.uniform(3, 12) if self.rng.random() < 0.3 \
                else self.rng.uniform(0.05, 0.4)
            if not self.one(log, res, fd, start, token, start + length,
                            before, node):
                return
            time.sleep(self.rng.uniform(0, 0.1))


def main():
    signal.signal(signal.SIGUSR1, on_lost)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
    client = Client(sys.argv)
    with open(client.out, "a", buffering=1) as log:
        if "--resume" in sys.argv:
            i = sys.argv.index("--resume")
            fd, res, start, token, hold_until, last_ok, node = \
                sys.argv[i + 1:i + 8]
            if not client.one(log, res, int(fd), float(start), token,
                              float(hold_until), float(last_ok), node):
                return
        client.loop(log)


main()
