"""Loop: take the write lock by open(), enter a critical section that must
be exclusive, leave, release.  usage: PATH SECTION-DIR LOG ROUNDS"""
import os
import sys
import time

from sections import Section

path, directory, log, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for _ in range(rounds):
    fd = os.open(path, os.O_WRONLY)
    with Section(directory, "W", logfd):
        time.sleep(0.005)
    os.close(fd)
