"""Other tools' lock services, each in a process and a ZooKeeper session
of its own as a real service would be: the real Apache Curator (Debian's
jars) in a JVM running CuratorLocks.java, and the real kazoo running
kazoo_locks.py.  Both hold locks on command, in one protocol."""
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from harness import Child

HERE = os.path.dirname(os.path.abspath(__file__))

# What a Curator 5.4 client needs on its class path, from Debian's
# libcurator-*-java and what they depend on.  slf4j-nop quiets logging.
CURATOR_JARS = ["curator-framework", "curator-client", "curator-recipes",
                "zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop",
                "guava", "netty-handler", "netty-common", "netty-transport",
                "netty-buffer", "netty-codec", "netty-resolver",
                "netty-transport-native-epoll",
                "netty-transport-native-unix-common"]


def curator_classpath():
    jars = [f"/usr/share/java/{j}.jar" for j in CURATOR_JARS]
    missing = [j for j in jars if not os.path.exists(j)]
    assert not missing, (f"Curator's jars are not installed ({missing}): "
                         "run contrib/install-deps --tests")
    return ":".join(jars)


def compile_java(source, classes):
    """javac source into the directory classes; returns the class path
    to run it with."""
    assert shutil.which("javac"), \
        "javac is not installed: run contrib/install-deps --tests"
    jars = curator_classpath()
    subprocess.run(["javac", "-J-XX:-UsePerfData", "-d", classes, "-cp", jars,
                    source], check=True)
    return f"{classes}:{jars}"


class LockService(Child):
    """A process holding another tool's locks on command (the protocol of
    CuratorLocks.java).  acquire() sends a command; outcome() waits for
    its answer, poll() looks whether it has come."""

    def __init__(self, name, argv):
        self.name = name
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1, start_new_session=True)
        Child.alive.add(self)  # killed at the end of a failed test
        self.answers = {}
        self.lines = queue.Queue()
        threading.Thread(target=self._read_lines, daemon=True).start()
        self.next_id = 0
        self.wait_for("ready", "ready", 60)

    def _read_lines(self):
        # A thread of its own: select() on a buffered pipe misses lines
        # already read into the buffer.
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _take(self, key, timeout, what):
        """The answer to key if it has come within timeout, else None."""
        deadline = time.monotonic() + timeout
        while key not in self.answers:
            try:
                line = self.lines.get(
                    timeout=max(0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            assert line is not None, \
                f"{self.name}'s JVM exited while waiting for {what}"
            head, _, rest = line.partition(" ")
            assert head != "?", f"{self.name}: {line}"
            self.answers[head] = rest
        return self.answers.pop(key)

    def wait_for(self, key, what, timeout=15):
        """The answer line for key (a command's ID, or "ready")."""
        res = self._take(key, timeout, what)
        assert res is not None, f"{self.name}: no {what} within {timeout} s"
        return res

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def acquire(self, kind, path, timeout_ms=-1, leases=None):
        """Start acquiring a lock (kind: write, read or mutex), or a lease
        of a semaphore of `leases` leases (kind lease); returns the ID that
        outcome() and release() take."""
        self.next_id += 1
        lock_id = f"L{self.next_id}"
        extra = "" if leases is None else f" {leases}"
        self.send(f"{kind} {lock_id} {path} {timeout_ms}{extra}")
        return lock_id

    def outcome(self, lock_id, timeout=15):
        """'held', 'timeout' or 'error ...' once the acquire has ended."""
        return self.wait_for(lock_id, f"answer to acquire {lock_id}",
                             timeout)

    def poll(self, lock_id):
        """The acquire's answer if it has come, else None."""
        return self._take(lock_id, 0, f"acquire {lock_id}")

    def hold(self, kind, path, timeout=15, leases=None):
        """Acquire and wait until held."""
        lock_id = self.acquire(kind, path, leases=leases)
        res = self.outcome(lock_id, timeout)
        assert res == "held", f"{self.name} {kind} lock on {path}: {res}"
        return lock_id

    def release(self, lock_id):
        self.send(f"release {lock_id}")
        res = self.wait_for(lock_id, f"release of {lock_id}")
        assert res == "released", f"{self.name} release of {lock_id}: {res}"

    def close(self):
        """End of input: the service closes its client (and session) and
        exits."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(30)
        Child.alive.discard(self)


class CuratorJava:
    """The compiled test program, once per test run."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="zklockfs-curator-")
        self.classpath = compile_java(os.path.join(HERE, "CuratorLocks.java"),
                                      self.dir)

    def service(self, hosts, session_ms=4000):
        return LockService("Curator", [
            "java", "-XX:-UsePerfData", "-cp", self.classpath, "CuratorLocks",
            hosts, str(session_ms)])

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def kazoo_service(hosts, session_ms=4000):
    return LockService("kazoo", [
        sys.executable, os.path.join(HERE, "kazoo_locks.py"), hosts,
        str(session_ms)])


def start_service(request, tool, connect, session_ms=4000):
    """A service of tool ("curator" or "kazoo") on connect; a Curator one
    runs the program the curator_java fixture compiled."""
    if tool == "curator":
        return request.getfixturevalue("curator_java").service(connect,
                                                               session_ms)
    return kazoo_service(connect, session_ms)
