"""The invariant checker shared by the concurrency workers: a critical
section leaves a marker file named after its mode and pid in a directory
local to this machine; a writer entering must find no live marker, a
reader no live writer's.  A marker of a dead process (killed inside its
section: its death released the lock) does not count, nor one of a process
the test is killing: between closing its descriptors (which frees the lock
for the next holder) and becoming a zombie, a dying process still looks
alive in /proc, and on a loaded machine that window can outlast a grant."""
import os


def alive(pid):
    """True if pid runs (not gone, not a zombie whose descriptors, and so
    locks, are closed already)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def mark_killed(directory, pid):
    """Call just before SIGKILL: pid's section ends with the kill."""
    open(os.path.join(directory, f"K.{pid}"), "w").close()


def conflicts(directory, mode):
    """Markers of live processes that a section of `mode` ('W' or 'R')
    must not coexist with, besides our own.  A 'D' marker (a writer
    downgrading: downgrade_worker.py) conflicts with writers only."""
    found = []
    names = os.listdir(directory)
    for name in names:
        kind, _, pid = name.partition(".")
        if kind not in ("W", "R", "D") or not pid.isdigit() or int(pid) == os.getpid() \
                or f"K.{pid}" in names:
            continue
        if (mode == "W" or kind == "W") and alive(int(pid)):
            found.append(name)
    return found


class Section:
    """with Section(dir, 'W', log): ... checks on entry and on exit and
    appends ENTER (and OVERLAP on a violation) to the log."""

    def __init__(self, directory, mode, logfd):
        self.directory, self.mode, self.logfd = directory, mode, logfd
        self.marker = os.path.join(directory, f"{mode}.{os.getpid()}")

    def _check(self):
        bad = conflicts(self.directory, self.mode)
        if bad:
            os.write(self.logfd, f"OVERLAP {self.mode}.{os.getpid()} {bad}\n".encode())

    def __enter__(self):
        self._check()
        open(self.marker, "w").close()
        os.write(self.logfd, f"ENTER {self.mode}\n".encode())
        return self

    def __exit__(self, *exc):
        self._check()
        os.unlink(self.marker)
        return False
