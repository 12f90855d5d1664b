"""Test harness: a real ZooKeeper server on a free loopback port, real
mounts of the real zklockfs binary, and lock holders in child processes.

Every wait is bounded and fails with a message saying what was expected.
"""
import errno
import os
import queue
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager

import pytest
from kazoo.exceptions import NoNodeError

HERE = os.path.dirname(os.path.abspath(__file__))
ZK_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
# What Debian's zookeeper.jar names on its class path lacks what the Netty
# server (the one that speaks TLS) needs as well.
ZK_TLS_CLASSPATH = ":".join(
    f"/usr/share/java/{jar}.jar" for jar in
    ("netty-codec", "netty-resolver", "netty-transport-native-unix-common"))
ZK_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def wait_until(pred, timeout, what):
    """Poll pred() until true; fail naming `what` after timeout seconds."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args):
    res = subprocess.run(["openssl", *args], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, f"openssl {' '.join(args)}: {res.stderr}"


class Identity:
    """One party's TLS files: its certificate and key (and the key's
    password file, if encrypted), and the CA it trusts."""

    def __init__(self, ca, cert, key, password_file=None):
        self.ca, self.cert, self.key = ca, cert, key
        self.password_file = password_file

    def trusting(self, ca):
        """The same certificate, trusting another CA."""
        return Identity(ca, self.cert, self.key, self.password_file)

    def mount_options(self):
        opts = f"tls_ca={self.ca},tls_cert={self.cert},tls_key={self.key}"
        if self.password_file:
            opts += f",tls_key_password_file={self.password_file}"
        return ["-o", opts]

    def kazoo(self):
        return dict(use_ssl=True, ca=self.ca, certfile=self.cert,
                    keyfile=self.key, verify_certs=True)

    def wrap(self, sock):
        """sock, speaking TLS as this identity (server name unchecked)."""
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(self.ca)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx.wrap_socket(sock)


class Pki:
    """A certificate authority of the test's own, made with openssl, and
    the certificates it signs (P-256 keys, valid two days)."""

    def __init__(self, name="zklockfs test CA", parent=None):
        self.dir = tempfile.mkdtemp(prefix="zklockfs-pki-", dir=parent)
        self.ca = os.path.join(self.dir, "ca.pem")
        self._key = os.path.join(self.dir, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-nodes", "-keyout", self._key,
                "-out", self.ca, "-days", "2", "-subj", f"/CN={name}")

    def issue(self, name, subject, ip=None, password=None):
        """An identity named `name` (its files' names) with `subject`
        ("/O=zklockfs/CN=host1"), for the IP address `ip` if given (a
        server's), its key encrypted with `password` if given."""
        base = os.path.join(self.dir, name)
        key, cert, csr = base + ".key", base + ".crt", base + ".csr"
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", key, "-out", csr, "-subj", subject)
        ext = base + ".ext"
        with open(ext, "w") as f:
            f.write(f"subjectAltName=IP:{ip}\n" if ip else
                    "extendedKeyUsage=clientAuth\n")
        openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey",
                self._key, "-CAcreateserial", "-out", cert, "-days", "2",
                "-extfile", ext)
        password_file = None
        if password:
            openssl("pkey", "-in", key, "-out", key + ".enc", "-aes256",
                    "-passout", f"pass:{password}")
            os.replace(key + ".enc", key)
            password_file = base + ".password"
            with open(password_file, "w") as f:
                f.write(password + "\n")
            os.chmod(password_file, 0o600)
        os.chmod(key, 0o600)
        return Identity(self.ca, cert, key, password_file)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def four_letter(port, word, address="127.0.0.1", tls=None):
    """A four-letter word's answer ("" if none), over TLS as the
    Identity `tls` if given."""
    try:
        with socket.create_connection((address, port), timeout=2) as raw:
            s = tls.wrap(raw) if tls else raw
            s.sendall(word.encode())
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode()
    except OSError:
        return ""


def packets_received(server):
    """The requests a server has received so far (mntr)."""
    for line in four_letter(server.port, "mntr", server.address,
                            server.client_tls).splitlines():
        key, _, value = line.partition("\t")
        if key == "zk_packets_received":
            return int(value)
    raise AssertionError("ZooKeeper's mntr has no zk_packets_received")


class ZooKeeper:
    """A ZooKeeper server from the Debian package, data in a temp dir:
    standalone, or member `myid` of an ensemble whose `peers` are
    (client, quorum, election) port triples on loopback.  Clients reach
    it at `address` (a partition test's server pair: netns.py); `cpus`, a
    set of CPU numbers, pins it to those (the benchmarks' stand-in for a
    server on machines of its own).  With `tls`, a Pki, it speaks only
    TLS (its secureClientPort; no plaintext port), with a certificate
    that Pki signs, asks clients for theirs (which that Pki must have
    signed) and knows them by its subject in ACLs (x509); the test's own
    looks at it go as the identity `client_tls`."""

    def __init__(self, myid=None, peers=None, data_parent=None,
                 address="127.0.0.1", cpus=None, tls=None):
        self.address = address
        self.cpus = cpus
        self.tls = tls
        self.client_tls = None
        self.dir = tempfile.mkdtemp(prefix="zklockfs-zk-", dir=data_parent)
        self.myid = myid
        self.peers = peers or []
        self.port = peers[myid - 1][0] if peers else free_port()
        self.proc = None
        if tls:
            server = tls.issue(f"server-{self.port}", "/O=zklockfs/CN=server",
                               ip=address)
            self.pem = os.path.join(self.dir, "server.pem")
            with open(self.pem, "w") as out:
                for part in (server.cert, server.key):
                    with open(part) as f:
                        out.write(f.read())
            self.client_tls = tls.issue(f"test-{self.port}",
                                        "/O=zklockfs/CN=test")

    def _ports(self):
        if not self.tls:
            return (f"clientPort={self.port}\n"
                    f"clientPortAddress={self.address}\n")
        return (f"secureClientPort={self.port}\n"
                f"secureClientPortAddress={self.address}\n"
                "serverCnxnFactory="
                "org.apache.zookeeper.server.NettyServerCnxnFactory\n"
                f"ssl.keyStore.location={self.pem}\nssl.keyStore.type=PEM\n"
                f"ssl.trustStore.location={self.tls.ca}\n"
                "ssl.trustStore.type=PEM\nssl.clientAuth=need\n"
                "authProvider.x509="
                "org.apache.zookeeper.server.auth.X509AuthenticationProvider\n")

    def _config(self):
        cfg = (f"tickTime=500\ndataDir={self.dir}/data\n" + self._ports() +
               "minSessionTimeout=1000\nmaxSessionTimeout=60000\n"
               "admin.enableServer=false\n4lw.commands.whitelist=*\n"
               "maxClientCnxns=0\n")
        if self.myid:
            os.makedirs(f"{self.dir}/data", exist_ok=True)
            with open(f"{self.dir}/data/myid", "w") as f:
                f.write(f"{self.myid}\n")
            cfg += "initLimit=10\nsyncLimit=5\n"
            for i, (_, quorum, election) in enumerate(self.peers, 1):
                cfg += f"server.{i}=127.0.0.1:{quorum}:{election}\n"
        return cfg

    def launch(self):
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write(self._config())
        self.log = open(os.path.join(self.dir, "server.log"), "a")
        self.proc = subprocess.Popen(
            # Empty containers go within a second (not a minute), and
            # thousands at a time (not 10,000 a minute), so that tests
            # can see what their going does.  No performance file in
            # /tmp/hsperfdata_USER: a server killed -9 would leave it.
            ["java", "-Xmx256m", "-XX:-UsePerfData",
             "-Dznode.container.checkIntervalMs=1000",
             "-Dznode.container.maxPerMinute=1000000", "-cp",
             ZK_CLASSPATH + (":" + ZK_TLS_CLASSPATH if self.tls else ""),
             ZK_MAIN, cfg],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=self.cpus and (
                lambda: os.sched_setaffinity(0, self.cpus)))

    def mode(self):
        """"leader", "follower", "standalone", or None if not serving."""
        for line in four_letter(self.port, "srvr", self.address,
                                self.client_tls).splitlines():
            if line.startswith("Mode: "):
                return line[6:].strip()
        return None

    def wait_serving(self, timeout=60):
        wait_until(lambda: self.proc.poll() is not None or self.mode(),
                   timeout, f"ZooKeeper to serve on {self.connect}")
        assert self.proc.poll() is None, "ZooKeeper exited at start: " + \
            open(os.path.join(self.dir, "server.log")).read()[-2000:]

    def start(self):
        self.launch()
        self.wait_serving()

    @property
    def connect(self):
        return f"{self.address}:{self.port}"

    def kill(self):
        """kill -9, as a crash would."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def restart(self):
        """Stop the server and start it again on the same port and data:
        sessions survive if it is back within their timeout."""
        self.proc.terminate()
        self.proc.wait(20)
        self.log.close()
        self.start()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


class Ensemble:
    """n ZooKeeper servers on loopback forming one ensemble; clients
    reach them at `address`."""

    def __init__(self, n=3, address="127.0.0.1"):
        peers = [(free_port(), free_port(), free_port()) for _ in range(n)]
        self.servers = [ZooKeeper(i, peers, address=address)
                        for i in range(1, n + 1)]

    def start(self):
        for z in self.servers:
            z.launch()
        for z in self.servers:
            z.wait_serving(90)
        return self

    @property
    def connect(self):
        return ",".join(z.connect for z in self.servers)

    def leader(self, timeout=30):
        """The leader, once there is one (an election takes a moment)."""
        return wait_until(
            lambda: next((z for z in self.servers if z.mode() == "leader"),
                         None), timeout, "the ensemble to elect a leader")

    def stop(self):
        for z in self.servers:
            z.stop()


def root_is_a_mount_point():
    """Is / a mount point of this mount namespace?  Not in a debootstrap or
    sbuild root, where unshare cannot make a private mount namespace
    (--propagation: "cannot change root filesystem propagation")."""
    with open("/proc/self/mountinfo", errors="surrogateescape") as f:
        return any(line.split()[4] == "/" for line in f)


# For a test that mounts in a private mount namespace (unshare -m
# --propagation private): skipped, saying why, where it cannot be made.
needs_private_mounts = pytest.mark.skipif(
    not root_is_a_mount_point(),
    reason="/ is not a mount point here (a debootstrap or sbuild root): "
           "unshare cannot make the private mount namespace this test "
           "mounts in")


def zklockfs_binary():
    path = os.environ.get("ZKLOCKFS_BIN")
    assert path and os.access(path, os.X_OK), \
        "ZKLOCKFS_BIN must name the built zklockfs (meson test sets it)"
    return path


def is_mounted(mountpoint):
    # Another test's mount point may hold any bytes (a worker beside this
    # one, or another run), not only UTF-8.
    with open("/proc/self/mountinfo", errors="surrogateescape") as f:
        return any(line.split()[4] == mountpoint for line in f)


class Mount:
    """One zklockfs daemon (one ZooKeeper session) in the foreground; run
    with `prefix` (a test host's network: netns.py) if given."""

    def __init__(self, connect, extra_args=(), prefix=()):
        self.prefix = list(prefix)
        self.connect = connect
        self.mountpoint = tempfile.mkdtemp(prefix="zklockfs-mnt-")
        self.logpath = self.mountpoint + ".log"
        self.extra_args = list(extra_args)
        self.proc = None
        self.killed = False

    def start(self):
        self.logfile = open(self.logpath, "w")
        self.proc = subprocess.Popen(
            [*self.prefix, zklockfs_binary(), "-f", "-o", "session_timeout=4",
             *self.extra_args, self.connect, self.mountpoint],
            stdout=self.logfile, stderr=subprocess.STDOUT,
            start_new_session=True)
        wait_until(lambda: self.proc.poll() is not None
                   or is_mounted(self.mountpoint), 30,
                   f"zklockfs to mount {self.mountpoint}")
        assert self.proc.poll() is None, "zklockfs exited: " + self.log()
        return self

    def path(self, *parts):
        return os.path.join(self.mountpoint, *parts)

    def kill(self):
        """kill -9 the daemon, as a crash would; the mount stays until
        stop() unmounts it."""
        self.killed = True
        self.proc.kill()
        self.proc.wait(10)

    def log(self):
        with open(self.logpath) as f:
            return f.read()

    def remove_log(self):
        """Once the daemon was judged clean: nothing of a passing test is
        left in $TMPDIR (a failure keeps its log, and quotes it)."""
        try:
            os.unlink(self.logpath)
        except FileNotFoundError:
            pass

    def exit_problem(self, status):
        """What is wrong with how the daemon ended ("" if nothing): a
        failing exit status (not after kill(), and not LeakSanitizer's for
        a leak that is the libraries' own), or a sanitizer report about
        our code."""
        log = self.log()
        found = sanitizer_problems(log)
        leaked_not_ours = (status == LEAK_EXIT and not found and
                           "ERROR: LeakSanitizer" in log)
        if found:
            return (f"{self.mountpoint}: sanitizer report:\n{found}\n"
                    f"--- log ---\n{log}")
        if status not in (0, None) and not self.killed \
                and not leaked_not_ours:
            return f"{self.mountpoint}: exit status {status}\n{log}"
        return ""

    def stop(self):
        """Unmount through SIGTERM and return the daemon's exit status."""
        status = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                status = self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                status = self.proc.wait(10)
        elif self.proc:
            status = self.proc.returncode
        if is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint],
                           check=False)
        try:
            os.rmdir(self.mountpoint)
        except OSError:
            pass
        return status


LOCKER = os.path.join(HERE, "locker.py")


class Child:
    """A child process of a test (self.proc), killed at the end of the test
    if it is still listed in Child.alive."""

    alive = set()  # every child not yet reaped, so a failed test cleans up

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(15)
        Child.alive.discard(self)


class Lines:
    """A child's output lines, read by a thread as they come.  Where a
    child says two lines without waiting for us, one read of its stream
    may take both: a select() on the stream then waits for the second,
    which sits in the stream's buffer, until it times out."""

    def __init__(self, stream):
        self.queue = queue.Queue()
        threading.Thread(target=self._read, args=(stream,),
                         daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.queue.put(line.strip())
        self.queue.put(None)  # the end

    def next(self, timeout, what):
        """The next line, within timeout seconds; None at the end."""
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no {what} within {timeout} s") from None

    def silent_for(self, seconds):
        """Negative check: no line within `seconds`."""
        try:
            got = self.queue.get(timeout=seconds)
        except queue.Empty:
            return True
        self.queue.queue.appendleft(got)  # still the next one
        return False


class Locker(Child):
    """A child process that opens a lock file and reports, then holds it
    until told to close (or is killed)."""

    def __init__(self, path, flags="w", extra=()):
        self.path = path
        # A process group of its own, as a shell job would have: what
        # on_lost=signal sends to (never the test runner's group).
        self.proc = subprocess.Popen(
            [sys.executable, LOCKER, path, flags, *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1, start_new_session=True)
        self.lines = Lines(self.proc.stdout)
        self.result = None
        Child.alive.add(self)

    def poll_result(self):
        """The child's first report line if it has come, else None."""
        if self.result is None and not self.lines.silent_for(0):
            self.result = self.lines.next(0, "report") or ""
        return self.result

    def wait_result(self, timeout=15, what=None):
        return wait_until(self.poll_result, timeout,
                          what or f"open of {self.path} to return")

    def granted(self, timeout=15):
        res = self.wait_result(timeout, f"lock on {self.path} to be granted")
        assert res.startswith("ok"), f"expected a grant of {self.path}, got {res!r}"
        return res

    def command(self, line, timeout=30):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.lines.next(timeout, f"answer to {line!r}") or ""

    def next_line(self, timeout, what):
        """The child's next output line, within timeout seconds."""
        return self.lines.next(timeout, what) or ""

    def silent_for(self, seconds):
        """Negative check: nothing said within `seconds`."""
        return self.lines.silent_for(seconds)

    def close(self):
        """Close the descriptor and exit."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("close\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
            self.proc.wait(15)
        Child.alive.discard(self)



def finish_all(procs, seconds, what):
    """Wait for every process, within `seconds` in all; kill whatever is
    left on the way out.  Fails naming `what` if they did not finish."""
    deadline = time.monotonic() + seconds
    try:
        for p in procs:
            p.wait(max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{what} did not finish in {seconds} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


@contextmanager
def running(argv, **popen):
    """A child process for the block, killed if it is still running at
    its end."""
    proc = subprocess.Popen(argv, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(15)


@contextmanager
def kazoo_client(hosts, auth=None, tls=None):
    """A started kazoo client for the test's own look at ZooKeeper, over
    TLS as the Identity `tls` if given."""
    from kazoo.client import KazooClient
    client = KazooClient(hosts=hosts, auth_data=auth,
                         **(tls.kazoo() if tls else {}))
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


# A lock node of any tool: a marker, then ZooKeeper's "%010d" sequence.
# The names every tool's lock nodes have, and kazoo's Semaphore's leases
# (32 hex digits, not sequential).
LOCK_NODE = re.compile(r"(?:-write-|-read-|__WRIT__|__READ__|__lock__|"
                       r"__rlock__|lock-|lease-|^x-[-0-9a-f]+-)"
                       r"(?:\d{10}|-\d{9,10})$|^[0-9a-f]{32}$")


def lock_nodes(zk, path):
    """Every znode under path whose name is a lock node, ours or another
    tool's (a mount of any dialect creates them).  A resource may go while
    it is walked: the server reaps an emptied container (doc/locks.md)."""
    found = []
    try:
        children = zk.get_children(path)
    except NoNodeError:
        return found
    for child in children:
        full = path + "/" + child
        if LOCK_NODE.search(child):
            found.append(full)
        else:
            found.extend(lock_nodes(zk, full))
    return found


def pin_records(zk, base):
    """The deadlock records under base (recipes/waitgraph.h): a wait's
    pins, published while it lasts."""
    try:
        return zk.get_children(base + "/.zklockfs-pins")
    except NoNodeError:
        return []


def released(zk, path, left=0):
    """Wait until `left` lock nodes remain under path.  For a test that
    closes a lock on one mount and then expects another mount to find it
    free: close() returns before ZooKeeper has deleted the node, and
    another session may see it held for a moment (doc/locks.md, "When
    another host sees a release"), as a user would."""
    wait_until(lambda: len(lock_nodes(zk, path)) == left, 10,
               f"the release to land ({left} lock nodes left under {path})")


def errno_name(code):
    return errno.errorcode.get(code, str(code))


class Mounts:
    """The mounts of a test, each with `options` (a list: TLS's, say) and
    its own; finish() checks what they leave."""

    def __init__(self, connect, options=()):
        self.connect = connect
        self.options = list(options)
        self.started = []

    def new(self, *extra, prefix=()):
        m = Mount(self.connect, [*self.options, *extra], prefix).start()
        self.started.append(m)
        return m

    def finish(self, zk, base):
        """End of a test: kill what is left of its processes, check that
        nothing of ours is left in ZooKeeper (while the mounts, and so
        their sessions, still live), then unmount and check the daemons
        exited cleanly."""
        for locker in list(Child.alive):
            locker.kill()
        try:
            wait_until(lambda: not lock_nodes(zk, base), 15,
                       f"no lock znode left under {base} "
                       f"(left: {lock_nodes(zk, base)})")
            wait_until(lambda: not pin_records(zk, base), 15,
                       f"no deadlock record left under {base} "
                       f"(left: {pin_records(zk, base)})")
        finally:
            self.stop_all()  # unmount even when the check failed

    def stop_all(self):
        stop_mounts(self.started)


def stop_mounts(mounts):
    """Unmount each, and fail naming every daemon that ended badly (its
    log is kept; a clean one's is removed)."""
    problems = []
    for m in mounts:
        problem = m.exit_problem(m.stop())
        if problem:
            problems.append(problem)
        else:
            m.remove_log()
    assert not problems, "\n".join(problems)


# The exit status LeakSanitizer gives a daemon that leaked (LSAN_OPTIONS,
# set in tests/meson.build), told apart from the daemon's own failures.
LEAK_EXIT = 23
# A stack frame in zklockfs's code, symbolized or not.
OUR_FRAME = re.compile(r"\.\./(?:fs|recipes)/|/zklockfs\+0x")


def leaks_of_ours(log):
    """The LeakSanitizer reports in log with a frame of zklockfs in the
    allocation stack.  A leak allocated wholly inside libfuse or the
    ZooKeeper client, on a thread of theirs, is the library's own
    bookkeeping (libfuse never frees the interrupts it parked for requests
    already answered; the ZooKeeper client drops replies it had read but
    not dispatched when closed): nothing of ours to free.  Suppressing the
    whole library instead would hide every object we allocate inside a
    FUSE handler or a ZooKeeper completion, since a suppression matches
    any frame of the stack."""
    ours, block = [], None
    for line in log.splitlines():
        if re.match(r"(Direct|Indirect) leak of ", line):
            block = [line]
            ours.append(block)
        elif block is not None and re.match(r"\s+#\d+ ", line):
            block.append(line)
        else:
            block = None
    return ["\n".join(b) for b in ours
            if any(OUR_FRAME.search(f) for f in b[1:])]


def sanitizer_problems(log):
    """What the sanitizers said about our code, as text ("" if nothing)."""
    problems = leaks_of_ours(log)
    for marker in ("ERROR: AddressSanitizer", "runtime error",
                   "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer"):
        if marker in log:
            problems.append(f"{marker} (see the log)")
    return "\n".join(problems)


DRIVER = os.path.join(HERE, "lockdriver.py")


class Driver(Child):
    """A child process taking flock/fcntl locks on command (lockdriver.py):
    send() a command, then answer() waits for its one-line answer."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, DRIVER], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True)
        self.pending = None
        Child.alive.add(self)
        self.pid = self.proc.pid

    def send(self, line):
        assert self.pending is None, f"{self.pending!r} still unanswered"
        self.pending = line
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def poll(self):
        """The pending command's answer if it has come, else None."""
        r, _, _ = select.select([self.proc.stdout], [], [], 0)
        if not r:
            return None
        return self._take()

    def _take(self):
        line = self.proc.stdout.readline().strip()
        assert line, f"lock driver died during {self.pending!r}"
        self.pending = None
        return line

    def answer(self, timeout=15):
        cmd = self.pending
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert r, f"no answer to {cmd!r} within {timeout} s"
        return self._take()

    def do(self, line, timeout=15):
        self.send(line)
        return self.answer(timeout)

    def ok(self, line, timeout=15):
        res = self.do(line, timeout)
        assert res.startswith("ok"), f"{line!r}: expected ok, got {res!r}"
        return res[3:]


    def exit(self):
        """Close stdin: the driver exits, closing every descriptor."""
        self.proc.stdin.close()
        self.proc.wait(15)
        Child.alive.discard(self)


# Holders the daemon must still know, or must no longer know, by their
# process: its pid and start time, never its command name.

def proc_comm(pid):
    """The command name of process pid, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().rstrip("\n")
    except (FileNotFoundError, ProcessLookupError):
        return None


# How long a mount's holders may lag a change made by another client that
# the mount is not told of: the opens of one second share one text
# (fs/holdcache.h, HOLDCACHE_WINDOW_MS).  Its own changes show at once.
HOLDERS_WINDOW = 1.0


def holders_once(read, pred):
    """read()'s value (a read of a holders file) once pred(value) holds,
    or the last one read after HOLDERS_WINDOW and a margin: for what
    another client changed.  The caller asserts what it expects of it."""
    deadline = time.monotonic() + HOLDERS_WINDOW + 5
    while True:
        value = read()
        if pred(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def holders_fields(mount, res="r"):
    """The first line of res's holders on mount, split: state mode token
    host pid uid cmd age node tool [note]."""
    with open(mount.path(res, "holders")) as f:
        return f.read().splitlines()[0].split(" ")


# A shell that takes the write lock on $1, then becomes sleep: the same
# process (pid and start time) under another command name.
EXEC_HOLDER = 'exec 9<>"$1" || exit 1; exec sleep 300'


@contextmanager
def exec_holder(mount, res="r"):
    """A shell that took res's write lock on mount and exec'd sleep, in a
    session of its own (a signal to its process group reaches nothing
    else); yielded once it holds and the exec is done."""
    with running(["bash", "-c", EXEC_HOLDER, "bash", mount.path(res, "write")],
                 start_new_session=True) as sh:
        wait_until(lambda: sh.poll() is not None or proc_comm(sh.pid) == "sleep",
                   15, "the holder to take its lock and exec sleep")
        assert sh.poll() is None, f"the holder's open failed (exit {sh.returncode})"
        fields = holders_fields(mount, res)
        assert fields[4] == str(sh.pid) and fields[6] == "bash", \
            f"the node names the shell that asked: {fields}"
        yield sh


def expect_killed_by(proc, sig, mount, what):
    """proc ends by sig (its default action) within 15 s."""
    try:
        status = proc.wait(15)
    except subprocess.TimeoutExpired:
        raise AssertionError(
            f"{what}: pid {proc.pid} got no {sig.name} within 15 s\n"
            f"--- log ---\n{mount.log()}") from None
    assert status == -sig, f"{what}: pid {proc.pid} ended with {status}, " \
        f"expected death by {sig.name}"


# Takes the write lock on $1, hands its descriptor to a keeper in a session
# of its own (so that nothing refers to the shell's pid any more: no
# process group or session of that id), says the keeper's pid and its own
# /proc/<pid>/stat, and exits.
HANDING_HOLDER = ('exec 9<>"$1" || exit 1\n'
                  'setsid sleep 300 </dev/null >/dev/null 2>&1 &\n'
                  'echo $!\n'
                  'cat /proc/$$/stat\n')


def start_time(stat):
    """Field 22 of a /proc/<pid>/stat text: the start, in clock ticks
    since boot (the command, field 2, may hold spaces and parentheses)."""
    return int(stat.rsplit(")", 1)[1].split()[19])


def clock_ticks():
    """Clock ticks since boot now, as start times count them."""
    return time.clock_gettime_ns(time.CLOCK_BOOTTIME) // \
        (10**9 // os.sysconf("SC_CLK_TCK"))


# Blocks SIGUSR1, so that one sent stays pending where /proc shows it,
# takes the command name argv[1], says so and waits for its input to end.
IMPOSTOR = ("import signal, sys\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
            "with open('/proc/self/comm', 'w') as f:\n"
            "    f.write(sys.argv[1])\n"
            "print('ready', flush=True)\n"
            "sys.stdin.read()\n")


def start_with_pid(pid, argv, seconds=2, **popen):
    """argv started as process pid (as root, through ns_last_pid), or None
    if other processes keep it for `seconds`: any process or thread of the
    machine that forks between the write and ours takes it, and holds it
    as long as it lives."""
    deadline = time.monotonic() + seconds
    delay = 0.005
    while time.monotonic() < deadline:
        if os.path.exists(f"/proc/{pid}"):  # a thread's id too
            time.sleep(delay)  # until the taker is gone
            delay = min(delay * 2, 0.1)
            continue
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        proc = subprocess.Popen(argv, **popen)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait(15)
    return None


def hand_a_lock_on(mount, res):
    """Run HANDING_HOLDER on res's write file: (the holder's pid, its start
    time, its command name as the node has it, the keeper's pid)."""
    sh = subprocess.Popen(["bash", "-c", HANDING_HOLDER, "bash",
                           mount.path(res, "write")], stdout=subprocess.PIPE,
                          text=True, start_new_session=True)
    out = sh.communicate(timeout=15)[0].splitlines()
    assert sh.returncode == 0 and len(out) == 2 and out[0].isdigit(), \
        f"the holder failed: exit {sh.returncode}, said {out!r}"
    keeper = int(out[0])
    try:
        wait_until(lambda: os.getsid(keeper) == keeper, 15,
                   "the keeper of the descriptor in a session of its own")
        fields = holders_fields(mount, res)
        assert fields[0] == "held" and fields[4] == str(sh.pid), \
            f"the node names the holder that left: {fields}"
    except BaseException:
        os.kill(keeper, signal.SIGKILL)
        raise
    return sh.pid, start_time(out[1]), fields[6], keeper


@contextmanager
def pid_of_a_gone_holder(mount, res="r", attempts=5):
    """A holder of res's write lock on mount that handed its descriptor on
    and exited, and a process that took its pid and its command name
    since (blocking SIGUSR1: impostor_signalled tells if it was sent);
    yields the impostor.  The keeper holds the lock until the end of the
    block.  A pid another process took first is given up, for a new
    holder's, a few times."""
    for _ in range(attempts):
        pid, started, cmd, keeper = hand_a_lock_on(mount, res)
        try:
            # Start times count clock ticks: a process started in the
            # holder's own tick is not told apart (nor, outside a test, is
            # a pid handed out again that soon).
            wait_until(lambda: clock_ticks() > started, 5,
                       "a clock tick after the holder's start")
            impostor = start_with_pid(
                pid, [sys.executable, "-c", IMPOSTOR, cmd],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                start_new_session=True)
            if impostor is None:
                continue  # the next holder waits for this keeper's release
            try:
                assert impostor.stdout.readline().strip() == "ready"
                assert proc_comm(pid) == cmd
                with open(f"/proc/{pid}/stat") as f:
                    assert start_time(f.read()) > started
                yield impostor
                return
            finally:
                impostor.kill()
                impostor.wait(15)
        finally:
            os.kill(keeper, signal.SIGKILL)
    raise AssertionError(f"other processes took the gone holder's pid "
                         f"first, {attempts} times")


def impostor_signalled(impostor):
    """Was SIGUSR1 sent to the impostor (blocked: it stays pending)?"""
    with open(f"/proc/{impostor.pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    pending = int(fields["ShdPnd"], 16) | int(fields["SigPnd"], 16)
    return bool(pending >> (signal.SIGUSR1 - 1) & 1)


def expect_impostor_spared(mount, impostor):
    """Once mount has said what it did about the lock's holder, the process
    that took the gone holder's pid was sent nothing, and the log says the
    holder is gone."""
    pid = impostor.pid

    def told():
        log = mount.log()
        return log if re.search(r"is gone|\bsent \w+ to", log) else None
    try:
        log = wait_until(told, 15, "the mount to say what it did about the "
                         "holder")
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- log ---\n{mount.log()}") from None
    assert not impostor_signalled(impostor), \
        f"pid {pid}, which only took the gone holder's pid, was signalled:\n{log}"
    assert impostor.poll() is None, f"pid {pid} ended: {impostor.returncode}"
    assert re.search(rf"pid {pid} \([^)]*\) is gone", log), log


def status(mount):
    """MOUNT/.status as a dict: each line's first word -> the rest."""
    with open(mount.path(".status")) as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines())
