"""Whom -o on_lost=signal reaches (issue 55): only the processes the
holder itself could signal.  A holder may join another job's process group
(setpgid, within its session); the daemon, root, then sends as the holder,
and names in its log the members of the group it spared."""
import os
import re
import select
import signal
import subprocess
import sys
from contextlib import contextmanager

import pytest

from harness import HERE, lock_nodes, wait_until

pytestmark = [
    pytest.mark.concurrency,
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="runs processes as nobody and as root"),
]

TERM = f"signal {int(signal.SIGTERM)}"
KILLED_BY_US = f"signal {int(signal.SIGKILL)}"  # the group's end, below


class Group:
    """signal_group.py: a job (sleep) and a holder that joined its process
    group, each run as `job_as` and `holder_as`."""

    def __init__(self, lockfile, job_as, holder_as):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "signal_group.py"),
             lockfile, job_as, holder_as],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
            start_new_session=True)
        self.said = []
        self.partial = b""  # read, not yet a whole line
        self.job = int(self.expect(r"job (\d+)").group(1))
        self.holder = int(self.expect(r"holder (\d+)").group(1))

    def expect(self, pattern, timeout=15):
        """The first line said, now or within timeout s, matching pattern."""
        def seen():
            for line in self.said:
                m = re.fullmatch(pattern, line)
                if m:
                    return m
            r, _, _ = select.select([self.proc.stdout], [], [], 0.05)
            if r:
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                assert chunk, f"signal_group.py ended; it said {self.said}"
                *lines, self.partial = (self.partial + chunk).split(b"\n")
                self.said.extend(line.decode() for line in lines)
            return None
        return wait_until(seen, timeout,
                          f"a line {pattern!r} (said so far: {self.said})")

    def exit_of(self, pid, timeout=15):
        """How pid ended: "signal N" or "status N"."""
        return self.expect(rf"exit {pid} (.*)", timeout).group(1)

    def end(self):
        """Kill what still runs (SIGKILL), and wait for the helper."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(15)
        rest = self.partial + self.proc.stdout.read()
        self.said.extend(rest.decode().splitlines())


@contextmanager
def group(mount, job_as, holder_as):
    g = Group(mount.path("r", "write"), job_as, holder_as)
    try:
        g.expect("held")
        yield g
    finally:
        g.end()


def tell_the_holder(how, zk, base, mount):
    """What makes the daemon signal the holder: its node deleted, as
    another client may (on_lost), or an ask to let go (on_revoke)."""
    if how == "on_lost":
        node, = lock_nodes(zk, base + "/r")
        zk.delete(node)
    else:
        with open(mount.path("r", "revoke"), "w") as f:
            f.write("ask\n")


def signal_line(mount, pgid):
    """The daemon's line about the signal to process group pgid, once it
    is logged (the signal is sent by then)."""
    return wait_until(
        lambda: next((line for line in mount.log().splitlines()
                      if re.search(rf"to process group {pgid}\b", line)),
                     None),
        15, f"the daemon to log its signal to process group {pgid}")


@pytest.mark.parametrize("how", ["on_lost", "on_revoke"])
def test_a_holder_that_joined_roots_job_cannot_have_it_signalled(
        zk, base, mounts, how):
    """Issue 55's attack: nobody joins a root job's group, takes a lock and
    loses it (or is asked to let go).  The holder gets the signal; root's
    job does not."""
    m = mounts.new("-o", f"allow_other,{how}=signal")
    with group(m, "root", "nobody") as g:
        tell_the_holder(how, zk, base, m)
        assert g.exit_of(g.holder) == TERM, "the holder itself is signalled"
        line = signal_line(m, g.job)
    # Still running when the daemon said it had sent: our SIGKILL ended it.
    assert g.exit_of(g.job) == KILLED_BY_US, \
        f"root's job was signalled by the daemon: {g.said}\n{m.log()}"
    assert f"as uid 65534: ok; spared pid {g.job} (sleep, uid 0): " \
        "the holder could not signal it" in line, line


def test_a_holder_s_own_group_is_still_signalled(zk, base, mounts):
    """A group of the holder's own uid: every member gets the signal, and
    none is said to be spared."""
    m = mounts.new("-o", "allow_other,on_lost=signal")
    with group(m, "nobody", "nobody") as g:
        tell_the_holder("on_lost", zk, base, m)
        assert g.exit_of(g.holder) == TERM
        assert g.exit_of(g.job) == TERM, "the holder's group is signalled"
        line = signal_line(m, g.job)
        assert line.endswith(f"sent TERM to process group {g.job} "
                             "as uid 65534: ok"), line


def test_root_without_cap_kill_cannot_have_another_uid_signalled(
        zk, base, mounts):
    """Root's uid alone is not root's power: a holder without CAP_KILL
    (a service whose capabilities were cut) signals only root's
    processes, not those of nobody's job it joined."""
    m = mounts.new("-o", "allow_other,on_lost=signal")
    with group(m, "nobody", "root-nokill") as g:
        tell_the_holder("on_lost", zk, base, m)
        assert g.exit_of(g.holder) == TERM
        line = signal_line(m, g.job)
    assert g.exit_of(g.job) == KILLED_BY_US, \
        f"nobody's job was signalled by the daemon: {g.said}\n{m.log()}"
    assert "as uid 0 without CAP_KILL: ok; " \
        f"spared pid {g.job} (sleep, uid 65534)" in line, line
