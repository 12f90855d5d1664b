"""The documentation is code.  The README's first command, contrib/run-local,
is run from a clean copy of the tree as a new user runs it; every other
fenced block of the README and of the documents it links to (readme.DOCS)
is run as written (its mount point, servers and base path replaced by the
test's), or listed in NOT_RUN with the reason it cannot be, and a test
fails when a block is neither.  Every relative link resolves."""
import ast
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import textwrap

import pytest

from harness import (Locker, free_port, is_mounted, lock_nodes,
                     needs_private_mounts, wait_until, zklockfs_binary)
from readme import (DEBIAN_PATH, README, README_ENSEMBLE, README_MOUNT,
                    ROOT, RunLocal, clean_copy, doc_block, doc_blocks,
                    processes_mentioning, tree_files_by_git,
                    tree_files_by_walk)
from test_security import open_as

# Blocks no test can run, by their first line, and why.
NOT_RUN = {
    "contrib/run-local            # install, build, start a local ZooKeeper, mount at /mnt/zklock":
        "the two commands: run-local is run by test_run_local_* below; "
        "run-tests is what CI's .ci/run runs, and cannot run itself",
    "$ cat /mnt/zklock/deploy/holders":
        "sample output: test_the_holders_sample_has_the_shape_holders_prints "
        "compares it with what holders prints",
    "$ cat /mnt/zklock/.status":
        "sample output: test_the_status_sample_has_the_keys_status_prints "
        "compares it with what .status prints",
    "mkdir -p /etc/zklockfs":
        "needs systemd as PID 1; test_operability runs the unit's ExecStart "
        "with such settings",
    "meson.build         one project; -Dtests=true|false":
        "a map of the tree: test_the_trees_map_names_every_source_file "
        "checks it against the files",
}

# run-local builds a plain tree of its own: the plain build's run of the
# suite runs it.
needs_plain = pytest.mark.plain


# The files whose doc_block() calls count, besides this one: tests too
# long to share its module (they build or install things of their own).
OTHER_README_TESTS = ("test_package.py", "test_metrics.py", "test_tls.py")


def blocks_the_tests_run():
    """The first lines this file and OTHER_README_TESTS hand to
    doc_block() or section_commands(), as literals or module constants
    (this module's, or a string assigned at the top of that file)."""
    found = set()
    for name in (os.path.basename(__file__), *OTHER_README_TESTS):
        with open(os.path.join(os.path.dirname(__file__), name)) as f:
            tree = ast.parse(f.read())
        consts = {t.id: node.value.value for node in tree.body
                  if isinstance(node, ast.Assign)
                  and isinstance(node.value, ast.Constant)
                  for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) \
                    and isinstance(node.func, ast.Name) \
                    and node.func.id in ("doc_block", "section_commands"):
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    found.add(arg.value)
                elif isinstance(arg, ast.Name) and arg.id.isupper():
                    found.add(consts.get(arg.id, globals().get(arg.id)))
    for setup, program, _, run in SECTIONS.values():
        found |= {setup, program, run}
    return found


def test_every_block_is_run_or_says_why():
    run, firsts = blocks_the_tests_run(), set()
    for block in doc_blocks():
        firsts.add(block.first)
        assert block.first in run or block.first in NOT_RUN, \
            (f"{block.where}: no test runs the block starting "
             f"{block.first!r}; run it here, or add it to NOT_RUN with why")
    stale = sorted((run | set(NOT_RUN)) - firsts)
    assert not stale, f"blocks the documents no longer have: {stale}"


def anchors_of(path):
    """The anchors a Markdown file's headings make, as GitHub makes them:
    lower case, punctuation dropped, spaces made hyphens, repeats
    numbered."""
    found, seen, fence = set(), {}, False
    with open(path) as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#+ (.*)", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            slug = slug.replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def test_every_relative_link_of_the_documents_resolves():
    from readme import DOCS, ROOT
    broken = []
    for doc in (*DOCS, "doc/design.md"):
        text = open(os.path.join(ROOT, doc)).read()
        text = re.sub(r"(?ms)^```.*?^```", "", text)  # code is no link
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # http:, mailto:: not ours to check offline
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(
                ROOT, os.path.dirname(doc), path)) if path else \
                os.path.join(ROOT, doc)
            if not os.path.exists(full):
                broken.append(f"{doc}: {target} (no such file)")
            elif anchor and full.endswith(".md") and \
                    anchor not in anchors_of(full):
                broken.append(f"{doc}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


# ---- helpers -------------------------------------------------------------

def as_test(text, mount=None, connect=None, port=None):
    """A block with the documents' mount point, ensemble (and base path) and
    local port replaced by the test's."""
    if mount:
        text = text.replace(README_MOUNT, mount)
    if connect:
        text = text.replace(README_ENSEMBLE + "/locks", connect)
    if port:
        text = text.replace("127.0.0.1:2181", f"127.0.0.1:{port}")
    return text


def stub(directory, name, other_mount, resource):
    """An executable ./name that records, in ran.log, that it ran and the
    first holder of resource as the other mount (another host) sees it."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(f"""\
            #!/bin/sh
            set -e
            held=$(head -n 1 {shlex.quote(other_mount.path(resource, 'holders'))} | cut -d ' ' -f 1,2)
            echo "{name} $held" >> ran.log
            """))
    os.chmod(path, 0o755)


def ran(directory):
    try:
        with open(os.path.join(directory, "ran.log")) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def bash(script, cwd, timeout=60, shell="bash"):
    return subprocess.run([shell, "-c", script], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout,
                          env=dict(os.environ, PATH=DEBIAN_PATH))


# ---- the examples on a mount ----------------------------------------------

HEADLINE = "exec 9<>/mnt/zklock/deploy/write || exit 1  # blocks until the exclusive lock is held"


def test_the_headline_example_holds_the_lock_while_its_command_runs(
        tmp_path, m1, m2):
    stub(tmp_path, "deploy.sh", m2, "deploy")
    block = doc_block(HEADLINE)
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["deploy.sh held write"]
    # exec 9>&- released it: seen from the other host a moment later.
    wait_until(lambda: open(m2.path("deploy", "holders")).read() == "", 10,
               "the release seen from the other mount")


@pytest.mark.parametrize("shell", ["bash", "dash"])
def test_the_headline_example_does_not_run_its_command_without_the_lock(
        tmp_path, shell):
    """Nothing mounted there: the open fails, and deploy.sh must not run.
    Without the `|| exit 1` bash would run it (the control)."""
    deploy = tmp_path / "deploy.sh"
    deploy.write_text("#!/bin/sh\necho deploy.sh >> ran.log\n")
    deploy.chmod(0o755)
    unmounted = str(tmp_path / "not-mounted")
    os.mkdir(unmounted)
    text = as_test(doc_block(HEADLINE).text, unmounted)
    res = bash(text, tmp_path, shell=shell)
    assert res.returncode != 0 and ran(tmp_path) == [], (res, ran(tmp_path))
    if shell == "bash":
        res = bash(text.replace(" || exit 1", "", 1), tmp_path)
        assert ran(tmp_path) == ["deploy.sh"], \
            "the control: without || exit 1 bash was expected to go on"


@pytest.mark.concurrency
def test_the_flock_idioms_lock_on_every_host(tmp_path, m1, m2):
    block = doc_block("# cron: run on one host at a time; skip this run if another host is at it")
    for name, res in (("nightly-report.sh", "nightly-report"),
                      ("deploy.sh", "deploy"), ("migrate.sh", "db-migrate"),
                      ("backup.sh", "db")):
        stub(tmp_path, name, m2, res)
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["nightly-report.sh held write",
                             "deploy.sh held write", "migrate.sh held write",
                             "backup.sh held read"]
    # While another host runs the report, `flock -n` skips it.
    (tmp_path / "ran.log").unlink()
    other = Locker(m2.path("nightly-report", "write"))
    other.granted()
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    other.close()
    assert "nightly-report.sh held write" not in ran(tmp_path), ran(tmp_path)
    assert ran(tmp_path)[0] == "deploy.sh held write", ran(tmp_path)


@pytest.mark.concurrency
def test_the_explicit_unlock_example(tmp_path, m1, m2):
    block = doc_block("exec 9>/mnt/zklock/deploy/write || exit 1")
    stub(tmp_path, "deploy.sh", m2, "deploy")
    # After `flock -u 9`, the other host can take the lock at once.
    script = as_test(block.text, m1.mountpoint).replace(
        "exec 9>&-", f"flock -n {shlex.quote(m2.path('deploy', 'lock'))} "
        "echo free-at-once\nexec 9>&-")
    res = bash(script, tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["deploy.sh held write"]
    assert res.stdout.split() == ["free-at-once"]


@pytest.mark.concurrency
def test_the_reentrant_example_lets_the_inner_flock_in(tmp_path, mounts,
                                                       m2):
    rm = mounts.new("-o", "reentrant")
    block = doc_block("exec 9>/mnt/zklock/db/write || exit 1      # the mount has -o reentrant")
    path = os.path.join(tmp_path, "migrate.sh")
    with open(path, "w") as f:
        f.write(textwrap.dedent(f"""\
            #!/bin/sh
            flock -w 10 {shlex.quote(rm.path('db', 'lock'))} \\
                sh -c 'echo "migrate.sh $(head -n 1 {shlex.quote(m2.path('db', 'holders'))} | cut -d " " -f 1,2)" >> ran.log'
            """))
    os.chmod(path, 0o755)
    res = bash(as_test(block.text, rm.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["migrate.sh held write"], \
        "the inner flock took the script's lock at once"
    wait_until(lambda: open(m2.path("db", "holders")).read() == "", 10,
               "the release seen from the other mount")


@pytest.mark.concurrency
def test_the_revoke_example_asks_then_breaks(tmp_path, zk, base, m1, m2):
    holder = Locker(m2.path("db", "write"), "rw")
    holder.granted()
    node, = lock_nodes(zk, f"{base}/db")
    lines = doc_block("echo ask > /mnt/zklock/db/revoke     # every holder of db, on every host, of any tool, is asked").text.splitlines()
    res = bash(as_test(lines[0], m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert zk.get(node)[0] == b"__REVOKE__"
    assert holder.command("read").split("|")[0].isdigit(), "still held"
    res = bash(as_test(lines[1], m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert not zk.exists(node)
    # The ask replaced the holder's identity in its node, so the break
    # deleted it at once (no mount's node to tell first): the holder's
    # mount hears of it by its own watch, a moment later.
    wait_until(lambda: holder.command("read") == "err EIO", 5,
               "the holder told its lock is lost")
    holder.close()


def test_the_maxhold_example_sets_reads_and_removes(tmp_path, zk, base, m1,
                                                    m2):
    lines = doc_block("echo 60 > /mnt/zklock/db/maxhold     # root or the mount's owner, on any host").text.splitlines()
    res = bash(as_test(lines[0], m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert open(m2.path("db", "maxhold")).read() == "60\n", "every host"
    res = bash(as_test(lines[1], m2.mountpoint), tmp_path)
    assert res.returncode == 0 and res.stdout == "60\n", res
    res = bash(as_test(lines[2], m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert open(m2.path("db", "maxhold")).read() == "0\n"
    assert not zk.exists(f"{base}/.maxhold"), "nothing left in ZooKeeper"


def test_the_semaphore_example(tmp_path, m1, m2):
    block = doc_block("echo 3 > /mnt/zklock/jobs/limit                        # once, on any host")
    stub(tmp_path, "job.sh", m2, "jobs")
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["job.sh held lease"] * 3
    assert "busy" not in res.stdout
    assert open(m2.path("jobs", "limit")).read().strip() == "3"


def test_the_holders_and_status_example_shows_a_holder_of_another_host(
        tmp_path, m1, m2):
    block = doc_block("cat /mnt/zklock/deploy/holders   # everyone holding or waiting for deploy, on every host")
    holder = Locker(m2.path("deploy", "write"))
    holder.granted()
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    holder.close()
    assert res.returncode == 0, res.stderr
    holders, status = res.stdout.split("state ", 1)
    assert holders.startswith("held write "), res.stdout
    assert status.startswith("connected\n"), res.stdout


def test_the_undo_example_removes_what_it_says(tmp_path):
    """Run in a tree of its own, with the state directory the test's."""
    block = doc_block("rm -rf /var/lib/zklockfs-local            # run-local's ZooKeeper data and log")
    state = tmp_path / "state"
    (state / "data").mkdir(parents=True)
    (state / "server.log").write_text("log\n")
    tree = tmp_path / "tree"
    for d in ("build", "build-asan", "build-tsan", "fs"):
        (tree / d).mkdir(parents=True)
    res = bash(block.text.replace("/var/lib/zklockfs-local", str(state)), tree)
    assert res.returncode == 0, res.stderr
    assert not state.exists()
    assert sorted(os.listdir(tree)) == ["fs"], "it removes the builds only"


def test_the_several_resources_example_holds_both(tmp_path, m1, m2):
    block = doc_block("exec 9<>/mnt/zklock/.all/db,cache/write || exit 1  # waits until it holds both")
    stub(tmp_path, "deploy.sh", m2, "cache")
    stub(tmp_path, "reindex.sh", m2, "db")
    res = bash(as_test(block.text, m1.mountpoint), tmp_path)
    assert res.returncode == 0, res.stderr
    assert ran(tmp_path) == ["deploy.sh held write", "reindex.sh held write"]
    assert "busy" not in res.stdout
    # While another host holds the cache, the try skips reindex.sh.
    (tmp_path / "ran.log").unlink()
    other = Locker(m2.path("cache", "write"))
    other.granted()
    res = bash(as_test(block.text, m1.mountpoint).split("\n", 3)[3],
               tmp_path)
    other.close()
    assert ran(tmp_path) == [] and "busy" in res.stdout, (res, ran(tmp_path))


@pytest.fixture
def helper_env(tmp_path, zookeeper, base):
    """Our build where mount.fuse3 looks for `zklockfs` (its shell's
    default PATH) and on the PATH, in a mount namespace of the test's."""
    bindir = tmp_path / "sbin"
    bindir.mkdir()
    os.symlink(zklockfs_binary(), bindir / "zklockfs")
    mnt = tempfile.mkdtemp(prefix="zklockfs-readme-")
    yield dict(os.environ, BINDIR=str(bindir), MNT=mnt,
               PATH=f"{bindir}:{os.environ['PATH']}"), mnt
    if is_mounted(mnt):
        subprocess.run(["fusermount3", "-u", "-z", mnt], check=False)
    os.rmdir(mnt)


def in_namespace(script, env, timeout=120):
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "bash", "-c",
         'set -eu\nmount --bind "$BINDIR" /usr/local/sbin\n' + script],
        env=env, capture_output=True, text=True, timeout=timeout)


MOUNTED = 'grep -q " $MNT fuse.zklockfs " /proc/self/mounts && echo mounted\n'


@needs_private_mounts
def test_the_mount_8_example(zookeeper, zk, base, helper_env):
    env, mnt = helper_env
    block = doc_block("mkdir -p /mnt/zklock")
    mkdir_line, mount_line, umount_line = as_test(
        block.text, mnt, zookeeper.connect + base).splitlines()
    os.rmdir(mnt)  # the block makes it
    r = in_namespace(f"{mkdir_line}\n{mount_line}\n{MOUNTED}{umount_line}\n"
                     'grep -q " $MNT " /proc/self/mounts || echo unmounted\n', env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["mounted", "unmounted"]
    assert zk.exists(base) is not None


@needs_private_mounts
def test_the_fstab_line(zookeeper, zk, base, helper_env, tmp_path):
    env, mnt = helper_env
    block = doc_block("zk1:2181,zk2:2181,zk3:2181/locks  /mnt/zklock  fuse.zklockfs  _netdev,nofail,allow_other,session_timeout=10  0 0")
    fstab = tmp_path / "fstab"
    fstab.write_text(as_test(block.text, mnt, zookeeper.connect + base))
    r = in_namespace(f'mount -T {fstab} "$MNT"\n{MOUNTED}'
                     'grep "^state " "$MNT/.status"\numount "$MNT"\n', env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["mounted", "state", "connected"]


def test_the_ensemble_example_mounts_and_detaches(zookeeper, zk, base,
                                                  helper_env):
    env, mnt = helper_env
    block = doc_block("zklockfs -o allow_other zk1:2181,zk2:2181,zk3:2181/locks /mnt/zklock")
    r = subprocess.run(["bash", "-c", as_test(block.text, mnt,
                                              zookeeper.connect + base)],
                       env=env, capture_output=True, text=True, timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        assert is_mounted(mnt), "zklockfs returned before mounting"
        fd = os.open(os.path.join(mnt, "r", "write"), os.O_RDWR)
        try:
            held = os.read(fd, 4096).decode()
        finally:
            os.close(fd)
        assert f"\nnode {base}/r/" in held, held
    finally:
        subprocess.run(["umount", mnt], check=False)
    wait_until(lambda: not lock_nodes(zk, base), 15, "the lock nodes to go")


def test_the_group_example_lets_only_that_group_lock(zookeeper, base,
                                                     helper_env):
    env, mnt = helper_env
    block = doc_block("zklockfs -o allow_other,default_permissions,gid=$(getent group deploy | cut -d: -f3),umask=007 \\")
    # The group `users` (gid 100) stands for `deploy`.
    text = as_test(block.text, mnt, zookeeper.connect + base).replace(
        "getent group deploy", "getent group users")
    r = subprocess.run(["bash", "-c", text], env=env, capture_output=True,
                       text=True, timeout=60)
    try:
        assert r.returncode == 0, r.stderr
        path = os.path.join(mnt, "r", "write")
        assert open_as(path, []) == "EACCES"
        assert open_as(path, [100]) == "ok"
    finally:
        subprocess.run(["umount", mnt], check=False)


# ---- samples and maps ----------------------------------------------------

HOLDERS_LINE = re.compile(r"^(held|waiting) (read|write|lease) \d+ \S+ \S+ \S+ "
                          r"\S+ \d+s \S+ (zklockfs|curator|kazoo|zookeeper)"
                          r"(:\S+)? .+$")


def test_the_holders_sample_has_the_shape_holders_prints(m1, m2):
    sample = doc_block("$ cat /mnt/zklock/deploy/holders").text.splitlines()[1:]
    assert sample and all(HOLDERS_LINE.match(line) for line in sample), sample
    holder = Locker(m1.path("deploy", "write"), "w")
    holder.granted()
    assert holder.command("note migrating schema v42") == "ok"
    waiter = Locker(m2.path("deploy", "read"), "r")
    wait_until(lambda: len(open(m2.path("deploy", "holders")).readlines()) == 2,
               10, "the reader to queue")
    lines = open(m2.path("deploy", "holders")).read().splitlines()
    assert all(HOLDERS_LINE.match(line) for line in lines), lines
    holder.close()
    waiter.granted()
    waiter.close()


def test_the_status_sample_has_the_keys_status_prints(m1):
    sample = doc_block("$ cat /mnt/zklock/.status").text.splitlines()[1:]
    printed = open(m1.path(".status")).read().splitlines()
    assert [line.split()[0] for line in sample] == \
        [line.split()[0] for line in printed]


def test_every_example_ensemble_has_three_servers():
    """doc/operations.md runs an ensemble of 3 or 5; every example that
    names several servers names three, as the documents' do
    (README_ENSEMBLE), in the manual page and the installed examples too."""
    from readme import DOCS
    several = re.compile(r"zk1[\w.]*:\d+(?:,zk\d[\w.]*:\d+)+")
    wrong = []
    for rel in (*DOCS, "doc/zklockfs.8.scd", "contrib/fstab.example",
                "contrib/systemd/zklockfs.conf.example"):
        with open(os.path.join(ROOT, rel)) as f:
            for number, line in enumerate(f, 1):
                wrong += [f"{rel}:{number}: {m}" for m in several.findall(line)
                          if m.count(",") != 2]
    assert README_ENSEMBLE.count(",") == 2
    assert not wrong, "not three servers:\n" + "\n".join(wrong)


def install_deps_lists():
    """contrib/install-deps' lists of packages, by name (build, server,
    tests, bench)."""
    with open(os.path.join(ROOT, "contrib", "install-deps")) as f:
        text = f.read().replace("\\\n", "")
    return {name: value.split()
            for name, value in re.findall(r'^(\w+)="([^"$]*)"$', text, re.M)}


def apt_would_install(status, packages):
    """What `apt-get install --no-install-recommends packages` would
    install over the dpkg status file status, as name=version: apt's
    simulation, from this machine's package lists (nothing downloaded)."""
    r = subprocess.run(["apt-get", "-s", "-o", f"Dir::State::status={status}",
                        "install", "--no-install-recommends", *packages],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    return [f"{name}={version}" for name, version in
            re.findall(r"^Inst (\S+) (?:\[\S+\] )?\((\S+)", r.stdout, re.M)]


def with_installed(status, versions):
    """status (a dpkg status file) with versions (name=version) marked
    installed, their records from apt's lists."""
    shown = subprocess.run(["apt-cache", "show", *versions], capture_output=True,
                           text=True, timeout=300, check=True).stdout
    records, seen = [], set()
    for record in shown.strip().split("\n\n"):
        name = re.match(r"Package: (\S+)", record).group(1)
        if name not in seen:
            seen.add(name)
            first, rest = record.split("\n", 1)
            records.append(f"{first}\nStatus: install ok installed\n{rest}\n")
    with open(status, "a") as f:
        f.write("\n".join(records) + "\n")
    return status


def test_the_readmes_package_counts_are_what_apt_installs(tmp_path):
    """The README's "about N packages" of run-local and of run-tests, on a
    minimal Debian 12 as debootstrap --variant=minbase makes it (the
    packages of priority required, and apt, with what they depend on),
    within a twentieth of what apt would install there today."""
    text = " ".join(open(README).read().split())
    said = [int(n) for n in re.findall(
        r"about (\d+) packages (?:with their dependencies|more)", text)]
    assert len(said) == 2, f"the README's package counts: {said}"
    required = re.findall(r"^Package: (\S+)\n(?:.+\n)*?Priority: required$",
                          subprocess.run(["apt-cache", "dumpavail"],
                                         capture_output=True, text=True,
                                         check=True).stdout, re.M)
    empty = tmp_path / "empty"
    empty.write_text("")
    minbase = apt_would_install(empty, [*sorted(set(required)), "apt"])
    assert len(minbase) > 50, minbase
    status = with_installed(tmp_path / "minbase", minbase)
    lists = install_deps_lists()
    run_local = apt_would_install(status, lists["build"] + lists["server"])
    status = with_installed(status, run_local)
    run_tests = apt_would_install(status, lists["tests"])
    for n, counted, what in ((said[0], len(run_local), "run-local"),
                             (said[1], len(run_tests), "run-tests adds")):
        assert abs(n - counted) <= counted / 20, \
            f"README: about {n} packages; {what} {counted} on a minimal Debian 12"


def test_the_trees_map_names_every_source_file():
    from readme import ROOT
    text = doc_block("meson.build         one project; -Dtests=true|false").text
    named = set(re.findall(r"[\w.-]+\.[ch]\b|[\w]+\.h\b", text))
    for part in re.findall(r"([\w]+)\.\[ch\]", text):
        named |= {part + ".c", part + ".h"}
    missing = []
    for directory in ("fs", "recipes"):
        for name in sorted(os.listdir(os.path.join(ROOT, directory))):
            if name.endswith((".c", ".h")) and name not in named:
                missing.append(f"{directory}/{name}")
    assert not missing, f"HACKING.md's tree does not name {missing}"


# ---- the tree the tests copy, with git or without ------------------------

# What builds leave in the tree, which a copy leaves out, and files that
# only look like it, which it keeps.
BUILD_LEFTOVERS = (
    "build/fs/zklockfs", "build-asan/x", "tests/__pycache__/a.pyc",
    "subprojects/packagecache/zookeeper.tar.gz",
    "subprojects/apache-zookeeper-3.8.0/README",
    # dpkg-buildpackage's (doc/operations.md)
    "debian/.debhelper/generated/zklockfs/installed-by-dh_install",
    "debian/files", "debian/zklockfs/usr/sbin/zklockfs",
    "debian/zklockfs.substvars", "debian/zklockfs.debhelper.log",
    "debian/debhelper-build-stamp", "obj-x86_64-linux-gnu/build.ninja")
LOOK_ALIKES = ("debian/source/notes.log", "doc/obj-x/notes",
               "doc/build/notes", "debian/zklockfs.files")


def test_the_tree_is_copied_alike_with_or_without_git(tmp_path):
    """The tests that copy the tree (the README's commands, the package)
    work from a release tarball or a git archive, which has no .git, and on
    a machine without git: the files are then found by walking the tree
    and reading .gitignore, and they are the files git would list."""
    copy = clean_copy(str(tmp_path / "copy"))
    assert not os.path.exists(os.path.join(copy, ".git"))
    for rel in BUILD_LEFTOVERS + LOOK_ALIKES:
        os.makedirs(os.path.dirname(os.path.join(copy, rel)), exist_ok=True)
        open(os.path.join(copy, rel), "w").close()
    # A link to a directory is one file to git, never followed.
    os.symlink("../contrib", os.path.join(copy, "doc", "linked"))
    walked = tree_files_by_walk(copy)
    assert "README.md" in walked and "fs/main.c" in walked, walked[:20]
    assert "doc/linked" in walked and not any(
        rel.startswith("doc/linked/") for rel in walked), \
        [rel for rel in walked if rel.startswith("doc/linked")]
    # Where git cannot read the tree (here: no repository; as root, one
    # another user owns), clean_copy walks it instead.
    assert tree_files_by_git(copy) is None
    assert not set(BUILD_LEFTOVERS) & set(walked), \
        f"copied: {sorted(set(BUILD_LEFTOVERS) & set(walked))}"
    assert set(LOOK_ALIKES) <= set(walked), \
        f"left out: {sorted(set(LOOK_ALIKES) - set(walked))}"
    if shutil.which("git") and os.path.exists(os.path.join(ROOT, ".git")):
        ours = sorted(set(walked) - set(LOOK_ALIKES) - {"doc/linked"})
        assert ours == tree_files_by_git(), set(ours) ^ set(tree_files_by_git())
        # git itself reads .gitignore as the walk does.
        for rel in BUILD_LEFTOVERS + LOOK_ALIKES:
            r = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q",
                                "--no-index", rel])
            assert r.returncode == (0 if rel in BUILD_LEFTOVERS else 1), \
                f"git check-ignore {rel}: status {r.returncode}"


# ---- the README's first command, and the sections that use it ------------

@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A clean copy of the tree, shared by the run-local tests in the order
    a user follows the README: run-local first, then run-tests' builds."""
    return clean_copy(str(tmp_path_factory.mktemp("clone")))


@pytest.fixture
def run_local(tree, tmp_path):
    """Start contrib/run-local ARGS... from the clean tree, on a free port,
    with a state directory and mount point of the test's (in a directory
    every user may pass through, as /mnt is); stopped and checked for
    leftovers at the end."""
    started = []
    parent = tempfile.mkdtemp(prefix="zklockfs-rl-")
    os.chmod(parent, 0o755)

    def start(*args):
        r = RunLocal(tree, [os.path.join(parent, "mnt"), *args], free_port(),
                     str(tmp_path / "state"))
        started.append(r)
        return r.wait_ready()

    yield start
    for r in started:
        r.kill()
    os.rmdir(parent)


def stop_and_check(r):
    status = r.interrupt()
    said = r.said()
    assert status == 130, f"run-local exit status {status} after Ctrl-C:\n{said}"
    assert "run-local: stopping the local ZooKeeper" in said, said
    assert r.leftovers() == [], said


FIRST_LOCK = "exec 9<>/mnt/zklock/demo/write     # blocks until the exclusive lock is held"


@needs_plain
def test_run_local_mounts_runs_its_own_example_and_leaves_nothing(run_local):
    r = run_local()
    said = r.said()
    for needed in (f"127.0.0.1:{r.port}", "ZKLOCKFS_PORT", r.state,
                   "ZKLOCKFS_STATE", "installing", "building"):
        assert needed in said, f"run-local does not say {needed!r}:\n{said}"
    example = r.example()
    first_lock = as_test(doc_block(FIRST_LOCK).text, r.mountpoint)
    assert [line.split("#")[0].rstrip() for line in example] == \
        [line.split("#")[0].rstrip() for line in first_lock.splitlines()], \
        "the README's first lock is not what run-local prints"
    res = bash("\n".join(example) + "\n", r.tree)
    assert res.returncode == 0, res.stderr
    token, holder = res.stdout.splitlines()
    assert token.isdigit(), res.stdout
    assert holder.startswith(f"held write {token} ") and \
        holder.endswith(" what I am doing"), res.stdout
    assert open(os.path.join(r.mountpoint, "demo", "holders")).read() == ""
    assert "Every user of this machine may take locks there" in said, said
    assert open_as(os.path.join(r.mountpoint, "demo", "write"), []) == "ok", \
        "a user other than root cannot lock on run-local's mount"
    zk_pids = processes_mentioning(r.state)
    assert zk_pids, "no process of run-local's ZooKeeper"
    assert not [pid for pid in zk_pids if os.path.exists(
        f"/tmp/hsperfdata_{pwd.getpwuid(os.getuid()).pw_name}/{pid}")], \
        "run-local's ZooKeeper keeps a JVM performance file in /tmp"
    stop_and_check(r)


def one_test_command():
    """HACKING.md's command that runs one test."""
    with open(os.path.join(ROOT, "HACKING.md")) as f:
        found = re.findall(r"One test alone: `(meson test [^`]+)`", f.read())
    assert len(found) == 1, found
    return shlex.split(found[0])


def run_tests_stage(tmp_path, command):
    """contrib/run-tests' own stage() (its text, cut from the script) run
    on `command`: the summary lines it adds, and its status."""
    with open(os.path.join(ROOT, "contrib", "run-tests")) as f:
        text = f.read()
    m = re.search(r"^stage\(\) \{\n.*?^\}\n", text, re.M | re.S)
    assert m, "contrib/run-tests has no stage() function"
    script = ("set -uo pipefail\nscratch=$1\nstatus=0\nsummary=()\n" +
              m.group(0) + f"stage 'a stage' {command}\n" +
              'printf "%s\\n" "${summary[@]}"\nexit $status\n')
    r = subprocess.run(["bash", "-c", script, "bash", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout.split("== a stage\n", 1)[-1]


def test_run_tests_names_each_failed_test_and_why_in_its_summary(tmp_path):
    """A stage whose tests fail: its summary line says FAILED, and under
    it each failure once, with its reason: pytest's short summary, a
    Criterion test with its assertion's message, a static test's problem,
    and meson's failed executable (named in its progress and again in its
    summary of failures)."""
    out = tmp_path / "out.txt"
    meson_fail = (" 3/32 zklockfs:unit / unit-waiter   FAIL   0.07s   "
                  "exit status 1")
    out.write_text(
        "[----] ../tests/unit/test_waiter.c:415: Assertion Failed\n"
        "[----]   \n"
        "[----]   the downgrade deleted the write node\n"
        "[----]   \n"
        "[FAIL] kept::a_downgrade_keeps_its_place: (0.00s)\n"
        f"{meson_fail}\n"
        "doc/design.md:29: cites recipes/lr_heir.c, which the tree does "
        "not have\n"
        "../tests/integration/harness.py:736: AssertionError\n"
        "FAILED tests/integration/test_x.py::test_y@test_x - "
        "AssertionError: two writers overlapped\n"
        "ERROR tests/integration/test_z.py::test_w - FileNotFoundError\n"
        "Summary of Failures:\n"
        f"{meson_fail}\n"
        "==== 1 failed, 9 passed, 1 error in 3.00s ====\n")
    status, text = run_tests_stage(tmp_path, f"sh -c 'cat {out}; exit 1'")
    summary = text.splitlines()[-6:]
    assert status == 1, text
    assert re.match(r"a stage +FAILED .*\(1 failed, 9 passed, 1 error",
                    summary[0]), summary
    assert summary[1:] == [
        "    FAIL kept::a_downgrade_keeps_its_place - the downgrade "
        "deleted the write node",
        "    " + meson_fail.strip(),
        "    doc/design.md:29: cites recipes/lr_heir.c, which the tree "
        "does not have",
        "    FAILED tests/integration/test_x.py::test_y@test_x - "
        "AssertionError: two writers overlapped",
        "    ERROR tests/integration/test_z.py::test_w - FileNotFoundError",
    ], summary


def test_run_tests_fails_a_stage_that_ran_no_test(tmp_path):
    """meson test says "No tests defined." and exits 0 where it finds
    none: run-tests' stage fails it all the same, and says so."""
    status, text = run_tests_stage(tmp_path, "echo 'No tests defined.'")
    assert status == 1, text
    assert re.search(r"^a stage +FAILED .*\(no tests\)$", text, re.M), text


@needs_plain
def test_run_tests_builds_find_the_tests_after_run_local(tree):
    """run-local configures build/ without tests; there HACKING.md's
    one-test command fails, saying what to run, rather than run nothing
    and pass.  run-tests' configuration of the same tree must bring the
    tests back (and run-local's must still build the daemon after it)."""
    def calls(script):
        return [line.strip() for line in open(os.path.join(tree, script))
                if line.strip().startswith("contrib/build-tree")]
    assert calls("contrib/run-local") == ["contrib/build-tree --no-tests build"]
    assert calls("contrib/run-tests") == ["contrib/build-tree build build-asan build-tsan"]

    def build_tree(*args):
        r = subprocess.run(["contrib/build-tree", *args], cwd=tree,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"contrib/build-tree: building {args[-1]}/ (" in r.stdout, \
            f"it does not say what it builds:\n{r.stdout}"
        listed = subprocess.run(["meson", "test", "-C", "build", "--list",
                                 "--no-rebuild"], cwd=tree, capture_output=True,
                                text=True, timeout=60).stdout
        return {line.split(" / ")[0] for line in listed.splitlines() if " / " in line}

    # Only the test that fails, saying there are none.
    assert build_tree("--no-tests", "build") == {"zklockfs:unit+integration"}
    r = subprocess.run(one_test_command(), cwd=tree, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and \
        "contrib/install-deps --tests && contrib/build-tree build" in r.stdout, \
        f"HACKING.md's one test after run-local: status {r.returncode}\n" \
        + r.stdout + r.stderr
    assert build_tree("build") == {"zklockfs:unit", "zklockfs:integration"}
    assert build_tree("--no-tests", "build") == {"zklockfs:unit+integration"}
    assert os.access(os.path.join(tree, "build", "fs", "zklockfs"), os.X_OK)


@needs_plain
def test_run_local_says_the_port_is_taken_and_what_to_do(tree, tmp_path,
                                                         zookeeper):
    def run(port):
        return subprocess.run(
            ["contrib/run-local", str(tmp_path / "mnt")], cwd=tree,
            env=dict(os.environ, ZKLOCKFS_PORT=str(port),
                     ZKLOCKFS_STATE=str(tmp_path / "state")),
            capture_output=True, text=True, timeout=120)

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        r = run(port)
    assert r.returncode == 1, r
    assert f"port {port} on 127.0.0.1 is in use" in r.stderr, r.stderr
    assert f"pid {os.getpid()} (" in r.stderr, "it does not say who listens"
    assert "ZKLOCKFS_PORT=" in r.stderr, r.stderr

    r = run(zookeeper.port)
    assert r.returncode == 1, r
    assert f"a ZooKeeper already answers on 127.0.0.1:{zookeeper.port}" in r.stderr
    assert (f"contrib/run-local {tmp_path / 'mnt'} "
            f"127.0.0.1:{zookeeper.port}/zklockfs") in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "mnt")


def section_commands(first_line):
    """The install line and the run-local arguments of a section's setup
    block."""
    install, start = doc_block(first_line).text.splitlines()
    words = shlex.split(start, comments=True)
    assert words[:2] == ["contrib/run-local", README_MOUNT], start
    return install, words[2:]


# The sections that try a service with run-local: the block that installs
# the client and starts the mount, the program's block and the file it is
# saved as, and the block that runs it.
SECTIONS = {
    "kazoo": ("apt-get install -y python3-kazoo                 # kazoo 2.8, Debian 12's",
              "import os", "migrate.py", "python3 migrate.py"),
    "curator": ("apt-get install -y default-jdk-headless libcurator-recipes-java",
                "import org.apache.curator.framework.CuratorFramework;",
                "Deploy.java",
                "java -cp /usr/share/java/curator-recipes.jar:"
                "/usr/share/java/slf4j-nop.jar Deploy.java"),
}


def test_what_a_services_section_installs_run_tests_installs_first():
    """Every package a services section's install line names is in
    contrib/install-deps --tests, which contrib/run-tests runs and
    announces: the test of that section installs nothing unannounced."""
    lists = install_deps_lists()
    announced = set(lists["build"] + lists["server"] + lists["tests"])
    for section, (setup, *_) in sorted(SECTIONS.items()):
        install, _ = section_commands(setup)
        words = shlex.split(install, comments=True)
        assert words[:3] == ["apt-get", "install", "-y"], install
        missing = sorted(set(words[3:]) - announced)
        assert not missing, \
            f"the {section} section installs {missing}, which " \
            "contrib/install-deps --tests does not"


@needs_plain
@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_a_services_section_as_written(run_local, tmp_path, section):
    setup, program, saved_as, run = SECTIONS[section]
    install, options = section_commands(setup)
    res = bash(install, tmp_path, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    r = run_local(*options)
    (tmp_path / saved_as).write_text(
        as_test(doc_block(program).text, port=r.port))
    service_holds_the_lock(r, tmp_path, doc_block(run))
    stop_and_check(r)


def service_holds_the_lock(r, cwd, run_block):
    """Run the section's service with a ./migrate.sh that records whether
    the mount could take the resource's lock meanwhile; then it can."""
    lock = shlex.quote(os.path.join(r.mountpoint, "deploy", "lock"))
    migrate = cwd / "migrate.sh"
    migrate.write_text(f"#!/bin/sh\nif flock -n {lock} true; then echo free; "
                       "else echo busy; fi >> ran.log\n")
    migrate.chmod(0o755)
    res = bash(run_block.text, cwd, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert ran(cwd) == ["busy"], "the mount took the lock the service held"
    assert subprocess.run(["flock", "-n", os.path.join(r.mountpoint, "deploy", "lock"),
                           "true"]).returncode == 0, "the service kept the lock"
