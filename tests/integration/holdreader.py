"""Hold a lock and read its descriptor in a tight loop until a read fails.

usage: holdreader.py PATH
Prints "ok" once open() returns; then, when a read fails, one line
"lost ERRNO-NAME T N": T is the CLOCK_MONOTONIC time (every process reads
the same clock) just before the last successful read was made, N how many
succeeded.  The time before, not after: a process can be kept off the CPU
after a call returns, and a stamp taken then says nothing about the
call, while a read that succeeded though made after another host was
granted is exactly what must never happen.  Exits after that, once its
stdin closes.
"""
import errno
import os
import sys
import time

from readall import read_all


def main():
    fd = os.open(sys.argv[1], os.O_RDWR)
    print("ok", flush=True)
    last, n = time.monotonic(), 0
    while True:
        before = time.monotonic()
        try:
            read_all(fd)
        except OSError as e:
            print("lost", errno.errorcode.get(e.errno, e.errno),
                  f"{last:.6f}", n, flush=True)
            break
        last = before
        n += 1
    sys.stdin.read()


main()
