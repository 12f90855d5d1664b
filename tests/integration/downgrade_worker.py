"""Loop on a lock file: a writer (flock LOCK_EX), or a downgrader (LOCK_EX,
then LOCK_SH on the same descriptor), or a reader (LOCK_SH), with the
critical sections of sections.py around what each holds.

usage: KIND PATH SECTION-DIR LOG ROUNDS   (KIND: write, downgrade, read)

A downgrader's marker goes from W to D while it still holds the write
lock, and from D to R once it holds the read lock: D counts as a reader
for readers (they may come in as soon as the downgrade is done) and
against writers, which is the claim: no writer gets in between."""
import fcntl
import os
import sys
import time

from sections import Section, conflicts

kind, path, directory, log, rounds = sys.argv[1:6]
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def check(mode):
    bad = conflicts(directory, mode)
    if bad:
        os.write(logfd, f"OVERLAP {mode}.{os.getpid()} {bad}\n".encode())


def mark(old, new):
    """Move our marker from kind old to kind new, atomically."""
    os.rename(os.path.join(directory, f"{old}.{os.getpid()}"),
              os.path.join(directory, f"{new}.{os.getpid()}"))


fd = os.open(path, os.O_RDWR)
for _ in range(int(rounds)):
    if kind == "read":
        fcntl.flock(fd, fcntl.LOCK_SH)
        with Section(directory, "R", logfd):
            time.sleep(0.002)
    else:
        fcntl.flock(fd, fcntl.LOCK_EX)
        section = Section(directory, "W", logfd)
        section.__enter__()
        time.sleep(0.002)
        if kind == "downgrade":
            check("W")
            mark("W", "D")
            fcntl.flock(fd, fcntl.LOCK_SH)
            # A writer queued behind must not be in yet.
            check("R")
            mark("D", "R")
            time.sleep(0.003)
            section.mode = "R"
            section.marker = os.path.join(directory, f"R.{os.getpid()}")
        section.__exit__(None, None, None)
    fcntl.flock(fd, fcntl.LOCK_UN)
os.close(fd)
print("done", flush=True)
