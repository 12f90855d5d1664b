"""Who may take locks: file owner and mode from -o uid=,gid=,umask= with
allow_other and default_permissions; who may touch the lock nodes:
ZooKeeper digest authentication (-o auth_file=)."""
import os
import subprocess
import sys

from kazoo.exceptions import NoAuthError

from harness import Locker, Mounts, kazoo_client, lock_nodes

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
