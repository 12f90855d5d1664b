"""MOUNT/.metrics and -o metrics_file on real mounts: the text is what
Prometheus's own `promtool check metrics` accepts; its numbers follow the
locks taken (by mode and kind), waited for, released, lost and asked to let
go, and ZooKeeper's answers; reading it asks ZooKeeper nothing (it answers
while cut off); the file kept by -o metrics_file is served by the real
prometheus-node-exporter's textfile collector, follows a state change
within a second or so, and goes at unmount."""
import contextlib
import fcntl
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

from harness import (Driver, Locker, Mounts, free_port, lock_nodes, running,
                     status, wait_until, zklockfs_binary)
from readme import doc_block
from tcpproxy import TcpProxy
from test_hangs import answered_within
from test_revoke import revoke

# Other programs reading the text (the node exporter, Prometheus) are the
# plain run's business: under a sanitizer, the daemon's side of it (the
# text, the file's writer) is run by the tests without them.
THEIR_PROGRAMS = pytest.mark.plain

SERIES = re.compile(r'^(zklockfs_\w+)\{mountpoint="([^"]*)",?([^}]*)\} (\S+)$')


def metrics(mount):
    with open(mount.path(".metrics")) as f:
        return f.read()


def values(text, mountpoint=None):
    """{name{labels}: value} of every sample of the text, the mount point
    label (every sample's first) checked and left out."""
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SERIES.match(line)
        assert m, f"not a sample line: {line!r}"
        assert mountpoint is None or m.group(2) == mountpoint, line
        labels = "{" + m.group(3) + "}" if m.group(3) else ""
        found[m.group(1) + labels] = float(m.group(4))
    return found


def sample(mount, name, **labels):
    key = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items())
                  + "}" if labels else "")
    return values(metrics(mount), os.path.realpath(mount.mountpoint))[key]


def test_the_text_is_what_promtool_accepts(m1):
    assert ".metrics" in os.listdir(m1.path())
    assert os.stat(m1.path(".metrics")).st_mode & 0o777 == 0o444
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    text = metrics(m1)
    res = subprocess.run(["promtool", "check", "metrics"], input=text,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'version="' in text
    assert sample(m1, "zklockfs_session_state", state="connected") == 1
    holder.close()


def test_locks_are_counted_by_mode_and_kind(m1, m2):
    holder = Locker(m2.path("r", "write"), "rw")
    holder.granted()
    waiter = Locker(m1.path("r", "write"))
    wait_until(lambda: sample(m1, "zklockfs_locks_waiting", mode="write",
                              kind="open") == 1, 15, "the waiter counted")
    holder.close()
    waiter.granted()
    assert sample(m1, "zklockfs_locks_held", mode="write", kind="open") == 1
    assert sample(m1, "zklockfs_locks_waiting", mode="write",
                  kind="open") == 0
    waiter.close()
    wait_until(lambda: sample(m1, "zklockfs_locks_held", mode="write",
                              kind="open") == 0, 15, "the release counted")
    got = values(metrics(m1))
    lock = '{mode="write",kind="open"}'
    assert got["zklockfs_grants_total" + lock] == 1
    assert got["zklockfs_releases_total" + lock] == 1
    assert got['zklockfs_wait_seconds_count' + lock] == 1
    assert got['zklockfs_wait_seconds_sum' + lock] > 0, "it waited"
    assert got['zklockfs_hold_seconds_count' + lock] == 1
    assert got['zklockfs_zookeeper_request_seconds_count{op="create"}'] >= 1
    # The release is counted when asked; the delete's answer comes after.
    wait_until(lambda: sample(m1, "zklockfs_zookeeper_request_seconds_count",
                              op="delete") >= 1, 15, "the delete timed")

    fd = os.open(m1.path("r", "lock"), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_SH)
    assert sample(m1, "zklockfs_locks_held", mode="read", kind="flock") == 1
    fcntl.flock(fd, fcntl.LOCK_UN)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    assert sample(m1, "zklockfs_locks_held", mode="write", kind="fcntl") == 1
    os.close(fd)
    lease = os.open(m1.path("jobs", "lease"), os.O_RDWR)
    assert sample(m1, "zklockfs_locks_held", mode="lease", kind="open") == 1
    os.close(lease)
    got = values(metrics(m1))
    for mode, kind in (("read", "flock"), ("write", "fcntl"),
                       ("lease", "open")):
        assert got[f'zklockfs_grants_total{{mode="{mode}",kind="{kind}"}}'] \
            == 1, (mode, kind)


@pytest.mark.concurrency
def test_a_downgrade_whose_write_node_went_counts_the_loss(zk, base,
                                                          cut_off):
    """The write node is deleted by another client while the downgrade's
    transaction is on its way: the flock fails, and the write lock counts
    as lost (grants = releases + losses + held, always)."""
    proxy, m = cut_off
    d = Driver()
    d.ok(f"open f {m.path('r', 'lock')}")
    d.ok("flock f ex")
    node, = lock_nodes(zk, f"{base}/r")
    proxy.hold()
    d.send("flock f sh")
    wait_until(lambda: status(m)["waiting"] == "1", 15,
               "the downgrade on its way")
    zk.delete(node)
    proxy.cut()
    proxy.accept()
    assert d.answer(30).startswith("err"), "the downgrade fails"
    lock = '{mode="write",kind="flock"}'
    wait_until(lambda: values(metrics(m))["zklockfs_losses_total" + lock] == 1,
               20, "the write lock counted lost")
    got = values(metrics(m))
    assert got["zklockfs_grants_total" + lock] == 1
    assert got["zklockfs_releases_total" + lock] == 0
    assert got["zklockfs_locks_held" + lock] == 0
    d.exit()


def test_losses_and_requests_to_let_go_are_counted(m1, m2):
    holder = Locker(m1.path("r", "write"), "rw")
    holder.granted()
    revoke(m2, "ask")
    wait_until(lambda: sample(m1, "zklockfs_revocations_total") == 1, 15,
               "the ask counted where the holder is")
    assert sample(m2, "zklockfs_revoke_sent_total", how="ask") == 1
    revoke(m2, "break")
    wait_until(lambda: sample(m1, "zklockfs_losses_total", mode="write",
                              kind="open") == 1, 15, "the loss counted")
    assert sample(m1, "zklockfs_locks_held", mode="write", kind="open") == 0
    assert sample(m2, "zklockfs_revoke_sent_total", how="break") == 1
    holder.close()


@pytest.fixture
def proxied(zookeeper, zk, base, tmp_path):
    """A mount through a proxy the test cuts, keeping a metrics file."""
    proxy = TcpProxy(zookeeper.port)
    mounts = Mounts(proxy.connect + base)
    path = tmp_path / "zklockfs.prom"
    try:
        yield proxy, mounts, mounts.new("-o", f"metrics_file={path}"), path
        proxy.accept()
    finally:
        mounts.finish(zk, base)
        proxy.stop()


@pytest.mark.concurrency
def test_reading_asks_zookeeper_nothing_and_the_file_follows_the_state(
        proxied):
    proxy, mounts, m, path = proxied

    def state_in_file(state):
        return path.exists() and \
            values(path.read_text())[f'zklockfs_session_state{{state="{state}"}}'] == 1
    wait_until(lambda: state_in_file("connected"), 15,
               "the metrics file written")
    proxy.cut()
    wait_until(lambda: status(m)["state"] == "suspended", 10,
               "the mount to see the connection lost")
    text = answered_within(1, metrics, m)
    assert values(text)['zklockfs_session_state{state="suspended"}'] == 1
    assert values(text)["zklockfs_connection_losses_total"] == 1
    wait_until(lambda: state_in_file("suspended"), 3,
               "the file to follow the state")
    proxy.accept()
    wait_until(lambda: state_in_file("connected"), 15,
               "the file to follow it back")
    assert not [p for p in os.listdir(path.parent) if p != path.name], \
        "no temporary file left beside it"
    mounts.stop_all()
    mounts.started.clear()  # stopped, and its exit checked
    assert not path.exists(), "removed at unmount"


def node_exporter_metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                timeout=10) as r:
        return r.read().decode()


@contextlib.contextmanager
def node_exporter(textfiles):
    """The real node exporter on a free loopback port, serving the *.prom
    files of the directory textfiles (and nothing else): its port."""
    port = free_port()
    with running(["prometheus-node-exporter",
                  f"--web.listen-address=127.0.0.1:{port}",
                  "--collector.disable-defaults", "--collector.textfile",
                  f"--collector.textfile.directory={textfiles}"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        wait_until(lambda: listening(port), 15, "the node exporter listening")
        yield port


@THEIR_PROGRAMS
def test_the_node_exporter_serves_two_mounts_files_side_by_side(
        mounts, tmp_path):
    """It refuses two samples of one name and labels from two files (and
    still says node_textfile_scrape_error 0): each mount's carry its mount
    point."""
    ms = [mounts.new("-o", f"metrics_file={tmp_path}/zklockfs-{i}.prom")
          for i in range(2)]
    mps = [os.path.realpath(m.mountpoint) for m in ms]
    holder = Locker(ms[1].path("r", "write"), "rw")
    holder.granted()
    wait_until(lambda: values((tmp_path / "zklockfs-1.prom").read_text())[
        'zklockfs_locks_held{mode="write",kind="open"}'] == 1, 15,
               "the second mount's file to show its lock")
    with node_exporter(tmp_path) as port:
        served = node_exporter_metrics(port)
    assert "node_textfile_scrape_error 0" in served, served[-2000:]
    for mp, held in zip(mps, (0, 1)):
        assert 'zklockfs_locks_held{kind="open",mode="write",' \
            f'mountpoint="{mp}"}} {held}' in served, \
            [line for line in served.splitlines() if "locks_held" in line]
        assert f'zklockfs_session_state{{mountpoint="{mp}",' \
            'state="connected"} 1' in served
    holder.close()


@pytest.mark.parametrize("value,said", [
    ("relative.prom", "must be an absolute path"),
    ("/nonexistent/dir/x.prom", "cannot write in /nonexistent/dir"),
    ("/tmp", "not a regular file"),
])
def test_a_metrics_file_that_cannot_be_written_fails_the_start(
        zookeeper, base, value, said):
    with tempfile.TemporaryDirectory() as mnt:
        res = subprocess.run([zklockfs_binary(), "-f", "-o",
                              f"metrics_file={value}",
                              zookeeper.connect + base, mnt],
                             capture_output=True, text=True, timeout=30)
    assert res.returncode != 0 and said in res.stderr, res


QUERIES = "# who waits longest: the 99th percentile wait, per host and mount"


def listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 1):
            return True
    except OSError:
        return False


def prometheus_query(port, query):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + \
        urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


@THEIR_PROGRAMS
def test_the_readme_queries_run_on_prometheus(mounts, tmp_path):
    """doc/operations.md's queries, on a real Prometheus scraping the node
    exporter that serves a mount's metrics file: each is valid PromQL, and
    the churn query sees the write locks taken."""
    queries = [line for line in doc_block(QUERIES).text.splitlines()
               if line and not line.startswith("#")]
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    m = mounts.new("-o", f"metrics_file={textfiles}/zklockfs.prom")
    server = free_port()
    config = tmp_path / "prometheus.yml"
    with node_exporter(textfiles) as exporter:
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{exporter}']\n")
        with running(["prometheus", f"--config.file={config}",
                      f"--storage.tsdb.path={tmp_path}/tsdb",
                      f"--web.listen-address=127.0.0.1:{server}"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            churn_and_query(m, server, queries)


def churn_and_query(m, server, queries):
    """Take write locks on m until Prometheus sees the churn, then ask it
    every query."""
    wait_until(lambda: listening(server), 30, "Prometheus listening")
    deadline = time.monotonic() + 60
    rates = {}
    while not rates.get("write") and time.monotonic() < deadline:
        for _ in range(3):
            os.close(os.open(m.path("r", "write"), os.O_RDWR))
        time.sleep(1)  # a scrape interval: rate() needs two samples
        churn = prometheus_query(server, queries[1])["data"]["result"]
        rates = {r["metric"]["mode"]: float(r["value"][1])
                 for r in churn}
    assert rates.get("write", 0) > 0, f"no write churn seen: {rates}"
    assert rates["read"] == 0 and rates["lease"] == 0, rates
    for q in queries:
        answer = prometheus_query(server, q)
        assert answer["status"] == "success", (q, answer)


def test_a_mount_point_that_is_not_utf8_gives_valid_text(mounts):
    """Prometheus takes only UTF-8 in a label: the mount point's other
    bytes are written %XX, and promtool accepts the text."""
    top = tempfile.mkdtemp(prefix="zklockfs-mnt-")
    point = os.path.join(os.fsencode(top), b"caf\xe9")
    os.mkdir(point)
    log = open(top + ".log", "wb")
    daemon = subprocess.Popen(
        [zklockfs_binary(), "-f", "-o", "session_timeout=4",
         mounts.connect, point], stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        wait_until(lambda: daemon.poll() is not None or
                   os.path.exists(os.path.join(point, b".metrics")), 30,
                   "the mount at a non-UTF-8 path")
        assert daemon.poll() is None, "zklockfs exited"
        with open(os.path.join(point, b".metrics"), "rb") as f:
            raw = f.read()
        text = raw.decode("utf-8")  # it is UTF-8, or this fails
        assert 'mountpoint="' + top + '/caf%E9"' in text
        res = subprocess.run(["promtool", "check", "metrics"], input=text,
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr
    finally:
        daemon.terminate()
        status = daemon.wait(30)
        subprocess.run(["fusermount3", "-u", "-z", point], check=False)
        os.rmdir(point)
        os.rmdir(top)
        log.close()
    assert status == 0, open(top + ".log").read()
    os.unlink(top + ".log")
