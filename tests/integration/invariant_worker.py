"""Loop: take the write lock, enter a critical section that must be
exclusive, leave, release.  usage: PATH MARKER LOG ROUNDS"""
import os
import sys
import time

path, marker, log, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for _ in range(rounds):
    fd = os.open(path, os.O_WRONLY)
    try:
        m = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        # A marker left by a worker killed inside the section is stale only
        # if its owner is dead: the lock was released by its death.
        owner = open(marker).read().strip()
        if owner and os.path.exists(f"/proc/{owner}"):
            os.write(logfd, b"OVERLAP\n")
        os.unlink(marker)
        m = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(m, str(os.getpid()).encode())
    os.close(m)
    os.write(logfd, b"ENTER\n")
    time.sleep(0.005)
    os.unlink(marker)
    os.close(fd)
