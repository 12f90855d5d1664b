"""Who may take locks: file owner and mode from -o uid=,gid=,umask= with
allow_other and default_permissions; who may touch the lock nodes:
ZooKeeper digest authentication (-o auth_file=)."""
import os
import subprocess
import sys

import pytest

from kazoo.exceptions import NoAuthError
from kazoo.security import make_digest_acl

from harness import Locker, Mounts, kazoo_client, lock_nodes, status

OUTSIDER = 65534  # nobody
GROUP = 100       # users


def open_as(path, groups):
    """Open path for writing as uid/gid 65534 with these supplementary
    groups; returns "ok" or the errno name."""
    code = ("import errno, os, sys\n"
            "try:\n"
            "    os.close(os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK))\n"
            "    print('ok')\n"
            "except OSError as e:\n"
            "    print(errno.errorcode[e.errno])\n")
    grp = ["--groups", ",".join(map(str, groups))] if groups else ["--clear-groups"]
    out = subprocess.run(["setpriv", f"--reuid={OUTSIDER}", f"--regid={OUTSIDER}", *grp,
                          sys.executable, "-c", code, path],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_only_the_chosen_group_may_take_locks(mounts):
    m = mounts.new("-o", f"allow_other,default_permissions,gid={GROUP},umask=007")

    st = os.stat(m.path("r", "write"))
    assert (st.st_mode & 0o777, st.st_gid) == (0o660, GROUP)
    assert os.stat(m.path("r")).st_mode & 0o777 == 0o770
    assert open_as(m.path("r", "write"), []) == "EACCES"
    assert open_as(m.path("r", "write"), [GROUP]) == "ok"


def test_access_answers_as_the_daemon_decides_not_as_the_modes(mounts):
    """Without default_permissions the daemon checks opens itself, and
    umask= only shows in ls -l: access(2) and chdir answer as an open and
    the daemon do, for a user outside the modes."""
    m = mounts.new("-o", "allow_other,umask=077")
    assert os.stat(m.path("r", "write")).st_mode & 0o777 == 0o600
    code = ("import os, sys\n"
            "d = sys.argv[1]\n"
            "print(os.access(d + '/write', os.W_OK), end=' ')\n"
            "os.chdir(d)\n"
            "os.close(os.open('write', os.O_WRONLY | os.O_NONBLOCK))\n"
            "print('opened')\n")
    out = subprocess.run(["setpriv", f"--reuid={OUTSIDER}",
                          f"--regid={OUTSIDER}", "--clear-groups",
                          sys.executable, "-c", code, m.path("r")],
                         capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout.split()) == (0, ["True", "opened"]), out


AS_OUTSIDER = r"""
import errno, os, sys
def attempt(what, fn):
    try:
        fn()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
mnt, handed = sys.argv[1], int(sys.argv[2])
attempt("open-limit", lambda: os.close(os.open(mnt + "/r/limit", os.O_WRONLY)))
attempt("open-maxhold", lambda: os.close(os.open(mnt + "/r/maxhold", os.O_WRONLY)))
attempt("read-limit", lambda: os.close(os.open(mnt + "/r/limit", os.O_RDONLY)))
attempt("write-handed", lambda: os.write(handed, b"7\n"))
attempt("rmdir", lambda: os.rmdir(mnt + "/idle"))
for f, m in (("limit", os.W_OK), ("limit", os.R_OK), ("revoke", os.W_OK),
             ("revoke", os.R_OK), ("write", os.W_OK), ("write", os.R_OK),
             ("holders", os.W_OK), ("", os.X_OK)):
    print(f"access-{f or 'dir'}-{'w' if m == os.W_OK else 'r' if m == os.R_OK else 'x'}",
          "yes" if os.access(mnt + "/r/" + f, m) else "no")
"""


@pytest.mark.parametrize("checked_by", ["daemon", "kernel"])
def test_only_root_or_the_owner_may_change_a_resource(zk, base, mounts,
                                                      checked_by):
    """One rule for what every host sees change, told where the user can
    see it: the modes, access(2) (test -w), EACCES at open and rmdir,
    EPERM through a descriptor the owner handed on, and the log names who
    tried."""
    opts = "allow_other" + (",default_permissions"
                            if checked_by == "kernel" else "")
    m = mounts.new("-o", opts)
    modes = {f: os.stat(m.path("r", f)).st_mode & 0o777
             for f in ("limit", "maxhold", "revoke", "write")}
    assert modes == {"limit": 0o644, "maxhold": 0o644, "revoke": 0o200,
                     "write": 0o666}, modes
    zk.create(f"{base}/idle", b"")  # a resource (persistent: not reaped)
    handed = os.open(m.path("r", "limit"), os.O_WRONLY)  # root's open
    try:
        out = subprocess.run(
            ["setpriv", f"--reuid={OUTSIDER}", f"--regid={OUTSIDER}",
             "--clear-groups", sys.executable, "-c", AS_OUTSIDER,
             m.mountpoint, str(handed)],
            pass_fds=(handed,), capture_output=True, text=True, timeout=30)
    finally:
        os.close(handed)
    assert out.returncode == 0, out.stderr
    said = dict(line.split() for line in out.stdout.splitlines())
    assert said == {"open-limit": "EACCES", "open-maxhold": "EACCES",
                    "read-limit": "ok", "write-handed": "EPERM",
                    "rmdir": "EACCES",
                    "access-limit-w": "no", "access-limit-r": "yes",
                    "access-revoke-w": "no", "access-revoke-r": "no",
                    "access-write-w": "yes", "access-write-r": "yes",
                    "access-holders-w": "no", "access-dir-x": "yes"}, said
    assert open(m.path("r", "limit")).read() == "1\n", "nothing stored"
    assert "(python3, uid 65534) refused to set a limit" in m.log()
    os.rmdir(m.path("idle"))  # root may


REFUSE_MANY = r"""
import os, sys
refused = 0
for _ in range(int(sys.argv[2])):
    try:
        os.close(os.open(sys.argv[1], os.O_WRONLY))
    except PermissionError:
        refused += 1
print(refused)
"""


def test_refusals_are_counted_and_their_log_is_bounded(mounts):
    """Any user may try as often as it likes: every refusal is counted,
    the log gets at most ten a minute and a line that says the rest are
    counted, not logged."""
    m = mounts.new("-o", "allow_other")
    tries = 25
    out = subprocess.run(
        ["setpriv", f"--reuid={OUTSIDER}", f"--regid={OUTSIDER}",
         "--clear-groups", sys.executable, "-c", REFUSE_MANY,
         m.path("r", "limit"), str(tries)],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == [str(tries)], out
    assert status(m)["refusals"] == str(tries)
    logged = m.log().count("refused to set a limit")
    # A minute runs from the first refusal logged: all 25 fall in it.
    assert logged == 10, f"{logged} refusals logged of {tries}"
    assert "counted (.status refusals), not logged" in m.log()


def test_digest_auth_guards_the_nodes(zookeeper, base, tmp_path):
    secret = tmp_path / "zk-secret"
    secret.write_text("locker:s3cret\n")
    secret.chmod(0o644)
    refused = subprocess.run([os.environ["ZKLOCKFS_BIN"], "-f", "-o", f"auth_file={secret}",
                              zookeeper.connect + base, str(tmp_path)],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode != 0 and "readable by every user" in refused.stderr, refused
    secret.chmod(0o600)

    with kazoo_client(zookeeper.connect, [("digest", "locker:s3cret")]) as authed, \
            kazoo_client(zookeeper.connect) as stranger:
        ms = Mounts(zookeeper.connect + base)
        try:
            m1 = ms.new("-o", f"auth_file={secret}")
            m2 = ms.new("-o", f"auth_file={secret}")
            holder = Locker(m1.path("r", "write"))
            holder.granted()
            waiter = Locker(m2.path("r", "write"))  # same identity: same queue
            [node] = lock_nodes(authed, base)[:1]
            try:
                stranger.delete(node)
                raise AssertionError("a client without the credentials deleted a held lock node")
            except NoAuthError:
                pass
            assert authed.exists(node), "the held node is gone"
            holder.close()
            waiter.granted()
            waiter.close()
        finally:
            ms.finish(authed, base)


def secret_file(tmp_path, creds="locker:s3cret"):
    path = tmp_path / f"zk-secret-{creds.split(':')[1]}"
    path.write_text(creds + "\n")
    path.chmod(0o600)
    return path


def start_fails(connect, *options, tmp_path):
    """Run a mount that must not start: its status and message."""
    mnt = tmp_path / "mnt"
    mnt.mkdir(exist_ok=True)
    p = subprocess.Popen([os.environ["ZKLOCKFS_BIN"], "-f", *options, connect,
                          str(mnt)], stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
        raise AssertionError("it started and stayed up")
    assert p.returncode != 0, f"it started: {err}"
    return err


def expect_refused(what, call, *args):
    try:
        call(*args)
    except NoAuthError:
        return
    raise AssertionError(f"a client without the credentials could {what}")


def test_an_anonymous_client_can_touch_nothing_of_the_mounts(zookeeper, base,
                                                             tmp_path):
    secret = secret_file(tmp_path)
    with kazoo_client(zookeeper.connect, [("digest", "locker:s3cret")]) as authed, \
            kazoo_client(zookeeper.connect) as stranger:
        ms = Mounts(zookeeper.connect + base)
        try:
            m = ms.new("-o", f"auth_file={secret}")
            holder = Locker(m.path("r", "write"))
            holder.granted()
            [node] = lock_nodes(authed, base)
            for path in (base, base + "/r", node):
                expect_refused(f"read {path}", stranger.get, path)
                expect_refused(f"list {path}", stranger.get_children, path)
                expect_refused(f"set {path}", stranger.set, path, b"x")
                expect_refused(f"create in {path}", stranger.create,
                               path + "/h1-write-0000000001", b"")
            expect_refused("delete the held node", stranger.delete, node)
            expect_refused("delete the resource", stranger.delete, base + "/r")
            holder.close()
        finally:
            ms.finish(authed, base)


def test_wrong_or_missing_credentials_fail_the_start(zookeeper, base,
                                                     tmp_path):
    with kazoo_client(zookeeper.connect, [("digest", "locker:s3cret")]) as authed:
        # The base, made by the right credentials: theirs alone.
        authed.create(base, b"", acl=[make_digest_acl("locker", "s3cret",
                                                      all=True)])
        try:
            wrong = secret_file(tmp_path, "locker:wrong")
            err = start_fails(zookeeper.connect + base, "-o",
                              f"auth_file={wrong}", tmp_path=tmp_path)
            assert base in err and "no create permission" in err, err
            assert "check the user and password" in err, err
            err = start_fails(zookeeper.connect + base, tmp_path=tmp_path)
            assert base in err and "no create permission" in err, err
            assert "-o auth_file" in err, err
        finally:
            authed.delete(base, recursive=True)


def test_a_base_or_resource_open_to_everyone_is_refused(zookeeper, base,
                                                        tmp_path):
    secret = secret_file(tmp_path)
    with kazoo_client(zookeeper.connect, [("digest", "locker:s3cret")]) as authed:
        # Someone made the base before, open to every client.
        authed.create(base, b"")
        err = start_fails(zookeeper.connect + base, "-o",
                          f"auth_file={secret}", tmp_path=tmp_path)
        assert f"{base} is not the credentials' alone" in err, err
        assert "world:anyone:cdrwa" in err and "setAcl " + base in err, err
        authed.delete(base)

        # A resource made before the mount, open to every client: locks
        # on it are refused, the log says why and how to fix it.
        ms = Mounts(zookeeper.connect + base)
        try:
            m = ms.new("-o", f"auth_file={secret}")
            authed.create(base + "/open", b"")
            try:
                os.open(m.path("open", "write"), os.O_WRONLY)
                raise AssertionError("locked in a resource anyone may change")
            except PermissionError:
                pass
            assert f"{base}/open is not the credentials' alone" in m.log()
            assert "setAcl " + base + "/open digest:locker:" in m.log()
            holder = Locker(m.path("closed", "write"))  # made by the mount
            holder.granted()
            holder.close()
        finally:
            ms.finish(authed, base)


def test_a_peers_lease_directory_open_to_everyone_is_refused(zookeeper, base,
                                                             tmp_path):
    """In Curator's and kazoo's semaphore layouts the leases live outside
    the queue the resource check reads: <res>/leases, or <res> itself."""
    secret = secret_file(tmp_path)
    with kazoo_client(zookeeper.connect, [("digest", "locker:s3cret")]) as authed:
        for dialect, leases in (("curator", "/jobs/leases"), ("kazoo", "/jobs")):
            ms = Mounts(zookeeper.connect + base)
            try:
                m = ms.new("-o", f"auth_file={secret},dialect={dialect}")
                authed.create(base + leases, b"", makepath=True)  # anyone's
                try:
                    os.open(m.path("jobs", "lease"), os.O_WRONLY)
                    raise AssertionError(f"{dialect}: a lease in a directory "
                                         "anyone may change")
                except PermissionError:
                    pass
                assert f"{base}{leases} is not the credentials' alone" in m.log()
            finally:
                ms.finish(authed, base)
            authed.delete(base + "/jobs", recursive=True)
