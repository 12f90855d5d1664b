"""Who may take locks: file owner and mode from -o uid=,gid=,umask= with
allow_other and default_permissions."""
import os
import subprocess
import sys

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
