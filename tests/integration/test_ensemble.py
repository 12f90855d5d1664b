"""A 3-node ZooKeeper ensemble on loopback: the leader dies while two
mounts loop on one lock."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from harness import Ensemble, Mounts, four_letter, kazoo_client, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
INVARIANT_WORKER = os.path.join(HERE, "invariant_worker.py")


@pytest.fixture(scope="module")
def ensemble():
    e = Ensemble(3)
    try:
        yield e.start()
    finally:
        e.stop()


@pytest.fixture
def ens_zk(ensemble):
    with kazoo_client(ensemble.connect) as client:
        yield client


def session_id(mount):
    """The mount's ZooKeeper session id, as its log states it."""
    for word in mount.log().replace(")", " ").split():
        if word.startswith("0x"):
            return int(word, 16)
    raise AssertionError("no session id in the log:\n" + mount.log())


def on_server(server, mount):
    return f"sid=0x{session_id(mount):x}" in four_letter(server.port, "cons")


def entries(log):
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return f.read().split()


def test_leader_killed_while_two_mounts_loop_on_one_lock(ensemble, ens_zk, base):
    ms = Mounts(ensemble.connect + base)
    try:
        mounts = [ms.new("-o", "session_timeout=10") for _ in range(2)]
        # The kill must hit a session: remount until one is on the leader.
        leader = ensemble.leader()
        for _ in range(25):
            if any(on_server(leader, m) for m in mounts):
                break
            old = mounts[1]
            ms.started.remove(old)
            problem = old.exit_problem(old.stop())
            assert not problem, problem
            old.remove_log()  # clean: its log goes, as Mounts' do
            mounts[1] = ms.new("-o", "session_timeout=10")
        assert any(on_server(leader, m) for m in mounts), \
            "no mount's session landed on the leader"
        marker = tempfile.mkdtemp(prefix="zklockfs-cs-")
        log = tempfile.mktemp(prefix="zklockfs-cs-log-")
        rounds, per_mount = 10, 10
        workers = [subprocess.Popen([sys.executable, INVARIANT_WORKER,
                                     m.path("inv", "write"), marker, log,
                                     str(rounds)])
                   for m in mounts for _ in range(per_mount)]
        try:
            wait_until(lambda: entries(log).count("ENTER") >= 20, 30,
                       "the workers to make progress before the kill")
            leader.kill()
            for w in workers:
                w.wait(90)
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
        lines = entries(log)
        os.unlink(log)
        shutil.rmtree(marker)
        assert all(w.returncode == 0 for w in workers), \
            [w.returncode for w in workers]
        assert "OVERLAP" not in lines, "two writers were in the section at once"
        assert lines.count("ENTER") == 2 * per_mount * rounds, \
            "a loop did not finish every round"
        assert any("connection lost" in m.log() for m in mounts), \
            "no mount noticed the leader's death"
    finally:
        ms.finish(ens_zk, base)
