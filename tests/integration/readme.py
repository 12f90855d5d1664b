"""The documentation as code: the fenced blocks of the README and the
documents it links to, a copy of the tree as a fresh clone would hold it,
and contrib/run-local driven as a user drives it."""
import fnmatch
import os
import select
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

from harness import is_mounted

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(ROOT, "README.md")
# The documents a user reads, whose every block a test runs (or says why
# not): the README and what it links to.  doc/design.md is the code's
# (tests/static/structure.py checks its lists).
DOCS = ("README.md", "HACKING.md", "doc/locks.md", "doc/failures.md",
        "doc/sharing.md", "doc/operations.md")
# Where the examples mount, and the servers the ensemble examples name:
# replaced by the test's own.
README_MOUNT = "/mnt/zklock"
README_ENSEMBLE = "zk1:2181,zk2:2181,zk3:2181"
# root's PATH on a fresh Debian 12: its python3 is Debian's, with the
# packages the README installs (this machine may put another first).
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Block:
    lang: str
    text: str
    doc: str   # the document's path from the top of the tree
    line: int  # of the opening fence, counted from 1

    @property
    def first(self):
        return self.text.split("\n", 1)[0]

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def doc_blocks():
    """Every fenced block of every document in DOCS, in order."""
    blocks = []
    for doc in DOCS:
        fence = None
        with open(os.path.join(ROOT, doc)) as f:
            lines = f.read().split("\n")
        for number, line in enumerate(lines, 1):
            if fence is None and line.startswith("```"):
                fence, body = (line[3:].strip(), number), []
            elif fence is not None and line == "```":
                blocks.append(Block(fence[0], "\n".join(body) + "\n", doc,
                                    fence[1]))
                fence = None
            elif fence is not None:
                body.append(line)
        assert fence is None, f"{doc}:{fence[1]}: a block is never closed"
    return blocks


def doc_block(first_line):
    """The one block, in any document, whose first line is first_line."""
    found = [b for b in doc_blocks() if b.first == first_line]
    assert len(found) == 1, \
        f"{len(found)} blocks of {DOCS} start with {first_line!r}: " \
        f"{[b.where for b in found]}"
    return found[0]


def tree_files_by_git(root=ROOT):
    """The files of the tree as git sees them: tracked, or new and not
    ignored, as they are in the work tree (a change not yet committed is
    what gets tested); relative paths.  None where git refuses the
    repository (its owner is another user: "dubious ownership")."""
    r = subprocess.run(
        ["git", "-C", root, "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"], capture_output=True)
    if r.returncode != 0:
        return None
    return sorted(rel for rel in r.stdout.decode().split("\0")
                  if rel and os.path.lexists(os.path.join(root, rel)))


def ignore_rules(root=ROOT):
    """The tree's .gitignore, as (pattern, anchored, directories only):
    the subset of git's syntax it uses.  A "/" at the start or in the
    middle anchors a pattern to the top, and a trailing "/" makes it match
    directories only; "*", "?" and "[...]" match within one path
    component.  What else git would read differently ("!", "**", "\\", and
    "[!...]" or "[^...]", a negated class) is refused, loudly."""
    rules = []
    with open(os.path.join(root, ".gitignore")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            assert line == line.strip() and not line.startswith("!") \
                and "**" not in line and "\\" not in line \
                and "[!" not in line and "[^" not in line, \
                f".gitignore: {line!r}: not understood here (readme.py)"
            body = line.rstrip("/")
            rules.append((body.lstrip("/"), "/" in body, line.endswith("/")))
    return rules


def ignored_by(rules, rel, is_dir):
    """Whether rules (ignore_rules) ignore the file or directory rel, a
    path from the top; its parents are not looked at (a walk stops at an
    ignored directory)."""
    parts = rel.split("/")
    for pattern, anchored, only_dirs in rules:
        if only_dirs and not is_dir:
            continue
        wanted = pattern.split("/") if anchored else [pattern]
        names = parts if anchored else parts[-1:]
        if len(wanted) == len(names) and all(
                fnmatch.fnmatchcase(n, w) for n, w in zip(names, wanted)):
            return True
    return False


def tree_files_by_walk(root=ROOT):
    """The same files as tree_files_by_git, where there is no git or no
    .git (a release tarball, a git archive, a source package): every file
    but .git and what .gitignore ignores (build directories, caches, what
    a package build leaves)."""
    rules = ignore_rules(root)
    found = []
    for d, dirs, files in os.walk(root):
        here = os.path.relpath(d, root)
        here = "" if here == "." else here
        # A link to a directory is a file to git, never followed.
        files = files + [n for n in dirs if os.path.islink(os.path.join(d, n))]
        dirs[:] = sorted(n for n in dirs if n != ".git" and not ignored_by(
            rules, os.path.join(here, n), True) and not os.path.islink(
                os.path.join(d, n)))
        # .git is a file in a worktree: not the tree's either.
        found += [os.path.join(here, n) for n in files if n != ".git"
                  and not ignored_by(rules, os.path.join(here, n), False)]
    return sorted(found)


def clean_copy(dest):
    """The tree as a fresh clone of it would be, in dest, with no build
    directory: by git where it has one and git is here and reads it, else
    by walking the tree (tree_files_by_walk)."""
    # .git: a directory in a clone, a file in a worktree of one.
    by_git = shutil.which("git") and os.path.exists(os.path.join(ROOT, ".git"))
    listed = tree_files_by_git() if by_git else None
    for rel in listed if listed is not None else tree_files_by_walk():
        os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel),
                     follow_symlinks=False)
    return dest


def processes_mentioning(text):
    """pids of processes whose command line contains text."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


class RunLocal:
    """contrib/run-local in a process group of its own, as a terminal's
    foreground job: Ctrl-C is SIGINT to the group."""

    def __init__(self, tree, args, port, state):
        self.tree, self.state, self.port = tree, state, port
        self.mountpoint = args[0]
        self.output, self.partial = [], ""
        self.proc = subprocess.Popen(
            ["contrib/run-local", *args], cwd=tree,
            env=dict(os.environ, ZKLOCKFS_PORT=str(port),
                     ZKLOCKFS_STATE=state, PATH=DEBIAN_PATH),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True)

    def _read_until(self, pred, timeout, what):
        """Read its output into self.output (whole lines) until pred().
        Straight from the descriptor: a buffered reader would keep lines
        that select() then cannot see."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while not pred():
            left = deadline - time.monotonic()
            r, _, _ = select.select([fd], [], [], max(left, 0))
            if not r:
                raise AssertionError(f"run-local: no {what} within {timeout}"
                                     f" s; it said:\n{self.said()}")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(
                    f"run-local ended (exit status {self.proc.wait(30)}) "
                    f"before its {what}; it said:\n{self.said()}")
            lines = (self.partial + chunk.decode(errors="replace")).split("\n")
            self.partial = lines.pop()
            self.output.extend(line + "\n" for line in lines)

    def said(self):
        return "".join(self.output) + self.partial

    def wait_ready(self, timeout=300):
        """Until run-local says it is mounted (installing and building
        come first)."""
        self._read_until(lambda: self.output and
                         self.output[-1].startswith("Press Ctrl-C"),
                         timeout, "'Press Ctrl-C' line")
        assert is_mounted(self.mountpoint), self.said()
        return self

    def example(self):
        """The lines the usage text gives to try, as it prints them."""
        block = self.said().split("Try it in another shell:\n", 1)[1]
        block = block.split("The daemon is ", 1)[0]
        return [line[4:] for line in block.splitlines()]

    def interrupt(self, timeout=60):
        """Ctrl-C; returns the exit status once everything it printed is
        read."""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            rest, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"run-local did not end {timeout} s after "
                                 "Ctrl-C:\n" + self.said())
        self.partial += rest.decode(errors="replace")
        return self.proc.returncode

    def kill(self):
        """After a failure: nothing of it may outlive the test."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        for pid in processes_mentioning(self.state):
            os.kill(pid, signal.SIGKILL)
        if is_mounted(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint],
                           check=False)

    def leftovers(self):
        """What is left of the run: processes, the mount, the mount point
        it made, a listener on its port ([] if nothing)."""
        left = [f"process {pid}" for pid in processes_mentioning(self.state)]
        if is_mounted(self.mountpoint):
            left.append(f"the mount on {self.mountpoint}")
        if os.path.exists(self.mountpoint):
            left.append(f"the mount point {self.mountpoint}")
        try:
            with socket.create_connection(
                    ("127.0.0.1", self.port), timeout=1):
                left.append(f"a listener on port {self.port}")
        except OSError:
            pass
        return left
