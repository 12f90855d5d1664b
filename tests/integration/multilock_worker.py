"""Loop: take a write lock by open() (of a resource or of a multi-lock),
enter the critical section of every resource it covers, leave, release.
usage: PATH LOG ROUNDS SECTION-DIR...  Prints "done" at the end."""
import contextlib
import os
import sys
import time

from sections import Section

path, log, rounds, dirs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for _ in range(rounds):
    fd = os.open(path, os.O_WRONLY)
    with contextlib.ExitStack() as sections:
        for d in dirs:
            sections.enter_context(Section(d, "W", logfd))
        time.sleep(0.003)
    os.close(fd)
print("done", flush=True)
