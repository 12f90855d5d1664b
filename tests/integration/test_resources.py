"""Resources come and go (doc/locks.md, "Semantics"): a resource znode is a
ZooKeeper container, which the server deletes once its last lock node is
gone (the harness's server checks every second), so a name used once
leaves nothing behind; a setting keeps it; a lock that finds it gone makes
it again; a znode another tool made is used as it is and never deleted;
and the daemon keeps no entry for a name the kernel has forgotten."""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from harness import HERE, lock_nodes, released, status, wait_until

pytestmark = pytest.mark.concurrency


def resources(zk, base):
    """The resource znodes under base (not the base's own table)."""
    return sorted(c for c in zk.get_children(base) if not c.startswith("."))


def listed(mount):
    """What `ls MOUNT` shows (no dot files): the resources in ZooKeeper."""
    out = subprocess.run(["ls", mount.mountpoint], capture_output=True,
                         text=True, check=True, timeout=30)
    return out.stdout.split()


def kept_while_reaped(zk, base, kept, reaped):
    """Once the lock nodes are gone, wait for the server to reap the
    resource `reaped` (so it has looked at every container), and a check
    interval more, then say whether `kept` is still there.  No event
    tells an absence: the wait is bounded."""
    released(zk, base)
    wait_until(lambda: reaped not in resources(zk, base), 15,
               f"the server to reap {reaped}")
    time.sleep(1.5)  # and once more: a check interval (negative check)
    return kept in resources(zk, base)


def use_once(mount, name):
    fd = os.open(mount.path(name, "write"), os.O_WRONLY)
    os.close(fd)


def test_names_used_once_leave_nothing_behind(zk, base, m1, m2):
    held = [os.open(m1.path(name, "write"), os.O_WRONLY) for name in "abc"]
    try:  # what exists, as another host lists it (doc/operations.md)
        assert listed(m2) == ["a", "b", "c"]
    finally:
        for fd in held:
            os.close(fd)
    names = [f"report-{i}" for i in range(40)]
    for i, name in enumerate(names):
        use_once((m1, m2)[i % 2], name)
    assert status(m1)["containers"] == "yes"
    created = int(status(m1)["resources_created"]) + \
        int(status(m2)["resources_created"])
    assert created >= len(names), f"{created} resources created"
    released(zk, base)
    wait_until(lambda: resources(zk, base) == [], 15,
               "the server to reap every resource used once")
    assert listed(m2) == []


NOBODY_USES = r"""
import os, sys
mnt, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.close(os.open(f"{mnt}/report-{i}/write", os.O_WRONLY))
"""


@pytest.mark.plain  # thousands of opens: slow under a sanitizer
def test_a_user_who_locks_thousands_of_names_leaves_nothing(zk, base, mounts):
    """The issue's case: an unprivileged user of an allow_other mount
    locks thousands of new names once each and exits.  Every resource
    znode goes, and once the kernel forgets the names, so does the
    daemon's entry for each."""
    m = mounts.new("-o", "allow_other")
    n = 3000
    out = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         sys.executable, "-c", NOBODY_USES, m.mountpoint, str(n)],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(status(m)["resources_created"]) >= n
    # No lock node left: else no container would go (released() would
    # walk thousands of resources per look).
    assert status(m)["held"] == "0" and status(m)["waiting"] == "0"
    wait_until(lambda: resources(zk, base) == [], 60,
               f"the server to reap the {n} resources")
    forget_all()
    wait_until(lambda: int(status(m)["resources"]) < 10, 30,
               "the daemon to free the entries the kernel forgot")


def test_a_configured_resource_stays_and_reads_back_elsewhere(zk, base, m1, m2):
    use_once(m1, "jobs")  # a container first; its limit then pins it
    with open(m1.path("jobs", "limit"), "w") as f:
        f.write("3\n")
    use_once(m1, "db")  # its hold limit is in the base's table
    with open(m1.path("db", "maxhold"), "w") as f:
        f.write("60\n")
    use_once(m1, "gone")
    assert kept_while_reaped(zk, base, "jobs", "gone"), \
        "the limit's resource was reaped"
    assert open(m2.path("jobs", "limit")).read() == "3\n"
    assert open(m2.path("db", "maxhold")).read() == "60\n"
    with open(m1.path("db", "maxhold"), "w") as f:
        f.write("0\n")


def test_a_resource_another_tool_made_is_used_and_kept(zk, base, m1):
    zk.create(f"{base}/theirs", b"")  # persistent, as kazoo makes it
    use_once(m1, "theirs")
    use_once(m1, "ours")
    released(zk, base)
    wait_until(lambda: "ours" not in resources(zk, base), 15,
               "the server to reap the mount's own resource")
    assert "theirs" in resources(zk, base), "another tool's znode went"
    zk.delete(f"{base}/theirs")


WORKER = r'''
import os, random, sys, time
sys.path.insert(0, sys.argv[1])
from sections import Section
mount, directory, log, rounds, seed = sys.argv[2:7]
rng = random.Random(int(seed))
logfd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
for _ in range(int(rounds)):
    name = rng.choice(["a", "b", "c"])
    fd = os.open(os.path.join(mount, name, "write"), os.O_WRONLY)
    with Section(os.path.join(directory, name), "W", logfd):
        time.sleep(0.005)
    os.close(fd)
    # Now and then idle long enough for the server to reap (it checks
    # every second), so that opens race the reaper.
    time.sleep(rng.choice([0, 0, 0.05, 0.6, 1.3]))
'''


def test_opens_go_on_while_the_server_reaps(zk, base, mounts):
    """Workers on three mounts lock three names in a loop, idle at random
    so that the server reaps the names under them: no open fails, no two
    holders of a name overlap, and the names are made again."""
    ms = [mounts.new(), mounts.new(), mounts.new()]
    marker = tempfile.mkdtemp(prefix="zklockfs-reap-")
    for name in "abc":
        os.mkdir(os.path.join(marker, name))
    log = os.path.join(marker, "log")
    seed = int(os.environ.get("ZKLOCKFS_SEED", random.randrange(1 << 30)))
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, HERE,
                               ms[i % 3].mountpoint, marker, log, "14",
                               str(seed + i)], stderr=subprocess.PIPE,
                              text=True)
             for i in range(6)]
    try:
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"a worker's open failed (seed {seed}):\n{err}"
        with open(log) as f:
            lines = f.read().split()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        shutil.rmtree(marker)
    assert "OVERLAP" not in lines, f"two holders of a name at once (seed {seed})"
    assert lines.count("ENTER") == 6 * 14
    created = sum(int(status(m)["resources_created"]) for m in ms)
    assert created > 3, \
        f"no name was made again ({created} creates, seed {seed}): reaping untried"
    assert lock_nodes(zk, base) == []


def daemon_rss_kib(mount):
    with open(f"/proc/{mount.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def forget_all():
    """Have the kernel drop its dentries and inodes: FUSE sends FORGET."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2\n")


@pytest.mark.plain  # RSS: not under a sanitizer's allocator
def test_the_daemon_keeps_nothing_for_names_the_kernel_forgot(m1):
    def use(names):
        for name in names:
            os.stat(m1.path(name, "lock"))  # looked up: an entry each
        assert int(status(m1)["resources"]) >= len(names)
        forget_all()
        wait_until(lambda: int(status(m1)["resources"]) < 10, 30,
                   "the daemon to free the entries the kernel forgot")

    # A leak grows the daemon at every round of 3,000 names; the first
    # rounds also grow it for threads and malloc arenas that a busy
    # machine makes libfuse start (three test files run at a time), once.
    # So: four rounds after a first, and one at least must leave the
    # daemon within 1 MiB of where it was (a leak of 350 bytes a name
    # grows every round by more).
    use([f"first-{i}" for i in range(3000)])
    grown = []
    for r in range(4):
        rss = daemon_rss_kib(m1)
        use([f"round{r}-{i}" for i in range(3000)])
        grown.append(daemon_rss_kib(m1) - rss)
    assert min(grown) < 1024, \
        f"every round of 3,000 names used and forgotten grew the daemon " \
        f"(KiB): {grown}"


def test_containers_no_makes_persistent_resources(zk, base, mounts):
    """-o containers=no, for a base that kazoo-dialect mounts share: the
    mount's resource znodes are persistent and stay after their last
    lock, where the default mount's are reaped; .status says which."""
    default, persistent = mounts.new(), mounts.new("-o", "containers=no")
    assert status(default)["containers"] == "yes"
    assert status(persistent)["containers"] == "no"
    use_once(persistent, "kept")
    with open(persistent.path("kept", "limit"), "w") as f:
        f.write("2\n")  # no pin: kazoo would count it as a lease
    assert zk.get_children(f"{base}/kept") == []
    use_once(default, "reaped")
    assert kept_while_reaped(zk, base, "kept", "reaped"), \
        "a persistent resource was reaped"
    assert open(default.path("kept", "limit")).read() == "2\n"
    zk.delete(f"{base}/kept")


def test_a_start_cleans_up_a_probe_left_behind(zk, base, mounts):
    """A start that died between its container probe's two creates left
    an empty container that the server never reaps: the next start
    deletes it, keeps one in use (another start's, with its child), and
    leaves none of its own."""
    zk.ensure_path(base)
    # Persistent stand-ins (kazoo makes no containers): the start deletes
    # by name and emptiness, whatever the kind.
    zk.create(f"{base}/.zklockfs-probe-0badc0de-c", b"")
    zk.create(f"{base}/.zklockfs-probe-12345678-c/x", b"", makepath=True)
    mounts.new()
    left = sorted(c for c in zk.get_children(base)
                  if c.startswith(".zklockfs-probe"))
    assert left == [".zklockfs-probe-12345678-c"], \
        f"probes after the start: {left}"
    zk.delete(f"{base}/.zklockfs-probe-12345678-c", recursive=True)
