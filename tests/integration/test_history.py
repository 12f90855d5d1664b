"""A history checker, in the manner of Jepsen: clients on three mounts (two
of them in network namespaces of the test's, netns.py) lock, hold and
unlock two resources of a 3-node ensemble in a loop and record every hold
(some holders exec in the middle of theirs), while a nemesis cuts links,
kills the ZooKeeper leader, pauses daemons (SIGSTOP, shorter than half the
session timeout: a longer pause is outside the guarantee, doc/failures.md "Told
before anyone else can hold"), kill -9s them, and as a hostile client
deletes waiters' and holders' nodes, breaks and asks, at random but
seeded.  Then: no two holds of one resource overlap in time, tokens rise
with start times, and no lock node is left.  A hold ends just before its
client closed, or, if it was lost, just before the last read that still
succeeded: a read made after another host was granted must fail, however
late the client hears of its loss.  A hold whose node the nemesis deleted
ends then: nobody can be told before that.

ZKLOCKFS_HISTORY_SECONDS sets how long (default 60, 20 under the
sanitizers); ZKLOCKFS_HISTORY_SEED replays a run (the seed is printed, and
named by every failure)."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from harness import (Ensemble, Mount, kazoo_client, lock_nodes, stop_mounts,
                     wait_until)
from netns import made_hosts

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "history_client.py")
RESOURCES = "r0,r1"
CLIENTS_PER_MOUNT = 2
TIMEOUT_S = 4  # the mounts' session timeout (harness.Mount)


@pytest.fixture(scope="module")
def hosts():
    with made_hosts(3, 4, 5) as made:  # servers, mount B, mount C
        yield made


@pytest.fixture(scope="module")
def ensemble(hosts):
    e = Ensemble(3, address=hosts[0].outer_addr)
    try:
        e.start()
        yield e
    finally:
        e.stop()


class Node:
    """A mount (root namespace, or a host's) and the clients on it."""

    def __init__(self, name, connect, host, until, seed, outdir):
        self.name, self.connect, self.host = name, connect, host
        self.until, self.seed, self.outdir = until, seed, outdir
        self.mount = None
        self.mounts = []  # every mount started, for the end
        self.clients = []
        self.generation = 0

    def start(self):
        prefix = self.host.prefix if self.host else ()
        self.mount = Mount(self.connect, ["-o", "on_lost=signal:USR1"],
                           prefix).start()
        self.mounts.append(self.mount)
        self.generation += 1
        for i in range(CLIENTS_PER_MOUNT):
            out = os.path.join(self.outdir,
                               f"{self.name}{self.generation}-{i}.log")
            self.clients.append(subprocess.Popen(
                [sys.executable, CLIENT, self.mount.mountpoint, RESOURCES,
                 f"{self.seed}-{self.name}{self.generation}-{i}",
                 f"{self.until}", out], start_new_session=True))

    def kill_and_restart(self):
        self.mount.kill()
        # Its clients see ENOTCONN and leave; the dead mount is cleared.
        for c in self.clients:
            if c.poll() is None:
                try:
                    c.wait(20)
                except subprocess.TimeoutExpired:
                    c.kill()
        self.mount.stop()
        self.start()

    def holding(self):
        """Is a client of this node's current mount holding a lock now?"""
        for i in range(CLIENTS_PER_MOUNT):
            path = os.path.join(self.outdir,
                                f"{self.name}{self.generation}-{i}.log")
            try:
                with open(path) as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                continue
            if lines and lines[-1].startswith("begin "):
                return True
        return False

    def pause(self, seconds):
        self.mount.proc.send_signal(signal.SIGSTOP)
        time.sleep(seconds)  # the pause's length
        self.mount.proc.send_signal(signal.SIGCONT)

    def wait_clients(self, timeout):
        for c in self.clients:
            try:
                c.wait(timeout)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()
                raise AssertionError(f"a client of {self.name} did not end")


def queue_of(zk, res):
    """res's lock nodes, oldest first (their sequence numbers)."""
    try:
        names = zk.get_children(res)
    except Exception:  # noqa: BLE001 (the ensemble may be electing)
        return []
    return [f"{res}/{n}" for n in sorted(names, key=lambda n: n[-10:])]


def hostile(rng, zk, nodes, base, what, deleted):
    """Another client's doing: delete a waiter's or the holder's node,
    or break or ask through a mount's revoke file.  Returns its log line,
    or None if there was nothing to do."""
    res = f"{base}/{rng.choice(RESOURCES.split(','))}"
    queue = queue_of(zk, res)
    if what == "delete_waiter" and len(queue) > 1:
        victim = rng.choice(queue[1:])
    elif what == "delete_holder" and queue:
        victim = queue[0]
    elif what in ("break", "ask"):
        mount = rng.choice(nodes).mount
        try:
            with open(mount.path(res.rsplit("/", 1)[1], "revoke"), "w") as f:
                f.write(what + "\n")
        except OSError as e:
            return f"{what} {res}: {e.strerror}"
        return f"{what} {res} from {mount.mountpoint}"
    else:
        return None
    t = time.monotonic()
    try:
        zk.delete(victim)
    except Exception:  # noqa: BLE001 (gone already, or no quorum)
        return None
    deleted[victim] = t
    return f"deleted {victim}"


HOSTILE = ["delete_waiter", "delete_holder", "break", "ask"]


def nemesis(rng, ensemble, nodes, hosts, until, events, zk, base, deleted):
    """One fault at a time, until `until`; each is logged in events."""
    while time.monotonic() < until - 3:
        time.sleep(rng.uniform(0.5, 2.5))
        what = rng.choice(["cut", "cut", "cut", "leader", "pause", "kill",
                           "hostile", "hostile", "hostile"])
        t = time.monotonic()
        if what == "hostile":
            line = hostile(rng, zk, nodes, base, rng.choice(HOSTILE),
                           deleted)
            if line:
                events.append(f"{t:.3f} {line}")
        elif what == "cut":
            # A cut matters most while one of the host's clients holds.
            cuttable = nodes[1:]
            node = next((n for n in rng.sample(cuttable, len(cuttable))
                         if n.holding()), rng.choice(cuttable))
            host, held = node.host, node.holding()
            length = rng.uniform(0.3, 3 * TIMEOUT_S)
            host.cut()
            time.sleep(length)  # the cut's length
            host.heal()
            events.append(f"{t:.3f} cut {node.name} for {length:.2f} s"
                          f"{' while it held' if held else ''}")
        elif what == "leader":
            leader = ensemble.leader()
            leader.kill()
            time.sleep(rng.uniform(0.5, 3))
            leader.log.close()
            leader.start()
            events.append(f"{t:.3f} killed leader {leader.myid}")
        elif what == "pause":
            node = rng.choice(nodes)
            length = rng.uniform(0.1, TIMEOUT_S / 2 * 0.9)
            node.pause(length)
            events.append(f"{t:.3f} paused {node.name} for {length:.2f} s")
        else:
            node = rng.choice(nodes)
            node.kill_and_restart()
            events.append(f"{t:.3f} kill -9 of {node.name}, restarted")


def read_holds(outdir):
    holds = []
    for name in sorted(os.listdir(outdir)):
        with open(os.path.join(outdir, name)) as f:
            for line in f:
                w = line.split()
                if w[0] == "hold":
                    holds.append({"client": name[:-4], "res": w[1],
                                  "token": None if w[2] == "-" else int(w[2]),
                                  "start": float(w[3]), "end": float(w[4]),
                                  "how": w[5], "last_ok": float(w[6]),
                                  "node": w[7]})
    return holds


def check(holds, deleted, base):
    """The problems of a history: overlapping holds of one resource, and
    tokens that do not rise with start times.  A hold lost ends just before
    the last read that succeeded (its client hears of the loss later, how
    much later depends on the scheduler); one whose node another client
    deleted, at that deletion."""
    problems = []
    for h in holds:
        if h["how"] != "released":
            h["end"] = min(h["end"], h["last_ok"])
        t = deleted.get(h["node"])
        if t is not None and t < h["start"] - 1:
            # Told a grant a second after its node was deleted: the
            # deletion was known to its mount long before.
            problems.append(f"{h} was granted after its node was deleted "
                            f"at {t:.4f}")
        if t is not None:
            h["end"] = min(h["end"], t)
    for res in RESOURCES.split(","):
        mine = sorted((h for h in holds if h["res"] == res),
                      key=lambda h: h["start"])
        latest = None  # the hold that ends last so far
        for h in mine:
            if latest and h["start"] < latest["end"]:
                problems.append(f"{res}: {h} began before {latest} ended")
            if latest is None or h["end"] > latest["end"]:
                latest = h
        tokens = [h for h in mine if h["token"] is not None]
        for a, b in zip(tokens, tokens[1:]):
            if b["token"] <= a["token"]:
                problems.append(f"{res}: token {b['token']} of {b} not above "
                                f"{a['token']} of the earlier {a}")
    return problems


# A minute of faults, the longest test: the plain run has it.
@pytest.mark.slow
def test_no_two_holds_overlap_under_a_seeded_nemesis(hosts, ensemble):
    sanitized = os.environ.get("ZKLOCKFS_SANITIZE", "none") != "none"
    seconds = float(os.environ.get("ZKLOCKFS_HISTORY_SECONDS",
                                   "20" if sanitized else "60"))
    seed = os.environ.get("ZKLOCKFS_HISTORY_SEED", uuid.uuid4().hex[:8])
    print(f"history seed {seed} ({seconds:.0f} s)")
    rng = random.Random(seed)
    base = "/h-" + seed
    outdir = tempfile.mkdtemp(prefix="zklockfs-history-")
    until = time.monotonic() + seconds
    connect = ensemble.connect + base
    nodes = [Node("A", connect, None, until, seed, outdir),
             Node("B", connect, hosts[1], until, seed, outdir),
             Node("C", connect, hosts[2], until, seed, outdir)]
    events = []
    deleted = {}  # node path: when the nemesis deleted it
    hostile_zk = kazoo_client(ensemble.connect)
    try:
        for n in nodes:
            n.start()
        with hostile_zk as zk:
            nemesis(rng, ensemble, nodes, hosts, until, events, zk, base,
                    deleted)
        for n in nodes:
            n.wait_clients(OPEN_WAIT_S)
        holds = read_holds(outdir)
        context = (f"seed {seed}; replay with ZKLOCKFS_HISTORY_SEED={seed}"
                   f"\nnemesis:\n  " + "\n  ".join(events))
        problems = check(holds, deleted, base)
        assert not problems, "\n".join(problems[:10]) + "\n" + context
        lost = sum(h["how"] != "released" for h in holds)
        per_mount = {n.name: sum(h["client"].startswith(n.name)
                                 for h in holds) for n in nodes}
        print(f"{len(holds)} holds {per_mount} ({lost} ended by a loss), "
              f"{len(events)} faults: no overlap\n  " + "\n  ".join(events))
        # Long holds (a third of them, 3 to 12 s) and faults make few;
        # none would be a hang.
        assert len(holds) >= seconds / 6, \
            f"only {len(holds)} holds in {seconds:.0f} s\n{context}"
        with kazoo_client(ensemble.connect) as zk:
            wait_until(lambda: not lock_nodes(zk, base), 3 * TIMEOUT_S,
                       f"no lock node left under {base} ({context})")
    finally:
        for h in hosts:
            h.heal()
        for n in nodes:
            for c in n.clients:
                if c.poll() is None:
                    c.kill()
                    c.wait()
        stop_mounts([m for n in nodes for m in n.mounts])


# A client's open is given up after 15 s (history_client.py); its last
# hold ends by `until`: this is how long the end may take after it.
OPEN_WAIT_S = 30
