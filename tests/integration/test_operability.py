"""Operability (introspection issue): holders and .status, logging, and the
daemon as an operator runs it -- installed by meson, mounted by mount(8)
and fstab, started by its systemd unit, unmounted with requests parked."""
import errno
import fcntl
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from harness import (HOLDERS_WINDOW, Locker, holders_once, is_mounted,
                     kazoo_client, lock_nodes, needs_private_mounts,
                     packets_received, released, status, wait_until,
                     zklockfs_binary)
from test_core import still_waiting

FIELDS = ("state", "mode", "token", "host", "pid", "uid", "cmd", "age",
          "node", "tool", "note")


def holders(mount, resource):
    """The holders file as a list of dicts, one per line."""
    with open(mount.path(resource, "holders")) as f:
        text = f.read()
    return [dict(zip(FIELDS, line.split(" ", 10))) for line in text.splitlines()]


def comm(pid):
    with open(f"/proc/{pid}/comm") as f:
        return f.read().strip()


def token_of(locker):
    return locker.command("read").split("|")[0]


def assert_row(row, state, mode, locker, note="-"):
    assert (row["state"], row["mode"]) == (state, mode), row
    assert row["pid"] == str(locker.proc.pid), row
    assert row["cmd"] == comm(locker.proc.pid), row
    assert row["host"] == socket.gethostname(), row
    assert row["uid"] == str(os.getuid()), row
    assert row["age"].endswith("s") and int(row["age"][:-1]) >= 0, row
    assert row["note"] == note, row


def test_holders_shows_queue_across_mounts_and_notes(zk, base, m1, m2):
    r1 = Locker(m1.path("db", "read"), "rw")
    r1.granted()
    r2 = Locker(m2.path("db", "read"), "rw")
    r2.granted()
    w = Locker(m1.path("db", "write"), "rw")
    wait_until(lambda: len(lock_nodes(zk, base + "/db")) == 3, 10, "the writer to queue")
    r3 = Locker(m2.path("db", "read"))
    wait_until(lambda: len(lock_nodes(zk, base + "/db")) == 4, 10, "the reader to queue")
    assert r1.command("note migrating schema v42") == "ok"

    rows = holders(m2, "db")
    assert len(rows) == 4, rows
    assert_row(rows[0], "held", "read", r1, note="migrating schema v42")
    assert_row(rows[1], "held", "read", r2)
    assert_row(rows[2], "waiting", "write", w)
    assert_row(rows[3], "waiting", "read", r3)
    assert rows[0]["token"] == token_of(r1) and rows[1]["token"] == token_of(r2)
    assert sorted(base + "/db/" + r["node"] for r in rows) == sorted(lock_nodes(zk, base + "/db"))
    # Both mounts see the same queue; reading it took no lock.
    assert [r["node"] for r in holders(m1, "db")] == [r["node"] for r in rows]
    assert len(lock_nodes(zk, base + "/db")) == 4

    # Fresh at each open: the readers go, the writer holds.
    r1.close()
    r2.close()
    w.granted()
    rows = holders(m1, "db")
    assert [(r["state"], r["mode"]) for r in rows] == [("held", "write"), ("waiting", "read")]
    assert rows[0]["token"] == token_of(w)
    w.close()
    r3.granted()
    r3.close()
    released(zk, base + "/db")  # r3's, from the other mount
    assert holders(m1, "db") == []
    # Nobody ever queued: empty, and nothing is created for the asking.
    assert holders(m1, "nobody") == []
    assert zk.exists(base + "/nobody") is None


def test_notes_are_bounded_and_escaped_and_other_tools_nodes_shown(zk, base, m1):
    h = Locker(m1.path("x", "write"), "rw")
    h.granted()
    assert h.command("note " + "n" * 1024) == "err EFBIG"  # 1025 bytes
    assert h.command("note " + "n" * 1023) == "ok"        # 1024 bytes
    assert holders(m1, "x")[0]["note"] == "n" * 1023
    assert h.command("note a\tb\\c d") == "ok"
    assert holders(m1, "x")[0]["note"] == "a\\011b\\134c d"

    # Other tools' lock nodes: in their queue places, with their tool and
    # what their data says (kazoo's identifier as a note, Curator's
    # client address as the host).
    # Ephemeral, as the tools make them (a persistent one is an orphan).
    kazoo = zk.create(base + "/x/9f2c__lock__", b"worker 7", ephemeral=True,
                      sequence=True)
    curator = zk.create(base + "/x/_c_0123abcd-0000-4000-8000-00000000000a"
                        "-lock-", b"10.0.0.1", ephemeral=True, sequence=True)
    try:
        # Made by another client: m1 is not told, and shows them within
        # the second its text of x is kept.
        rows = holders_once(lambda: holders(m1, "x"),
                            lambda rows: len(rows) == 3)
        assert rows[0]["state"] == "held" and rows[0]["pid"] == str(h.proc.pid)
        assert rows[0]["tool"] == "zklockfs", rows
        assert rows[1]["state"] == "waiting" and rows[1]["mode"] == "write", rows
        assert rows[1]["node"] == kazoo.rsplit("/", 1)[1]
        # A waiter names the node in its way (the one it watches).
        assert rows[1]["tool"] == "kazoo:waits=" + rows[0]["node"], rows
        assert (rows[1]["host"], rows[1]["pid"], rows[1]["note"]) == \
            ("-", "-", "worker 7")
        assert rows[2]["tool"] == "curator:waits=" + rows[1]["node"] and \
            rows[2]["state"] == "waiting", rows
        assert (rows[2]["host"], rows[2]["note"]) == ("10.0.0.1", "-"), rows
        assert int(rows[1]["token"]) > int(rows[0]["token"])
        assert "9f2c__lock__" not in os.listdir(m1.path("x")), "a lock node is no resource"
    finally:
        zk.delete(kazoo)
        zk.delete(curator)
    # The text files are read-only, and no lock.
    for path in (m1.path("x", "holders"), m1.path(".status")):
        with pytest.raises(PermissionError):
            open(path, "w")
    with open(m1.path("x", "holders")) as f, pytest.raises(OSError) as e:
        import fcntl
        fcntl.flock(f, fcntl.LOCK_EX)
    assert e.value.errno == errno.EINVAL
    h.close()


def read_holders(mount, resource):
    with open(mount.path(resource, "holders")) as f:
        return f.read()


def test_reads_of_holders_share_a_fetch_and_cost_a_tenth(zookeeper, base, m1):
    """A holders text costs one request per queued node; reads within a
    second share one (issue 55): 100 reads with 300 nodes queued cost at
    most a tenth of the 30,000 requests that a fetch per read made, one
    after the other or all at once."""
    nodes, reads = 300, 100
    # 300 waiters in the mount's own layout, made cheaply by a session of
    # the test's: its end removes them.
    with kazoo_client(zookeeper.connect) as queue:
        queue.ensure_path(base + "/crowd")
        creates = [queue.create_async(
            f"{base}/crowd/_c_{uuid.uuid4()}-write-", b"", ephemeral=True,
            sequence=True) for _ in range(nodes)]
        for c in creates:
            c.get(timeout=30)
        wait_until(lambda: len(lock_nodes(queue, base + "/crowd")) == nodes,
                   30, "the queue to be made")
        before = packets_received(zookeeper)
        for _ in range(reads):
            lines = read_holders(m1, "crowd").splitlines()
            assert len(lines) == nodes and lines[0].startswith("held write") \
                and lines[-1].startswith("waiting write"), lines[:2]
        one_by_one = packets_received(zookeeper) - before

        time.sleep(HOLDERS_WINDOW)  # the text kept is over
        texts = []

        def reader():
            for _ in range(reads // 10):
                texts.append(read_holders(m1, "crowd"))

        before = packets_received(zookeeper)
        threads = [threading.Thread(target=reader) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        at_once = packets_received(zookeeper) - before
        assert len(texts) == reads and \
            all(len(t.splitlines()) == nodes for t in texts), \
            "a reader at once got no text, or another queue"
    bound = reads * (nodes + 1) // 10
    print(f"{reads} reads of holders with {nodes} nodes queued: "
          f"{one_by_one} requests one by one, {at_once} by 10 readers at once")
    assert one_by_one <= bound, \
        f"{reads} reads one after another cost {one_by_one} requests, " \
        f"expected at most {bound} (a fetch alone costs {nodes + 1})"
    assert at_once <= bound, \
        f"{reads} reads by 10 readers at once cost {at_once} requests, " \
        f"expected at most {bound}"


def test_holders_shows_this_mounts_own_changes_at_once(zk, base, m1, m2):
    """Reads share a text for a second, but never one older than what this
    mount did: a lock it granted, a waiter it queued, a note it stored, a
    lock it let go show at the next open, well within the window.
    Another host's change shows within the window."""
    def rows():
        return [(r["state"], r["mode"], r["pid"], r["note"])
                for r in holders(m1, "r")]

    me = str(os.getpid())
    assert rows() == []  # a text is kept now: nobody
    fd = os.open(m1.path("r", "write"), os.O_RDWR)  # granted
    try:
        assert rows() == [("held", "write", me, "-")], \
            "the lock this mount just granted is not shown"
        os.write(fd, b"moving")
        assert rows() == [("held", "write", me, "moving")], \
            "the note this mount just stored is not shown"
        w = Locker(m1.path("r", "write"))
        wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 2, 10,
                   "the waiter to queue")
        waiter = str(w.proc.pid)
        assert rows() == [("held", "write", me, "moving"),
                          ("waiting", "write", waiter, "-")], \
            "the waiter this mount just queued is not shown"
    finally:
        os.close(fd)
    w.granted()
    assert rows() == [("held", "write", waiter, "-")], \
        "the handoff this mount just granted is not shown"
    w.close()  # RELEASE comes after close() returns: wait for its delete
    released(zk, base + "/r")
    assert rows() == [], "the lock this mount just let go is shown"
    # flock(LOCK_UN) returns once the node is deleted.
    lk = os.open(m1.path("r", "lock"), os.O_RDONLY)
    try:
        fcntl.flock(lk, fcntl.LOCK_EX)
        assert rows() == [("held", "write", me, "-")]
        fcntl.flock(lk, fcntl.LOCK_UN)
        assert rows() == [], "the lock just unlocked is shown"
    finally:
        os.close(lk)
    # Another host's lock: m1 is told nothing, and shows it once the text
    # it keeps is over.
    other = Locker(m2.path("r", "write"))
    other.granted()
    start = time.monotonic()
    wait_until(lambda: rows() == [("held", "write", str(other.proc.pid), "-")],
               HOLDERS_WINDOW + 2, "another host's lock to show on m1")
    assert time.monotonic() - start < HOLDERS_WINDOW + 1, \
        "another host's lock showed later than the window"
    other.close()


def test_status_reports_session_and_counts(zookeeper, base, m1, m2):
    s = status(m1)
    assert s["state"] == "connected", s
    assert (s["servers"], s["base"]) == (zookeeper.connect, base), s
    assert s["server"] == zookeeper.connect, s
    assert (s["held"], s["waiting"], s["grants"], s["losses"]) == ("0", "0", "0", "0"), s
    assert int(s["session_timeout_ms"]) == 4000, s

    h = Locker(m1.path("a", "write"), "rw")
    h.granted()
    w = Locker(m1.path("a", "write"))
    wait_until(lambda: status(m1)["waiting"] == "1", 10, ".status to count the waiter")
    s = status(m1)
    assert (s["held"], s["waiting"], s["grants"]) == ("1", "1", "1"), s
    session = dict(l.split(" ", 1) for l in h.command("read").split("|")[1:])["session"]
    assert s["session"] == session, (s, session)
    assert (status(m2)["held"], status(m2)["waiting"]) == ("0", "0")
    h.close()
    w.granted()
    s = status(m1)
    assert (s["held"], s["waiting"], s["grants"]) == ("1", "0", "2"), s
    w.close()
    wait_until(lambda: status(m1)["held"] == "0", 10, ".status to count the release")


def test_status_says_suspended_while_zookeeper_is_down(zookeeper, zk, base, mounts):
    m = mounts.new("-o", "session_timeout=30")
    h = Locker(m.path("r", "write"), "rw")
    h.granted()
    token = token_of(h)
    assert holders(m, "r")[0]["token"] == token  # a text kept for a second
    zookeeper.kill()
    try:
        wait_until(lambda: status(m)["state"] == "suspended", 20, ".status to say suspended")
        assert status(m)["held"] == "1"
        # holders needs ZooKeeper: it fails at once instead of showing old
        # data, the text kept from before the loss too.
        with pytest.raises(OSError) as e:
            open(m.path("r", "holders")).read()
        assert e.value.errno in (errno.EAGAIN, errno.ENOTCONN), e.value
    finally:
        zookeeper.log.close()
        zookeeper.start()
    wait_until(lambda: status(m)["state"] == "connected", 30, ".status to say connected")
    assert token_of(h) == token, "the lock did not survive the outage"
    assert holders(m, "r")[0]["token"] == token
    wait_until(lambda: zk.connected, 20, "the test's client to reconnect")
    h.close()


def test_log_has_grants_always_and_every_request_with_debug(mounts):
    quiet = mounts.new()
    loud = mounts.new("-d")
    for m in (quiet, loud):
        h = Locker(m.path("r", "write"))
        h.granted()
        holders(m, "r")
        h.close()
    wait_until(lambda: "released write lock" in loud.log(), 10, "the release in the debug log")
    for m in (quiet, loud):
        assert "granted write lock on" in m.log(), m.log()
        assert "ZooKeeper session" in m.log() and "connected" in m.log()
    for line in ("asks a write lock", "holders of"):
        assert line in loud.log(), loud.log()
        assert line not in quiet.log(), quiet.log()


def test_unmount_with_blocked_opener(zk, base, m1, m2):
    holder = Locker(m1.path("r", "write"))
    holder.granted()
    opener = Locker(m2.path("r", "write"))
    wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 2, 10, "the opener to queue")

    # A plain unmount is refused while an open waits, and changes nothing.
    for cmd in (["umount", m2.mountpoint], ["fusermount3", "-u", m2.mountpoint]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "busy" in r.stderr, (cmd, r)
    assert still_waiting(opener) and m2.proc.poll() is None

    # umount -f aborts the connection: the opener gets an error at once, the
    # daemon closes its session and exits cleanly.
    subprocess.run(["umount", "-f", m2.mountpoint], capture_output=True, timeout=30)
    assert opener.wait_result(15, "the parked open to fail") == "err ECONNABORTED"
    assert m2.proc.wait(15) == 0, m2.log()
    wait_until(lambda: len(lock_nodes(zk, base + "/r")) == 1, 10,
               "the aborted mount's node to go")
    holder.close()


# ---- installed, and run the ways an operator runs it ---------------------

@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`meson install --destdir` of the build under test: {suffix: path}."""
    build = os.environ.get("ZKLOCKFS_BUILD_DIR")
    assert build, "ZKLOCKFS_BUILD_DIR must name the meson build (meson test sets it)"
    dest = tmp_path_factory.mktemp("destdir")
    r = subprocess.run(["meson", "install", "-C", build, "--destdir", str(dest),
                        "--no-rebuild", "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    files = {}
    for d, _, names in os.walk(dest):
        for n in names:
            files[os.path.relpath(os.path.join(d, n), dest)] = os.path.join(d, n)
    wanted = ("sbin/zklockfs", "man8/zklockfs.8", "systemd/system/zklockfs@.service",
              "doc/zklockfs/fstab.example", "doc/zklockfs/zklockfs.conf.example")
    found = {}
    for suffix in wanted:
        hits = [p for rel, p in files.items() if rel.endswith(suffix)]
        assert len(hits) == 1, f"{suffix} installed {len(hits)} times: {sorted(files)}"
        found[suffix] = hits[0]
    found["destdir"] = str(dest)
    return found


def test_meson_install_installs_binary_man_page_and_units(installed):
    r = subprocess.run([installed["sbin/zklockfs"], "--version"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("zklockfs "), r
    r = subprocess.run(["man", "--warnings", "-l", installed["man8/zklockfs.8"]],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0"))
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", "the man page renders with warnings:\n" + r.stderr
    page = re.sub(".\x08", "", r.stdout)  # grotty's overstrike bold
    for heading in ("zklockfs - ZooKeeper locks as files", "HOLDERS", "STATUS",
                    "MOUNTING AT BOOT", "UNMOUNTING", "LOGGING", "EXIT STATUS"):
        assert heading in page, heading
    unit = open(installed["systemd/system/zklockfs@.service"]).read()
    for line in ("Type=notify", "Restart=on-failure", "EnvironmentFile=/etc/zklockfs/%i.conf"):
        assert line in unit.splitlines(), line
    for line in unit.splitlines():
        if line.startswith("ExecStart"):
            exe = line.split("=", 1)[1].lstrip("-").split()[0]
            assert exe.startswith("/"), line
            if exe.endswith("/zklockfs"):
                assert os.access(installed["destdir"] + exe, os.X_OK), line
            else:
                assert os.access(exe, os.X_OK), line


def options_of_terms(terms):
    """The options some option list's terms name ('-o uid=N,gid=N' names
    uid and gid), as '-x', '--long' and '-o name'."""
    found = set()
    for term in terms:
        term = re.sub(r"(?<!\w)_|_(?!\w)", "", term.replace("*", ""))
        for word in re.split(r",? +", term):
            if re.fullmatch(r"-\w|--[\w-]+", word) and word != "-o":
                found.add(word)
        for value in re.findall(r"-o (\S+)", term):
            found |= {"-o " + re.match(r"\w*", item).group()
                      for item in value.split(",")} - {"-o "}
    return found


def test_help_and_the_manual_page_name_the_same_options():
    """The manual page is where the options are documented; --help is its
    summary, and neither may name an option the other does not."""
    helped = subprocess.run([zklockfs_binary(), "--help"], capture_output=True,
                            text=True, timeout=30).stdout
    helped = helped.split("\noptions:\n", 1)[1]
    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "doc",
                             "zklockfs.8.scd")).read()
    page = page.split("\n# OPTIONS\n", 1)[1].split("\n# ", 1)[0]
    # --help: "    -o name=X   what it does"; the page: "*-o name=*_X_" terms.
    in_help = options_of_terms(re.split(r"  +", line.strip())[0]
                               for line in helped.splitlines()
                               if re.match(r"    -", line))
    in_page = options_of_terms(line for line in page.splitlines()
                               if line.startswith("*-"))
    assert len(in_help) > 10, helped
    assert in_help == in_page, (f"only in --help: {sorted(in_help - in_page)}; "
                                f"only in zklockfs(8): {sorted(in_page - in_help)}")


def unit_command(installed, connect, mountpoint, options):
    """The unit's ExecStart as systemd would run it for the instance of
    `mountpoint` with ZKLOCKFS_CONNECT and ZKLOCKFS_OPTIONS set."""
    unit = open(installed["systemd/system/zklockfs@.service"]).read()
    line = next(l for l in unit.splitlines() if l.startswith("ExecStart="))
    argv = []
    for word in line[len("ExecStart="):].split():
        if word == "$ZKLOCKFS_OPTIONS":
            argv += options.split()
            continue
        argv.append(word.replace("${ZKLOCKFS_CONNECT}", connect)
                    .replace("%I", mountpoint.lstrip("/")))
    argv[0] = installed["destdir"] + argv[0]
    return argv


SYSLOG_LINE = re.compile(r"<(\d+)>\w{3} [ \d]\d \d\d:\d\d:\d\d zklockfs\[\d+\]: (.*)")


def journal_lines(since):
    """What the journal holds under the tag zklockfs since `since` (epoch
    seconds), as (facility, message) pairs."""
    r = subprocess.run(["journalctl", "-t", "zklockfs", "--since", f"@{since:.0f}",
                        "-o", "export"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    found = []
    for entry in r.stdout.split("\n\n"):
        fields = dict(line.split("=", 1) for line in entry.splitlines() if "=" in line)
        if "MESSAGE" in fields:
            found.append((int(fields.get("SYSLOG_FACILITY", -1)), fields["MESSAGE"]))
    return found


def test_a_detached_daemon_logs_to_syslog_tagged_zklockfs(zookeeper, zk, base):
    """Without -f the log goes to syslog(3): to the journal on a Debian 12
    with systemd; on a machine where nothing listens on /dev/log, to a
    socket the test binds there for the test's length."""
    mnt = tempfile.mkdtemp(prefix="zklockfs-syslog-")
    since = time.time() - 1
    sock = None
    if not os.path.exists("/dev/log"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind("/dev/log")
        sock.settimeout(0.2)
    elif not shutil.which("journalctl"):
        pytest.skip("a syslog daemon without the journal listens on /dev/log")
    lines = []

    def received():
        if sock is None:
            lines[:] = journal_lines(since)
            return lines
        try:
            while True:
                m = SYSLOG_LINE.match(sock.recv(8192).decode(errors="replace"))
                assert m, "a syslog line not tagged zklockfs[PID]"
                lines.append((int(m.group(1)) >> 3, m.group(2)))
        except socket.timeout:
            return lines

    def logged(text):
        return any(text in message for _, message in received())

    try:
        r = subprocess.run([zklockfs_binary(), "-o", "session_timeout=4",
                            zookeeper.connect + base, mnt],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        # The start shows on the terminal as well as in syslog.
        assert "zklockfs: mounted " in r.stderr, r.stderr
        os.close(os.open(os.path.join(mnt, "r", "write"), os.O_WRONLY))
        subprocess.run(["fusermount3", "-u", mnt], check=True, timeout=30)
        for text in ("mounted ", "granted write lock", "unmounting"):
            wait_until(lambda: logged(text), 15, f"a syslog line with {text!r}")
        assert {facility for facility, _ in lines} == {3}, \
            f"not all of facility daemon (3): {lines}"
    finally:
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        if sock is not None:
            sock.close()
            os.unlink("/dev/log")
        os.rmdir(mnt)
    wait_until(lambda: not lock_nodes(zk, base), 15, "no lock node left")


def unit_start_pre(installed, mountpoint):
    """The unit's ExecStartPre commands for the instance of `mountpoint`,
    each as (argv, may_fail)."""
    unit = open(installed["systemd/system/zklockfs@.service"]).read()
    found = []
    for line in unit.splitlines():
        if not line.startswith("ExecStartPre="):
            continue
        command = line[len("ExecStartPre="):]
        may_fail = command.startswith("-")
        command = command.lstrip("-").replace("%I", mountpoint.lstrip("/"))
        found.append((shlex.split(command), may_fail))
    assert found, unit
    return found


def test_the_units_start_clears_a_dead_mount_and_says_nothing_otherwise(
        installed, zookeeper, base, mounts):
    """Its ExecStartPre: silent when nothing is mounted (every clean start),
    and a dead mount (a daemon killed) is cleared for the new daemon."""
    m = mounts.new()
    m.kill()
    with pytest.raises(OSError):
        os.stat(m.path(".status"))  # ENOTCONN: a dead mount
    for argv, _ in unit_start_pre(installed, m.mountpoint):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (argv, r.stderr)
    assert not is_mounted(m.mountpoint), "the dead mount is still there"
    for argv, _ in unit_start_pre(installed, m.mountpoint):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), (argv, r)


@pytest.fixture
def unit_options():
    """The unit's ZKLOCKFS_OPTIONS in its tests (test_tls.py adds TLS's)."""
    return "-o session_timeout=4"


def test_service_unit_starts_reports_ready_and_stops(installed, zookeeper, zk, base, tmp_path,
                                                     unit_options):
    mnt = tempfile.mkdtemp(prefix="zklockfs-unit-")
    sock_path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(30)
    argv = unit_command(installed, zookeeper.connect + base, mnt, unit_options)
    proc = subprocess.Popen(argv, env=dict(os.environ, NOTIFY_SOCKET=sock_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = sock.recv(4096).decode()
        assert "READY=1" in ready.split("\n") and f"MAINPID={proc.pid}" in ready, ready
        assert is_mounted(mnt), "READY=1 came before the mount"
        fd = os.open(os.path.join(mnt, "svc", "write"), os.O_RDWR)
        assert os.read(fd, 100).split(b"\n")[0].isdigit()
        os.close(fd)
        proc.send_signal(signal.SIGTERM)  # systemctl stop
        assert proc.wait(30) == 0, proc.stderr.read()
        assert sock.recv(4096).decode() == "STOPPING=1"
        assert not is_mounted(mnt)
        assert lock_nodes(zk, base) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        sock.close()
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
        os.rmdir(mnt)


HELPER_SCRIPT = r"""
set -eu
# Our build stands where mount.fuse3 looks for `zklockfs` (its shell's
# default PATH), in this mount namespace only.
mount --bind "$BINDIR" /usr/local/sbin
mount -t fuse.zklockfs -o session_timeout=4 "$CONNECT" "$MNT"
grep -q " $MNT fuse.zklockfs " /proc/self/mounts
exec 9>"$MNT/helper/write"
grep -q "^held write" "$MNT/helper/holders"
flock -u 9  # released in ZooKeeper when it returns: the next mount's
exec 9>&-   # session (below) finds it free
umount "$MNT"
if grep -q " $MNT " /proc/self/mounts; then echo "still mounted" >&2; exit 1; fi
echo "mount -t: ok"
mount -T "$FSTAB" "$MNT"
grep -q " $MNT fuse.zklockfs " /proc/self/mounts
grep -q "^state connected" "$MNT/.status"
flock -n "$MNT/helper/lock" true
umount "$MNT"
echo "fstab: ok"
"""


def daemons_on(mountpoint):
    r = subprocess.run(["pgrep", "-f", f"zklockfs .*{mountpoint}"],
                       capture_output=True, text=True)
    return r.stdout.split()


@needs_private_mounts
def test_mount_8_and_fstab_mount_through_the_helper(zookeeper, zk, base, tmp_path):
    bindir = tmp_path / "sbin"
    bindir.mkdir()
    os.symlink(zklockfs_binary(), bindir / "zklockfs")
    mnt = tempfile.mkdtemp(prefix="zklockfs-helper-")
    fstab = tmp_path / "fstab"
    fstab.write_text(f"{zookeeper.connect}{base} {mnt} fuse.zklockfs "
                     "defaults,_netdev,nofail,noauto,session_timeout=4 0 0\n")
    env = dict(os.environ, BINDIR=str(bindir), CONNECT=zookeeper.connect + base,
               MNT=mnt, FSTAB=str(fstab))
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private",
                            "sh", "-c", HELPER_SCRIPT],
                           env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.split("\n")[:2] == ["mount -t: ok", "fstab: ok"], r.stdout
        # umount ended each daemon, which closed its session.
        wait_until(lambda: not daemons_on(mnt), 15, "the daemons to exit after umount")
        assert lock_nodes(zk, base) == []
    finally:
        for pid in daemons_on(mnt):
            os.kill(int(pid), signal.SIGKILL)
        os.rmdir(mnt)
