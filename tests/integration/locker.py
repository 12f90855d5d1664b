"""Open a lock file and report, then obey commands on stdin.

usage: locker.py PATH FLAGS [--alarm SECS] [--trap SIGNAME] [--flock|--fcntl]
                 [--stamp]
FLAGS: w (O_WRONLY), r (O_RDONLY), rw (O_RDWR), plus 'n' for O_NONBLOCK,
       't' for O_TRUNC|O_CREAT.
Prints "ok" once open() returns, or "err <ERRNO-NAME>".
Commands: read -> prints the file's lines joined by '|'; note TEXT -> writes TEXT;
fsync -> fsync(2), prints ok or the error;
close -> closes and exits.  --trap: on that signal, print "signal SIGNAME".
--flock: after the open, flock(LOCK_EX) the descriptor, then report.
--fcntl: after the open, a whole-file F_SETLKW write lock (lockf), then report.
--stamp: "ok" and "signal" lines end with " @T", T the CLOCK_MONOTONIC
time of the event (every process reads the same clock).
"""
import errno
import fcntl
import os
import select
import signal
import sys
import time

from readall import read_all


WAKE = []


def commands():
    """The lines of stdin, read so that a signal's handler runs at once
    while it waits (its wakeup pipe, WAKE, is watched too)."""
    buf = b""
    while True:
        while b"\n" not in buf:
            ready, _, _ = select.select([0, *WAKE], [], [])
            if WAKE and WAKE[0] in ready:
                os.read(WAKE[0], 512)  # the handler has run by now
            if 0 in ready:
                chunk = os.read(0, 4096)
                if not chunk:
                    return
                buf += chunk
        line, buf = buf.split(b"\n", 1)
        yield line.decode()


def main():
    path, flags = sys.argv[1], sys.argv[2]
    mode = os.O_RDWR if "rw" in flags else os.O_WRONLY if "w" in flags else os.O_RDONLY
    if "n" in flags:
        mode |= os.O_NONBLOCK
    if "t" in flags:
        mode |= os.O_TRUNC | os.O_CREAT
    stamp = (lambda: f" @{time.monotonic():.6f}") if "--stamp" in sys.argv \
        else (lambda: "")
    if "--trap" in sys.argv:
        name = sys.argv[sys.argv.index("--trap") + 1]
        # os.write, not print: a handler that runs inside print("ok")'s
        # flush (the signal and the open's return come together) would
        # make a reentrant call into the buffered stdout, which Python
        # refuses with RuntimeError, and the line would be lost.
        signal.signal(getattr(signal, name),
                      lambda *_: os.write(
                          1, f"signal {name}{stamp()}\n".encode()))
        # Python runs a handler between bytecodes: a signal that comes
        # just before the read of the next command blocks in that read
        # would wait for the next command.  The wakeup pipe makes the
        # wait for a command return for every signal (commands()).
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        WAKE.append(wake_r)
    if "--alarm" in sys.argv:
        secs = int(sys.argv[sys.argv.index("--alarm") + 1])
        def on_alarm(*_):
            # Python retries an interrupted open() unless the handler raises.
            raise InterruptedError(errno.EINTR, "interrupted by SIGALRM")
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(secs)
    try:
        fd = os.open(path, mode)
        if "--flock" in sys.argv:
            fcntl.flock(fd, fcntl.LOCK_EX)
        elif "--fcntl" in sys.argv:
            fcntl.lockf(fd, fcntl.LOCK_EX)
    except OSError as e:
        print("err", errno.errorcode.get(e.errno, e.errno), flush=True)
        return
    signal.alarm(0)
    print(f"ok{stamp()}", flush=True)
    for cmd in commands():
        if cmd == "close":
            break
        if cmd == "read":
            try:
                data = read_all(fd)
                print(data.rstrip("\n").replace("\n", "|"), flush=True)
            except OSError as e:
                print("err", errno.errorcode.get(e.errno, e.errno), flush=True)
        elif cmd == "fsync":
            try:
                os.fsync(fd)
                print("ok", flush=True)
            except OSError as e:
                print("err", errno.errorcode.get(e.errno, e.errno), flush=True)
        elif cmd.startswith("note "):
            try:
                os.write(fd, cmd[5:].encode() + b"\n")
                print("ok", flush=True)
            except OSError as e:
                print("err", errno.errorcode.get(e.errno, e.errno), flush=True)
    os.close(fd)


main()
