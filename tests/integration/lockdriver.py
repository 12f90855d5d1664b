"""A process that takes flock(2) and fcntl(2) locks as told on stdin.

One command per line, one answer line per command ("ok [...]" or
"err ERRNO-NAME"); a blocking command answers when it returns.
  open NAME PATH [FLAGS]   open PATH as descriptor NAME (FLAGS: r, w, rw)
  flock NAME ex|sh|un [nb] flock(2) on NAME
  lockf NAME wr|rd|un [nb] whole-file fcntl lock (F_SETLKW, or F_SETLK with nb)
  ofd NAME wr|rd|un        whole-file open file description lock (F_OFD_SETLKW)
  range NAME wr|rd|un START LEN [nb]
                           fcntl lock (F_SETLKW, or F_SETLK with nb) of LEN
                           bytes from START (LEN 0: to the end of the file)
  getlk NAME wr|rd [START LEN]
                           F_GETLK (of the whole file, or of that range):
                           answers "ok unlocked" or "ok wr|rd PID", and
                           after a range the lock's " START LEN"
  read NAME                answers "ok " + the file's lines joined by '|'
  close NAME
  alarm SECS               the next command is interrupted SECS after it
                           starts (a decimal: 0.05)
  pid                      answers "ok PID"
  child                    fork: the child answers "ok PID" and takes the
                           commands that follow, with the descriptors; the
                           parent, holding its locks, waits for it to exit
                           (as a script waits for the tool it runs), then
                           goes on reading
  spawn ARGV...            start ARGV (shell words) as a child in the
                           background, its stdout a pipe; answers "ok"
  reap [nohang]            wait for that child: "ok " + its first output
                           line; with nohang "ok running" if it runs still
"""
import errno
import fcntl
import os
import shlex
import subprocess
import signal
import struct
import sys

from readall import read_all

FLOCK_FMT = "hhqqi4x"  # struct flock on Linux x86-64 / arm64
OPEN_FLAGS = {"r": os.O_RDONLY, "w": os.O_WRONLY, "rw": os.O_RDWR}
ALARM = [None]  # seconds asked by "alarm", for the next command


def on_alarm(*_):
    # Python retries an interrupted call unless the handler raises.
    raise InterruptedError(errno.EINTR, "interrupted by SIGALRM")


def run(fds, words):
    cmd, args = words[0], words[1:]
    if cmd == "open":
        fds[args[0]] = os.open(args[1], OPEN_FLAGS[args[2] if len(args) > 2 else "rw"])
        return "ok"
    if cmd == "flock":
        op = {"ex": fcntl.LOCK_EX, "sh": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[args[1]]
        fcntl.flock(fds[args[0]], op | (fcntl.LOCK_NB if "nb" in args else 0))
        return "ok"
    if cmd == "lockf":
        op = {"wr": fcntl.LOCK_EX, "rd": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[args[1]]
        fcntl.lockf(fds[args[0]], op | (fcntl.LOCK_NB if "nb" in args else 0))
        return "ok"
    if cmd == "ofd":
        kind = {"wr": fcntl.F_WRLCK, "rd": fcntl.F_RDLCK, "un": fcntl.F_UNLCK}[args[1]]
        fcntl.fcntl(fds[args[0]], fcntl.F_OFD_SETLKW,
                    struct.pack(FLOCK_FMT, kind, os.SEEK_SET, 0, 0, 0))
        return "ok"
    if cmd == "range":
        kind = {"wr": fcntl.F_WRLCK, "rd": fcntl.F_RDLCK, "un": fcntl.F_UNLCK}[args[1]]
        fcntl.fcntl(fds[args[0]], fcntl.F_SETLK if "nb" in args else fcntl.F_SETLKW,
                    struct.pack(FLOCK_FMT, kind, os.SEEK_SET, int(args[2]),
                                int(args[3]), 0))
        return "ok"
    if cmd == "getlk":
        kind = fcntl.F_WRLCK if args[1] == "wr" else fcntl.F_RDLCK
        start, length = (int(args[2]), int(args[3])) if len(args) > 2 else (0, 0)
        query = struct.pack(FLOCK_FMT, kind, os.SEEK_SET, start, length, 0)
        typ, _, start, length, pid = struct.unpack(
            FLOCK_FMT, fcntl.fcntl(fds[args[0]], fcntl.F_GETLK, query))
        if typ == fcntl.F_UNLCK:
            return "ok unlocked"
        where = f" {start} {length}" if len(args) > 2 else ""
        return f"ok {'wr' if typ == fcntl.F_WRLCK else 'rd'} {pid}{where}"
    if cmd == "read":
        return "ok " + read_all(fds[args[0]]).rstrip("\n").replace("\n", "|")
    if cmd == "close":
        os.close(fds.pop(args[0]))
        return "ok"
    if cmd == "alarm":
        signal.signal(signal.SIGALRM, on_alarm)
        ALARM[0] = float(args[0])  # armed as the next command starts
        return "ok"
    if cmd == "pid":
        return f"ok {os.getpid()}"
    if cmd == "spawn":
        fds["spawned"] = subprocess.Popen(
            shlex.split(" ".join(args)), stdout=subprocess.PIPE, text=True)
        return "ok"
    if cmd == "reap":
        child = fds["spawned"]
        if "nohang" in args and child.poll() is None:
            return "ok running"
        out = child.stdout.readline().strip()
        child.wait()
        return f"ok {out}"
    if cmd == "fork":
        # A child that keeps every descriptor (and so every open file
        # description's lock) and sleeps until killed.
        pid = os.fork()
        if pid == 0:
            while True:
                signal.pause()
        return f"ok {pid}"
    if cmd == "child":
        pid = os.fork()
        if pid == 0:
            return f"ok {os.getpid()}"
        os.waitpid(pid, 0)
        return None  # the child answered, and took what followed
    return "err EINVAL"


def main():
    fds = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        # Armed here, not when asked: a timer that ran out while this
        # process read its next command would be lost (Python retries the
        # read), and the command would wait for ever.
        if words[0] != "alarm" and ALARM[0]:
            signal.setitimer(signal.ITIMER_REAL, ALARM[0])
            ALARM[0] = None
        try:
            answer = run(fds, words)
        except OSError as e:
            answer = "err " + errno.errorcode.get(e.errno, str(e.errno))
        if words[0] != "alarm":  # an alarm is for the next call only
            signal.setitimer(signal.ITIMER_REAL, 0)
        if answer is not None:
            print(answer, flush=True)


main()
