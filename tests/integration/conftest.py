"""pytest fixtures: one ZooKeeper server for the run, two fresh mounts and
a fresh base path per test, and the check that no lock znode is left."""
import os
import shutil
import signal
import sys
import tempfile
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (Mounts, ZooKeeper, kazoo_client, status,  # noqa: E402
                     wait_until)
from services import CuratorJava, start_service  # noqa: E402
from tcpproxy import TcpProxy  # noqa: E402


# The run's files (tmp_path: servers' data and logs, copies of the tree,
# tens of MB) in a directory of its own under $TMPDIR, removed when the run
# passes and kept, its path said, when it fails, as contrib/run-tests does
# with $TMPDIR itself: pytest's default, $TMPDIR/pytest-of-USER, keeps the
# last three runs.  An explicit --basetemp is left alone, and a worker of
# pytest-xdist gets a directory inside the controller's.
RUN_DIR = {}


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path reads it
def pytest_configure(config):
    if config.option.basetemp is None and not hasattr(config, "workerinput"):
        RUN_DIR["path"] = config.option.basetemp = tempfile.mkdtemp(
            prefix="zklockfs-pytest-")


def pytest_sessionfinish(session, exitstatus):
    RUN_DIR["status"] = exitstatus


def pytest_unconfigure(config):
    path = RUN_DIR.pop("path", None)
    if path is None or not os.path.exists(path):
        return
    if not os.listdir(path):  # no test ran (--help, --markers)
        os.rmdir(path)
        return
    with open("/proc/self/mounts") as f:
        mounted = [line.split()[1] for line in f
                   if line.split()[1].startswith(path + "/")]
    if RUN_DIR.get("status") in (pytest.ExitCode.OK,
                                 pytest.ExitCode.NO_TESTS_COLLECTED) \
            and not mounted:
        shutil.rmtree(path)
    else:
        print(f"\nthe tests' files and logs are kept in {path}"
              + (f" (still mounted there: {' '.join(mounted)})"
                 if mounted else ""), file=sys.stderr)


# What each build's run of the suite leaves out, by marker (pytest.ini
# registers them): CI runs the suite three times, and the three keep to
# about 12 minutes (three files at a time: SHARED below).  The daemon's code on the paths left out
# runs under the sanitizers in the unit tests (peerlease, names, holders,
# jeopardy, heartbeat).  "-concurrency" leaves out what lacks the marker.
LEFT_OUT = {
    "address": ("peers", "partition", "slow", "plain"),
    "thread": ("peers", "slow", "plain", "-concurrency"),
}


# Run by several workers (pytest-xdist, --dist loadgroup: what
# contrib/run-tests does), the suite keeps each file on one worker, as its
# module fixtures expect, and files that share something beyond their own
# ZooKeeper and mounts together, one after the other: the test hosts'
# network namespaces and links (netns.py), and the machine itself (dpkg
# and apt-get, a build of the tree, contrib/run-local).
SHARED = {
    "test_partition": "netns", "test_tls_partition": "netns",
    "test_history": "netns",
    "test_package": "machine", "test_readme": "machine",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Deselect (not skip) what this build's run leaves out: a skip is for
    a test that cannot run here, and says why (pytest -rs).  Group the
    rest for the workers, if any (SHARED)."""
    # A worker runs with dist "no" and loadgroup set; the controller
    # with dist "loadgroup".
    if getattr(config.option, "loadgroup", False) or \
            getattr(config.option, "dist", "no") == "loadgroup":
        for item in items:
            module = item.module.__name__
            item.add_marker(pytest.mark.xdist_group(SHARED.get(module, module)))
    sanitizer = os.environ.get("ZKLOCKFS_SANITIZE", "none")
    kept, left = [], []
    for item in items:
        out = False
        for name, markers in LEFT_OUT.items():
            if name not in sanitizer:
                continue
            for marker in markers:
                lacking = marker.startswith("-")
                if (item.get_closest_marker(marker.lstrip("-")) is None) \
                        == lacking:
                    out = True
        (left if out else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
def zookeeper():
    server = ZooKeeper()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zk(zookeeper):
    with kazoo_client(zookeeper.connect) as client:
        yield client


@pytest.fixture
def base():
    return "/t-" + uuid.uuid4().hex[:12]


@pytest.fixture
def mounts(zookeeper, zk, base):
    ms = Mounts(zookeeper.connect + base)
    yield ms
    ms.finish(zk, base)


@pytest.fixture
def m1(mounts):
    return mounts.new()


@pytest.fixture
def m2(mounts):
    return mounts.new()


@pytest.fixture(scope="session")
def curator_java():
    """CuratorLocks.java compiled once per run, for every test that runs a
    Curator service; skipped, saying why, where there is no JDK or no
    Curator (contrib/install-deps --tests installs both)."""
    try:
        java = CuratorJava()
    except AssertionError as e:
        pytest.skip(f"no Java service can run here: {e}")
    yield java
    java.remove()


@pytest.fixture
def cut_off(zookeeper, zk, base):
    """A mount whose connection to ZooKeeper goes through a proxy that the
    test holds and cuts; nothing of it may be left afterwards."""
    proxy = TcpProxy(zookeeper.port)
    mounts = Mounts(proxy.connect + base)
    try:
        yield proxy, mounts.new()
        proxy.accept()
        wait_until(lambda: status(mounts.started[0])["state"] == "connected",
                   20, "the mount to be connected again")
    finally:
        mounts.finish(zk, base)
        proxy.stop()


@pytest.fixture
def paused(mounts):
    """Mounts whose daemon a test may SIGSTOP: resumed whatever happens."""
    stopped = []
    yield stopped
    for m in stopped:
        if m.proc.poll() is None:
            os.kill(m.proc.pid, signal.SIGCONT)


# Another tool's services (the peers marker's tests).
@pytest.fixture(params=["curator", "kazoo"])
def tool(request):
    return request.param


@pytest.fixture
def service(request, tool, zookeeper, mounts):
    """The tool's service; closed before the end-of-test checks (it is set
    up after `mounts`, so torn down before)."""
    svc = start_service(request, tool, zookeeper.connect)
    yield svc
    svc.close()


@pytest.fixture
def two(tool, mounts):
    """Two mounts (two hosts) of the tool's dialect."""
    return (mounts.new("-o", f"dialect={tool}"),
            mounts.new("-o", f"dialect={tool}"))
