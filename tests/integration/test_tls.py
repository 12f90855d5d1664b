"""Mutual TLS to ZooKeeper (-o tls_ca=,tls_cert=,tls_key=): a server that
speaks only TLS (no plaintext port), with a CA and certificates the test
makes with openssl (tls.py).  Mounts that exclude each other over it; a
server the mount does not trust and a server that refuses the mount's
certificate stop the start with an error that names TLS and the file to
look at, at once; an encrypted key; the x509 ACL scheme instead of a
password; and a build without TLS that says so.

Every test of test_torture.py and test_told_first.py runs here as well,
on mounts that speak TLS (the fixtures below replace conftest.py's)."""
import os
import subprocess
import time
import uuid

import pytest
from kazoo.exceptions import NoAuthError

from harness import (Locker, Mounts, four_letter, kazoo_client, lock_nodes,
                     status, wait_until, zklockfs_binary)
from readme import doc_block
from tls import needs_tls, tls_zookeeper
import test_told_first
from test_operability import installed  # noqa: F401 (a fixture)
from test_operability import \
    test_service_unit_starts_reports_ready_and_stops  # noqa: F401 (over TLS)
from test_torture import test_torture  # noqa: F401 (run over TLS here)

pytestmark = needs_tls


@pytest.fixture(scope="module")
def tls_server():
    with tls_zookeeper() as (server, pki):
        yield server, pki


# conftest.py's fixtures, over TLS: the tests imported above use these.
@pytest.fixture(scope="module")
def zookeeper(tls_server):
    return tls_server[0]


@pytest.fixture(scope="module")
def pki(tls_server):
    return tls_server[1]


@pytest.fixture(scope="module")
def host1(pki):
    """The certificate of the test's mounts."""
    return pki.issue("host1", "/O=zklockfs/CN=host1")


@pytest.fixture(scope="module")
def zk(zookeeper):
    with kazoo_client(zookeeper.connect, tls=zookeeper.client_tls) as client:
        yield client


@pytest.fixture
def mounts(zookeeper, zk, base, host1):
    ms = Mounts(zookeeper.connect + base, host1.mount_options())
    yield ms
    ms.finish(zk, base)


@pytest.fixture
def unit_options(host1):
    """The systemd unit's ZKLOCKFS_OPTIONS over TLS (its test, imported
    above, starts the unit's ExecStart with them)."""
    return "-o session_timeout=4 " + " ".join(host1.mount_options())


# Every test of test_told_first.py, as it is, on these fixtures.
for _name in dir(test_told_first):
    if _name.startswith("test_"):
        globals()[_name] = getattr(test_told_first, _name)


def start_refused(connect, options, timeout=30):
    """Start a mount expected to fail: (exit status, stderr, seconds)."""
    mp = f"{os.environ.get('TMPDIR', '/tmp')}/zklockfs-mnt-{uuid.uuid4().hex[:8]}"
    os.mkdir(mp)
    try:
        started = time.monotonic()
        res = subprocess.run([zklockfs_binary(), "-f", *options, connect, mp],
                             capture_output=True, text=True, timeout=timeout)
        return res.returncode, res.stderr, time.monotonic() - started
    finally:
        os.rmdir(mp)


def test_the_server_has_no_plaintext_port_and_two_mounts_exclude(
        zookeeper, zk, base, m1, m2):
    # The port answers no plaintext, and the server listens on no other.
    assert four_letter(zookeeper.port, "srvr") == ""
    assert "Mode: standalone" in four_letter(zookeeper.port, "srvr",
                                             tls=zookeeper.client_tls)
    config = open(os.path.join(zookeeper.dir, "zoo.cfg")).read()
    assert "clientPort=" not in config.replace("secureClientPort=", "")
    for m in (m1, m2):
        assert "TLS" not in m.log()
    holder = Locker(m1.path("r", "write"), "w")
    holder.granted()
    waiter = Locker(m2.path("r", "write"), "w")
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10,
               "the second host's waiter to queue")
    assert waiter.poll_result() is None, "granted while another host holds"
    holder.close()
    waiter.granted()
    waiter.close()


def test_a_server_the_mount_does_not_trust_stops_the_start(zookeeper, pki,
                                                          host1):
    from harness import Pki
    other = Pki("another CA")
    server = f"127.0.0.1:{zookeeper.port}"
    try:
        # The same server twice, or beside a name that does not resolve,
        # is still every server there is.
        for connect in (zookeeper.connect, f"{server},{server}",
                        f"nosuchhost.invalid:{zookeeper.port},{server}"):
            code, err, took = start_refused(
                connect, host1.trusting(other.ca).mount_options())
            assert code != 0
            assert "TLS" in err and "certificate verify failed" in err and \
                "tls_ca" in err, err
            # Each of the client's messages goes through the mount's log,
            # from the first (its handle speaks before the mount could
            # give it a hook).
            assert "ZOO_" not in err, err
            # At once: not the connect timeout's 10 s.
            assert took < 8, f"{connect}: took {took:.1f} s to say so"
    finally:
        other.remove()


def test_a_server_that_refuses_the_mounts_certificate_stops_the_start(
        zookeeper):
    from harness import Pki
    other = Pki("another CA")
    try:
        # Trusts the server, but its own certificate is another CA's.
        stranger = other.issue("stranger", "/O=zklockfs/CN=stranger")
        code, err, took = start_refused(
            zookeeper.connect,
            stranger.trusting(zookeeper.tls.ca).mount_options())
    finally:
        other.remove()
    assert code != 0
    assert "TLS" in err and "tls_cert" in err, err
    assert took < 8, f"took {took:.1f} s to say so"


def test_a_plaintext_port_is_named_as_one(zookeeper, host1):
    from harness import ZooKeeper
    plain = ZooKeeper()
    try:
        plain.start()
        code, err, _ = start_refused(plain.connect, host1.mount_options())
    finally:
        plain.stop()
    assert code != 0 and "TLS" in err and "secureClientPort" in err, err


def test_an_encrypted_key_with_its_password_file(zookeeper, pki, zk, base):
    locked = pki.issue("locked", "/O=zklockfs/CN=locked", password="s3cret")
    ms = Mounts(zookeeper.connect + base, locked.mount_options())
    try:
        m = ms.new()
        assert status(m)["state"] == "connected"
        # The password it keeps goes into no core dump.
        with open(f"/proc/{m.proc.pid}/limits") as f:
            core = [line for line in f if line.startswith("Max core")]
        assert core and core[0].split()[4:6] == ["0", "0"], core
    finally:
        ms.finish(zk, base)
    # The password is never on the command line: a wrong one is named.
    with open(locked.password_file, "w") as f:
        f.write("wrong\n")
    code, err, _ = start_refused(zookeeper.connect + base,
                                 locked.mount_options())
    assert code != 0 and "tls_key_password_file" in err, err


def test_an_encrypted_key_without_its_password_file_is_refused_at_once(
        zookeeper, pki):
    """Not a passphrase prompt on the daemon's terminal at each connection."""
    locked = pki.issue("nopass", "/O=zklockfs/CN=nopass", password="s3cret")
    options = locked.mount_options()
    options[1] = options[1].replace(
        f",tls_key_password_file={locked.password_file}", "")
    code, err, took = start_refused(zookeeper.connect, options)
    assert code != 0 and "tls_key" in err and "encrypted" in err and \
        "tls_key_password_file" in err, err


def test_a_key_the_client_cannot_load_is_named(zookeeper, pki, tmp_path):
    junk = pki.issue("junk", "/O=zklockfs/CN=junk")
    with open(junk.key, "w") as f:
        f.write("not a key\n")
    code, err, took = start_refused(zookeeper.connect, junk.mount_options())
    assert code != 0 and "tls_key: " in err, err
    assert took < 8, f"took {took:.1f} s to say so"


def test_auth_file_over_tls_needs_x509_acl_said(zookeeper, host1, tmp_path):
    """ZooKeeper gives a node to every identity it knows its creator by:
    over TLS, the certificate's subject too.  The start says so rather
    than let a password-less client of that subject delete the locks."""
    secret = tmp_path / "secret"
    secret.write_text("alice:pw\n")
    os.chmod(secret, 0o600)
    code, err, _ = start_refused(
        zookeeper.connect, [*host1.mount_options(), "-o", f"auth_file={secret}"])
    assert code != 0 and "x509_acl" in err and "auth_file" in err, err


def test_the_key_must_not_be_readable_by_everyone(zookeeper, pki):
    loose = pki.issue("loose", "/O=zklockfs/CN=loose")
    os.chmod(loose.key, 0o644)
    code, err, took = start_refused(zookeeper.connect, loose.mount_options())
    assert code != 0 and "tls_key" in err and "every user" in err, err


def test_tls_options_come_together(zookeeper, host1):
    code, err, _ = start_refused(zookeeper.connect,
                                 ["-o", f"tls_ca={host1.ca}"])
    assert code != 0 and "tls_cert" in err and "missing" in err, err


def test_with_x509_acls_another_certificate_cannot_delete_a_lock(
        zookeeper, pki, host1, base):
    """-o x509_acl: the nodes are the certificate's subject's alone, as
    auth_file's are its user's.  Another certificate of the same CA can
    neither delete the lock node nor start a mount on that base."""
    intruder = pki.issue("intruder", "/O=zklockfs/CN=intruder")
    twin = pki.issue("twin", "/O=zklockfs/CN=host1")  # same subject
    with kazoo_client(zookeeper.connect, tls=host1) as own:
        ms = Mounts(zookeeper.connect + base,
                    [*host1.mount_options(), "-o", "x509_acl"])
        try:
            m = ms.new()
            assert "x509:CN=host1,O=zklockfs" in m.log()
            holder = Locker(m.path("r", "write"), "w")
            holder.granted()
            [node] = lock_nodes(own, base)
            acl = own.get_acls(node)[0]
            assert [(a.id.scheme, a.id.id) for a in acl] == \
                [("x509", "CN=host1,O=zklockfs")], acl
            with kazoo_client(zookeeper.connect, tls=intruder) as other:
                with pytest.raises(NoAuthError):
                    other.delete(node)
                with pytest.raises(NoAuthError):
                    other.get_children(base + "/r")
            assert own.exists(node), "the lock node went"
            # A mount of another certificate refuses the base at start.
            code, err, _ = start_refused(
                zookeeper.connect + base,
                [*intruder.mount_options(), "-o", "x509_acl"])
            assert code != 0 and "tls_cert" in err, err
            # The same subject (another host's certificate) shares it.
            twins = Mounts(zookeeper.connect + base,
                           [*twin.mount_options(), "-o", "x509_acl"])
            ms.started.append(twins.new())
            m2 = ms.started[-1]
            waiter = Locker(m2.path("r", "write"), "w")
            wait_until(lambda: len(lock_nodes(own, base)) == 2, 10,
                       "the twin's waiter to queue")
            holder.close()
            waiter.granted()
            waiter.close()
        finally:
            ms.finish(own, base)



# ---- doc/operations.md's "Over TLS", as written -------------------------

SERVER_LINES = "secureClientPort=2281"
MOUNT_BLOCK = ("zklockfs -o allow_other,x509_acl,tls_ca=/etc/zklockfs/tls/ca.pem,"
               "tls_cert=/etc/zklockfs/tls/host.crt,tls_key=/etc/zklockfs/tls/host.key \\")


def test_the_documents_tls_server_and_mount_work_as_written(pki, tmp_path):
    """The server lines of the section, with the test's files and port, on
    a server of the test's; then its mount command, with the test's files,
    server and mount point: it mounts, a lock's node is the certificate's
    subject's alone, and nothing is left."""
    from harness import ZooKeeper
    server = ZooKeeper(tls=pki)
    lines = doc_block(SERVER_LINES).text \
        .replace("2281", str(server.port)) \
        .replace("/etc/zookeeper/tls/server.pem", server.pem) \
        .replace("/etc/zookeeper/tls/ca.pem", pki.ca)
    server._ports = lambda: lines + \
        f"secureClientPortAddress={server.address}\n"
    host = pki.issue("documented", "/O=example/CN=host1")
    mnt = str(tmp_path / "mnt")
    os.mkdir(mnt)
    command = doc_block(MOUNT_BLOCK).text \
        .replace("/etc/zklockfs/tls/ca.pem", host.ca) \
        .replace("/etc/zklockfs/tls/host.crt", host.cert) \
        .replace("/etc/zklockfs/tls/host.key", host.key) \
        .replace("zk1:2281,zk2:2281,zk3:2281/locks", server.connect + "/locks") \
        .replace("/mnt/zklock", mnt) \
        .replace("zklockfs -o", zklockfs_binary() + " -o", 1)
    try:
        server.start()
        r = subprocess.run(["bash", "-c", command], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        with kazoo_client(server.connect, tls=host) as own:
            fd = os.open(os.path.join(mnt, "r", "write"), os.O_RDWR)
            try:
                [node] = lock_nodes(own, "/locks")
                assert [(a.id.scheme, a.id.id) for a in own.get_acls(node)[0]] \
                    == [("x509", "CN=host1,O=example")]
            finally:
                os.close(fd)
            subprocess.run(["umount", mnt], check=True, timeout=30)
            wait_until(lambda: not lock_nodes(own, "/locks"), 15,
                       "the lock node to go")
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        server.stop()


def test_a_servers_restart_is_not_taken_for_a_refused_handshake(zookeeper, m1):
    """The connection breaks with OpenSSL's error queue full ("unexpected
    eof"): not a TLS failure, and not said as one."""
    holder = Locker(m1.path("r", "write"), "w")
    holder.granted()
    holder.close()
    zookeeper.restart()
    wait_until(lambda: status(m1)["state"] == "connected", 30,
               "the mount to connect again after the restart")
    assert "TLS to ZooKeeper" not in m1.log(), m1.log()


def test_a_hung_server_is_given_up_as_in_clear(zookeeper, pki, host1):
    """A server that takes connections but never answers (stopped: its
    kernel still accepts): the handshake is given up, the start fails at
    connect_timeout instead of hanging, and a good server named beside it
    is used."""
    import signal as sig
    from harness import ZooKeeper
    hung = ZooKeeper(tls=pki)
    try:
        hung.start()
        hung.proc.send_signal(sig.SIGSTOP)
        code, err, took = start_refused(
            hung.connect, ["-o", "connect_timeout=3,session_timeout=4",
                           *host1.mount_options()], timeout=60)
        assert code != 0 and "no ZooKeeper server answered" in err, err
        assert took < 20, f"the start took {took:.1f} s"
        ms = Mounts(f"{hung.connect},{zookeeper.connect}/hung",
                    ["-o", "connect_timeout=20", *host1.mount_options()])
        try:
            m = ms.new()
            assert status(m)["server"] == zookeeper.connect
        finally:
            ms.stop_all()
    finally:
        if hung.proc and hung.proc.poll() is None:
            hung.proc.send_signal(sig.SIGCONT)
        hung.stop()


def cpu_seconds(pid):
    """CPU time a process has used (user and system), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_certificate_broken_at_a_reconnection_is_said_and_retried_calmly(
        zookeeper, pki, zk, base):
    """The client reads the files at each connection, so a certificate
    replaced by a broken one is found at the next: the mount says which
    file, once, and tries again at the client's pace (the client left the
    socket open and spun a CPU on it), until the file is good again.  An
    open made meanwhile waits for the connection, as it would for a server
    that is down, and is granted once it is back (it failed with EIO)."""
    rotated = pki.issue("rotated", "/O=zklockfs/CN=rotated")
    ms = Mounts(zookeeper.connect + base,
                ["-o", "session_timeout=20", *rotated.mount_options()])
    try:
        m = ms.new()
        with open(rotated.cert) as f:
            good = f.read()
        with open(rotated.cert, "w") as f:
            f.write("not a certificate\n")
        zookeeper.restart()
        wait_until(lambda: "TLS to ZooKeeper failed: tls_cert: " in m.log(),
                   30, "the mount to say that tls_cert does not load")
        waiter = Locker(m.path("r", "write"), "w")
        before = cpu_seconds(m.proc.pid)
        time.sleep(3)  # a span to measure over, not to wait for anything
        used = cpu_seconds(m.proc.pid) - before
        assert used < 1, f"the daemon used {used:.2f} s of CPU in 3 s"
        assert waiter.poll_result() is None, \
            f"the open ended while the connection was down: " \
            f"{waiter.poll_result()}"
        with open(rotated.cert, "w") as f:
            f.write(good)
        wait_until(lambda: status(m)["state"] == "connected", 30,
                   "the mount to connect once tls_cert is good again")
        waiter.granted()
        waiter.close()
        assert m.log().count("tls_cert") == 1, m.log()
    finally:
        ms.finish(zk, base)


class RefusingServer:
    """A TLS server at address:port with a certificate of a CA the mounts
    do not trust: every handshake with it fails ("certificate verify
    failed"), after a third of a second, as across a network (a refusal
    on loopback is over before the start looks)."""

    def __init__(self, identity, address, port):
        import socket
        import ssl
        import threading
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(identity.cert, identity.key)
        self.sock = socket.create_server((address, port))
        self.sock.settimeout(0.2)
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(2)
            time.sleep(0.3)
            try:
                self.ctx.wrap_socket(conn, server_side=True).close()
            except OSError:
                conn.close()

    def stop(self):
        self.stopping = True
        self.thread.join(5)
        self.sock.close()


def test_a_name_for_several_servers_is_given_up_only_when_each_refused(
        zookeeper, host1, zk, base, tmp_path):
    """One name may stand for several servers (round-robin DNS): the start
    gives up once each address has refused the handshake, not at the
    first.  The name is given four refusing servers and the good one, in a
    hosts file of the daemon's own mount namespace; the client tries them
    in a random order, so the good one is rarely first."""
    from harness import Pki
    other = Pki("another CA", parent=os.environ.get("TMPDIR"))
    refusing = [RefusingServer(other.issue(f"bad{i}", "/CN=bad",
                                           ip=f"127.0.0.{i}"),
                               f"127.0.0.{i}", zookeeper.port)
                for i in range(2, 6)]
    hosts = tmp_path / "hosts"
    try:
        def start(addresses):
            hosts.write_text("".join(f"127.0.0.{i} zkmany\n"
                                     for i in addresses))
            log = tmp_path / "daemon.log"
            mp = tmp_path / "mnt"
            mp.mkdir(exist_ok=True)
            with open(log, "w") as out:
                proc = subprocess.Popen(
                    ["unshare", "--mount", "--propagation", "private", "sh",
                     "-c", 'mount --bind "$0" /etc/hosts && exec "$@"',
                     str(hosts), zklockfs_binary(), "-f", "-o",
                     "connect_timeout=20", *host1.mount_options(),
                     f"zkmany:{zookeeper.port}{base}", str(mp)],
                    stdout=out, stderr=subprocess.STDOUT)
            try:
                wait_until(lambda: proc.poll() is not None
                           or "mounted " in log.read_text(), 40,
                           "the start to end")
                return proc.poll(), log.read_text()
            finally:
                proc.terminate()
                proc.wait(30)

        for attempt in range(3):
            code, log = start([2, 3, 4, 5, 1])
            assert code is None and "mounted " in log, \
                f"attempt {attempt}: refused though 127.0.0.1 was good:\n{log}"
        # Every address refusing: given up, long before connect_timeout.
        started = time.monotonic()
        code, log = start([2, 3, 4, 5])
        assert code not in (None, 0) and \
            "certificate verify failed" in log and "ZOO_" not in log, log
        assert time.monotonic() - started < 15, log
    finally:
        for r in refusing:
            r.stop()
        other.remove()
        if zk.exists(base):
            zk.delete(base, recursive=True)
