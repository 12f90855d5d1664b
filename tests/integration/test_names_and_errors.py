"""Bad names, refused operations and startup failures: documented errnos,
nothing created in ZooKeeper."""
import errno
import fcntl
import os
import subprocess
import threading
import time

import pytest

from harness import free_port, lock_nodes, zklockfs_binary
from tls import built_with_tls


def expect_errno(code, fn, *args):
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == code, \
        f"{fn.__name__}{args}: expected {errno.errorcode[code]}, got {errno.errorcode.get(e.value.errno)}"


def test_bad_names_and_refused_operations(zk, base, m1):
    mp = m1.mountpoint
    expect_errno(errno.EINVAL, os.mkdir, os.path.join(mp, ".hidden"))
    expect_errno(errno.EINVAL, os.mkdir, os.path.join(mp, "x" * 255 + "y"))
    expect_errno(errno.ENOENT, os.open, os.path.join(mp, ".hidden", "write"), os.O_RDONLY)
    expect_errno(errno.ENOENT, os.open, os.path.join(mp, "write"), os.O_RDONLY)
    expect_errno(errno.ENOENT, os.stat, os.path.join(mp, "lease"))
    expect_errno(errno.ENOENT, os.stat, os.path.join(mp, "lock"))
    expect_errno(errno.EINVAL, os.open, os.path.join(mp, "r", ".x"), os.O_CREAT | os.O_WRONLY)
    expect_errno(errno.EEXIST, os.open, os.path.join(mp, "r", "write"),
                 os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    expect_errno(errno.EPERM, os.unlink, os.path.join(mp, "r", "write"))
    expect_errno(errno.EPERM, os.rename, os.path.join(mp, "r", "write"),
                 os.path.join(mp, "r", "read"))
    expect_errno(errno.EPERM, os.chmod, os.path.join(mp, "r", "write"), 0o600)
    expect_errno(errno.EPERM, os.chown, os.path.join(mp, "r", "write"), 1, 1)
    expect_errno(errno.EPERM, os.truncate, os.path.join(mp, "r", "write"), 5)
    expect_errno(errno.EPERM, os.symlink, "x", os.path.join(mp, "r", ".lnk"))
    expect_errno(errno.EPERM, os.link, os.path.join(mp, "r", "write"),
                 os.path.join(mp, "r", ".lnk"))
    # Every valid name already exists as a resource (doc/locks.md, "Semantics"), so the
    # kernel itself answers EEXIST to creating one.
    expect_errno(errno.EEXIST, os.mkdir, os.path.join(mp, "r"))
    expect_errno(errno.EEXIST, os.symlink, "x", os.path.join(mp, "r", "lnk"))
    expect_errno(errno.ENOTDIR, os.rmdir, os.path.join(mp, "r", "write"))
    assert not zk.exists(base + "/r"), "a refused operation created the resource"
    assert zk.get_children(base) == [], zk.get_children(base)


def test_lock_files_look_like_empty_regular_files(m1):
    st = os.stat(m1.path("r", "write"))
    assert st.st_size == 0 and (st.st_mode & 0o170000) == 0o100000
    assert sorted(os.listdir(m1.path("r"))) == ["holders", "lease", "limit", "lock", "maxhold", "read", "revoke", "write"]
    for info in (m1.path("r", "holders"), m1.path(".status")):
        st = os.stat(info)
        assert (st.st_mode & 0o170777) == 0o100444, oct(st.st_mode)


def test_every_file_carries_the_mounts_start_time(mounts):
    """ls -l dates the files when the mount started, not 1970."""
    before = time.time()
    m = mounts.new()
    after = time.time()
    for path in (m.mountpoint, m.path("r"), m.path("r", "write"),
                 m.path(".status"), m.path(".all", "a,b", "lock")):
        st = os.stat(path)
        assert int(before) <= st.st_mtime <= after + 1, \
            f"{path}: mtime {time.ctime(st.st_mtime)}, mounted at {time.ctime(before)}"
        assert st.st_mtime == st.st_ctime == st.st_atime, path


def test_readdir_lists_resources_that_exist_and_rmdir(zk, base, m1):
    zk.ensure_path(base + "/one/two")
    zk.ensure_path(base + "/three")
    assert sorted(os.listdir(m1.mountpoint)) == [".metrics", ".status", "one",
                                                 "three"]
    assert sorted(os.listdir(m1.path("one"))) == ["holders", "lease", "limit", "lock", "maxhold", "read", "revoke", "two", "write"]
    expect_errno(errno.ENOTEMPTY, os.rmdir, m1.path("one"))
    os.rmdir(m1.path("one", "two"))
    os.rmdir(m1.path("one"))
    assert not zk.exists(base + "/one")
    os.rmdir(m1.path("three"))
    assert zk.get_children(base) == []


def test_nested_resources_lock_independently(m1, m2):
    from harness import Locker
    outer = Locker(m1.path("a", "write"))
    outer.granted()
    inner = Locker(m2.path("a", "b", "write"))
    inner.granted()
    inner.close()
    outer.close()


def test_unreachable_zookeeper_exits_nonzero_naming_the_server(tmp_path):
    port = free_port()  # nothing listens here
    res = subprocess.run([zklockfs_binary(), "-o", "connect_timeout=1",
                          f"127.0.0.1:{port}", str(tmp_path)],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0
    assert f"127.0.0.1:{port}" in res.stderr, res.stderr
    with open("/proc/self/mountinfo", errors="surrogateescape") as f:
        assert str(tmp_path) not in f.read(), "mounted without ZooKeeper"


def test_help_and_version(tmp_path):
    h = subprocess.run([zklockfs_binary(), "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "session_timeout" in h.stdout and "(default 10)" in h.stdout
    v = subprocess.run([zklockfs_binary(), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("zklockfs ")
    bad = subprocess.run([zklockfs_binary(), "-o", "ro", "h:1", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "read-only" in bad.stderr


def refused_starts(zookeeper, base, tmp_path, m1):
    """(argv after the binary, what stderr must say) of starts that must
    fail before anything is created in ZooKeeper."""
    good = zookeeper.connect + base
    regular = tmp_path / "a-file"
    regular.write_text("")
    mp = str(tmp_path)
    return [
        (["-o", "session_timeout=1.5", good, mp], "session_timeout=1.5"),
        (["-o", "connect_timeout=1e3", good, mp], "connect_timeout=1e3"),
        (["-o", "uid=4294967296", good, mp], "uid=4294967296"),
        (["-o", "gid=-1", good, mp], "gid=-1"),
        (["-o", "umask=0x1f", good, mp], "umask=0x1f"),
        (["-o", "bogusopt", good, mp], "bogusopt"),
        (["-o", f"auth_file={tmp_path}", good, mp], "is a directory"),
        (["127.0.0.1:0" + base, mp], "invalid port '0'"),
        (["127.0.0.1:99999" + base, mp], "invalid port '99999'"),
        ([":2181" + base, mp], "no host name before the port"),
        ([zookeeper.connect + base + "/./b", mp], "'.' or '..'"),
        ([zookeeper.connect + base + "/ok/..", mp], "'.' or '..'"),
        ([zookeeper.connect + "/zookeeper" + base, mp], "/zookeeper"),
        ([good, str(regular)], "not a directory"),
        ([good, mp + "/missing"], "No such file or directory"),
        ([good, m1.mountpoint], "already a zklockfs mount"),
    ] + (
        # A build with TLS checks the TLS files first (test_tls.py has the
        # rest); one without says it has none.
        [(["-o", f"tls_ca={tmp_path},tls_cert={regular},tls_key={regular}",
           good, mp], f"tls_ca {tmp_path}: is a directory"),
         (["-o", f"tls_ca={regular},tls_cert={regular},tls_key=a\\,b",
           good, mp], "cannot take a path with a comma"),
         (["-o", "x509_acl", good, mp], "tls_cert and tls_key together")]
        if built_with_tls() else
        [(["-o", f"tls_ca={regular},tls_cert={regular},tls_key={regular}",
           good, mp], "built without TLS")])


def test_a_refused_start_says_why_and_creates_nothing(
        zookeeper, zk, base, tmp_path, m1):
    """Options, servers, base path and mount point are all checked before
    connecting: each bad start exits non-zero, names the problem, and
    leaves ZooKeeper as it was."""
    fresh = base + "-refused"  # m1 created `base` already
    before = set(zk.get_children("/"))
    for args, says in refused_starts(zookeeper, fresh, tmp_path, m1):
        res = subprocess.run([zklockfs_binary(), "-f", *args],
                             capture_output=True, text=True, timeout=10)
        assert res.returncode != 0, (args, res.stderr)
        assert says in res.stderr, (args, says, res.stderr)
        assert zk.exists(fresh) is None, (args, "created the base path")
        assert set(zk.get_children("/")) == before, \
            (args, set(zk.get_children("/")) - before)
    with open("/proc/self/mountinfo", errors="surrogateescape") as f:
        mounts = f.read()
    assert mounts.count(" " + m1.mountpoint + " ") == 1, "stacked a mount"


def test_unresolvable_servers_are_named_at_once(tmp_path):
    """In a network namespace of its own (no DNS server reachable: nothing
    leaves the machine), no server name resolves: the start fails at once
    naming each one, instead of waiting connect_timeout for an answer."""
    res = subprocess.run(
        ["unshare", "-n", zklockfs_binary(), "-f", "-o", "connect_timeout=30",
         "nosuchhost.invalid:2181,other.invalid:2181/x", str(tmp_path)],
        capture_output=True, text=True, timeout=20)
    assert res.returncode != 0
    assert "cannot resolve any ZooKeeper server: 'nosuchhost.invalid:2181': " \
        in res.stderr, res.stderr
    assert "; 'other.invalid:2181': " in res.stderr, res.stderr
    # One name that does not resolve among others is a warning: the
    # client uses the rest (here 127.0.0.1, down in that namespace).
    res = subprocess.run(
        ["unshare", "-n", zklockfs_binary(), "-f", "-o", "connect_timeout=1",
         "nosuchhost.invalid:2181,127.0.0.1:2181/x", str(tmp_path)],
        capture_output=True, text=True, timeout=20)
    assert res.returncode != 0
    assert "cannot resolve 'nosuchhost.invalid:2181': " in res.stderr, res.stderr
    assert "using the other servers" in res.stderr, res.stderr
    assert "no ZooKeeper server answered" in res.stderr, res.stderr


MAX_RESOURCE_PATH = 963  # recipes/names.h: NAMES_MAX_RESOURCE_PATH


def test_the_path_limit_is_one_and_holds_everywhere(zk, base, m1):
    """A resource whose znode path fits takes locks and lists its holders;
    one byte more is ENAMETOOLONG for lookup and mkdir alike, and creates
    nothing."""
    room = MAX_RESOURCE_PATH - len(base)
    parts = []
    while room - 1 > 200:
        parts.append("p" * 200)
        room -= 201
    parts.append("q" * (room - 1))
    deep = m1.path(*parts)
    fd = os.open(os.path.join(deep, "write"), os.O_WRONLY | os.O_NONBLOCK)
    try:
        with open(os.path.join(deep, "holders")) as f:
            assert f.read().startswith("held write "), "holders at the limit"
    finally:
        os.close(fd)
    too_long = os.path.join(m1.path(*parts[:-1]), parts[-1] + "x")
    expect_errno(errno.ENAMETOOLONG, os.stat, too_long)
    expect_errno(errno.ENAMETOOLONG, os.mkdir, too_long)
    expect_errno(errno.ENAMETOOLONG, os.stat, os.path.join(deep, "r"))
    zpath = base + "/" + "/".join(parts[:-1]) + "/" + parts[-1] + "x"
    assert zk.exists(zpath) is None


def test_ioctls_answer_at_once_and_take_no_lock(zk, base, m1):
    """lsattr opens a lock file (O_NONBLOCK: a try) and asks FS_IOC_GETFLAGS,
    for which the kernel opens the file once more by itself: that open
    must not queue behind the lock lsattr already holds."""
    for name in ("write", "read", "lock", "holders"):
        res = subprocess.run(["timeout", "5", "lsattr", m1.path("x", name)],
                             capture_output=True, text=True)
        assert res.returncode not in (0, 124), (name, res)
        assert "not supported" in res.stderr, (name, res.stderr)
    assert not lock_nodes(zk, base), "an ioctl left a lock node"


def test_a_note_with_nul_bytes_is_stored_whole_and_shown_escaped(m1, m2):
    fd = os.open(m1.path("n", "write"), os.O_RDWR)
    try:
        assert os.write(fd, b"a\0b c\n") == 6
        with open(m2.path("n", "holders")) as f:
            line = f.readline().rstrip("\n")
        assert line.endswith(" a\\000b c"), line
    finally:
        os.close(fd)


# File names ZooKeeper refuses in a path, and the znode names they map to.
ENCODED_NAMES = {
    b"\xf0\x9f\x9a\x80go": "%F0%9F%9A%80go",  # U+1F680: beyond U+FFFF
    b"caf\xe9": "caf%E9",                    # Latin-1, not UTF-8
    b"\xc2\x85nel": "%C2%85nel",              # U+0085, a C1 control
    b"tab\there": "tab%09here",
    b"\xef\xbf\xbf": "%EF%BF%BF",              # U+FFFF
    b"\xee\x80\x80": "%EE%80%80",              # U+E000, private use
    b"%E9": "%25E9",                          # would read as an escape
    b"50%": "50%",                            # would not
    b"caf\xc3\xa9": "café",                    # UTF-8 ZooKeeper takes
}


def flock_within(fd, seconds, what):
    """A blocking flock(LOCK_EX), given up after `seconds` with a message
    instead of hanging the suite.  It waits on a thread of its own: no
    signal can cancel it, since under pytest-xdist the test may not run on
    the main thread, the only one Python lets set a handler."""
    result = []

    def take():
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            result.append("ok")
        except OSError as e:
            result.append(e)
    waiter = threading.Thread(target=take, daemon=True)
    waiter.start()
    waiter.join(seconds)
    assert result, f"{what}: no exclusive flock within {seconds} s"
    assert result[0] == "ok", f"{what}: {result[0]}"


def test_names_zookeeper_refuses_work_for_every_operation(zk, base, m1, m2):
    """Each name locks, flocks, lists and shows holders from the other
    mount, under the documented znode name, and is removed again."""
    mp1, mp2 = os.fsencode(m1.mountpoint), os.fsencode(m2.mountpoint)
    for name, znode in ENCODED_NAMES.items():
        what = f"{name!r} -> {znode}"
        fd = os.open(os.path.join(mp1, name, b"write"), os.O_RDWR | os.O_NONBLOCK)
        try:
            assert znode in zk.get_children(base), what
            assert len(lock_nodes(zk, f"{base}/{znode}")) == 1, what
            assert name in os.listdir(mp2), what
            expect_errno(errno.EAGAIN, os.open, os.path.join(mp2, name, b"read"),
                         os.O_RDONLY | os.O_NONBLOCK)
            other = os.open(os.path.join(mp2, name, b"lock"), os.O_RDONLY)
            try:
                with pytest.raises(BlockingIOError):
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                with open(os.path.join(mp2, name, b"holders")) as f:
                    assert f.read().startswith("held write "), what
            finally:
                os.close(other)
        finally:
            os.close(fd)
        other = os.open(os.path.join(mp2, name, b"lock"), os.O_RDONLY)
        try:
            flock_within(other, 15, what)  # the close's release
            assert len(lock_nodes(zk, f"{base}/{znode}")) == 1, what
            fcntl.flock(other, fcntl.LOCK_UN)  # over when it returns
        finally:
            os.close(other)
        os.rmdir(os.path.join(mp2, name))
        assert znode not in zk.get_children(base), what
    assert zk.get_children(base) == []


def test_a_znode_name_no_file_name_maps_to_is_not_listed(zk, base, m1):
    """Another tool's "caf%C3%A9" would read as "café", whose own znode is
    "café": listing it would show a name that leads elsewhere."""
    for child in ("caf%C3%A9", "a%20b", "caf%E9"):
        zk.ensure_path(f"{base}/{child}")
    assert sorted(os.listdir(os.fsencode(m1.mountpoint))) == \
        [b".metrics", b".status", b"a%20b", b"caf\xe9"]


def test_rmdir_with_a_file_open_inside_leaves_the_name_usable(zk, base, m1, m2):
    """rmdir of a resource whose `lock` file is open (it takes no lock, so
    the resource node is empty and goes).  The kernel then holds that
    directory's inode for removed: the next lookups of the name get a new
    one, rather than ENOENT until the entry timeout (an hour), and the
    descriptor opened before still takes real locks."""
    zk.ensure_path(f"{base}/job3")
    fd = os.open(m1.path("job3", "lock"), os.O_RDWR)
    try:
        os.rmdir(m1.path("job3"))
        assert not zk.exists(f"{base}/job3"), "rmdir left the node"
        with open(m1.path("job3", "holders")) as f:
            assert f.read() == ""
        with open(m1.path("job3", "write")):
            assert lock_nodes(zk, f"{base}/job3"), "no lock node queued"
            other = subprocess.run(["flock", "-n", m2.path("job3", "lock"),
                                    "true"]).returncode
            assert other == 1, "the other host took a held lock"
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other = subprocess.run(["flock", "-n", m2.path("job3", "lock"),
                                "true"]).returncode
        assert other == 1, "the descriptor opened before took no real lock"
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
