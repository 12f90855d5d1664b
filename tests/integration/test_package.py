"""The Debian package, as doc/operations.md builds and installs it: built from a
clean copy of the tree with dpkg-buildpackage, lintian-clean at the error
level, installed with `apt install` into a clean Debian 12 root made here
with debootstrap (so its Depends must bring everything it needs), then
mounted there with `mount -t fuse.zklockfs`, a lock taken, and unmounted;
then mounted again from an fstab line.

The clean root shares this machine's network (its ZooKeeper on loopback)
and gets its own /dev/fuse; it downloads its packages from this machine's
Debian mirror."""
import glob
import os
import re
import shutil
import subprocess

import pytest

from harness import wait_until
from tls import tls_zookeeper
from readme import (clean_copy, doc_block, processes_mentioning,
                    tree_files_by_walk)
from test_readme import bash

BUILD = "dpkg-buildpackage -b -us -uc           # in the source tree: makes ../zklockfs_<version>_<arch>.deb"

# The package is built from the sources, not from this build.
pytestmark = pytest.mark.plain


def debian_mirror():
    """The Debian archive this machine's apt uses."""
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(path) as f:
            text = f.read()
        for stanza in text.split("\n\n"):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            if uris and re.search(r"^Suites:.*\bbookworm\b", stanza, re.M):
                return uris.group(1)
    with open("/etc/apt/sources.list") as f:
        for line in f:
            m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+bookworm\s", line)
            if m:
                return m.group(1)
    raise AssertionError("no bookworm mirror in this machine's apt sources")


def run(argv, timeout=600, **kw):
    res = subprocess.run(argv, capture_output=True, text=True,
                         timeout=timeout, **kw)
    assert res.returncode == 0, \
        f"{' '.join(map(str, argv))}: status {res.returncode}\n" \
        f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res.stdout


def every_file(tree):
    """Every file under tree, ignored or not, as a path from its top."""
    return sorted(os.path.relpath(os.path.join(d, n), tree)
                  for d, _, names in os.walk(tree) for n in names)


def in_root(root, script, timeout=300):
    return run(["chroot", str(root), "sh", "-ec", script], timeout=timeout,
               env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                    "DEBIAN_FRONTEND": "noninteractive", "LANG": "C"})


@pytest.fixture
def tls_server():
    with tls_zookeeper() as (server, pki):
        yield server, pki


def test_the_package_builds_installs_in_a_clean_root_and_mounts(
        tmp_path, zookeeper, zk, base, tls_server):
    build, install = doc_block(BUILD).text.splitlines()
    src = clean_copy(str(tmp_path / "src"))
    copied = every_file(src)
    res = bash(build, src, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    debs = glob.glob(str(tmp_path / "zklockfs_*.deb"))
    assert len(debs) == 1, os.listdir(tmp_path)
    # What doc/operations.md says the build leaves: beside the tree, the
    # package with its .buildinfo and .changes, and the -dbgsym package;
    # in it, only what .gitignore names, and `debian/rules clean` takes
    # obj-<arch>/ and debian/'s away.
    beside = sorted(re.sub(r"_[^_]+_[^_.]+\.", "_V_A.", n)
                    for n in os.listdir(tmp_path) if n != "src")
    assert beside == ["zklockfs-dbgsym_V_A.deb", "zklockfs_V_A.buildinfo",
                      "zklockfs_V_A.changes", "zklockfs_V_A.deb"], beside
    assert tree_files_by_walk(src) == copied, \
        f"left in the tree, not ignored: {set(tree_files_by_walk(src)) ^ set(copied)}"
    assert glob.glob(os.path.join(src, "obj-*")), "no obj-<arch>/ to clean"
    run(["debian/rules", "clean"], cwd=src)
    left = [f for f in every_file(src) if f not in copied
            and not f.startswith("subprojects/")]
    assert not left, f"debian/rules clean left {left}"
    with open(os.path.join(src, "meson.build")) as f:
        version = re.search(r"version : '([^']+)'", f.read()).group(1)
    assert os.path.basename(debs[0]).startswith(f"zklockfs_{version}_"), \
        f"debian/changelog's version is not meson.build's {version}"
    lint = subprocess.run(["lintian", "--fail-on", "error", debs[0]],
                          capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    contents = run(["dpkg-deb", "--contents", debs[0]])
    for path in ("./usr/sbin/zklockfs", "./usr/share/man/man8/zklockfs.8.gz",
                 "./lib/systemd/system/zklockfs@.service"):
        assert path in contents, f"{path} not in the package:\n{contents}"

    root = tmp_path / "root"
    run(["debootstrap", "--variant=minbase", "bookworm", str(root),
         debian_mirror()], timeout=900)
    os.makedirs(root / "build" / "src")
    # The package speaks TLS: a mount from fstab over it, with its files
    # where an operator would keep them (doc/operations.md).
    tls, pki = tls_server
    host = pki.issue("packaged", "/O=zklockfs/CN=packaged")
    os.makedirs(root / "etc" / "zklockfs" / "tls")
    for name, src_file in (("ca.pem", host.ca), ("host.crt", host.cert),
                           ("host.key", host.key)):
        shutil.copy(src_file, root / "etc" / "zklockfs" / "tls" / name)
    tls_options = ("tls_ca=/etc/zklockfs/tls/ca.pem,"
                   "tls_cert=/etc/zklockfs/tls/host.crt,"
                   "tls_key=/etc/zklockfs/tls/host.key")
    shutil.copy(debs[0], root / "build")
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    fuse = os.stat("/dev/fuse").st_rdev
    os.mknod(root / "dev" / "fuse", 0o20666, fuse)
    os.chmod(root / "dev" / "fuse", 0o666)
    try:
        run(["mount", "-t", "proc", "proc", str(root / "proc")])
        in_root(root, "apt-get update -qq")
        in_root(root, f"cd /build/src && {install}", timeout=600)
        connect = f"{zookeeper.connect}{base}"
        out = in_root(root, f"""
            mkdir -p /mnt/zklock
            mount -t fuse.zklockfs -o session_timeout=4 {connect} /mnt/zklock
            grep -q ' /mnt/zklock fuse.zklockfs ' /proc/self/mounts
            exec 9<>/mnt/zklock/demo/write
            cut -d' ' -f1,2 /mnt/zklock/demo/holders
            exec 9>&-
            umount /mnt/zklock
            mkdir -p /mnt/fstab
            echo '{connect} /mnt/fstab fuse.zklockfs noauto,session_timeout=4 0 0' >>/etc/fstab
            mount /mnt/fstab
            grep '^state ' /mnt/fstab/.status
            umount /mnt/fstab
            zklockfs --version | grep -o 'with TLS'
            mkdir -p /mnt/tls
            echo '{tls.connect}{base} /mnt/tls fuse.zklockfs noauto,session_timeout=4,{tls_options} 0 0' >>/etc/fstab
            mount /mnt/tls
            grep '^state ' /mnt/tls/.status
            umount /mnt/tls
        """)
        assert out == "held write\nstate connected\nwith TLS\n" \
            "state connected\n", out
        wait_until(lambda: not processes_mentioning(connect), 15,
                   "the installed daemon exits at umount")
        # Removed, the package names the fstab lines left (it changes
        # nothing there), which fail as doc/operations.md says.
        out = in_root(root, "apt-get purge -y zklockfs 2>&1; "
                      "mount /mnt/fstab 2>&1 || echo mount failed")
        for line in ("still mounts fuse.zklockfs", " /mnt/fstab fuse.zklockfs ",
                     " /mnt/tls fuse.zklockfs ", "zklockfs: not found",
                     "mount failed"):
            assert line in out, f"{line!r} not in:\n{out}"
        assert in_root(root, "grep -c fuse.zklockfs /etc/fstab") == "2\n"
    finally:
        for path in (root / "mnt" / "zklock", root / "mnt" / "fstab",
                     root / "mnt" / "tls", root / "proc"):
            if os.path.ismount(path):
                subprocess.run(["umount", "-l", str(path)])
    # Never remove a tree something is still mounted in.
    assert not any(os.path.ismount(p) for p in (
        root / "proc", root / "mnt" / "zklock", root / "mnt" / "fstab",
        root / "mnt" / "tls"))
    shutil.rmtree(root)
