"""The lock libraries and file modes that programs already use, on a
mount's lock files, with the other party on another mount (another
host): doc/locks.md, "Works with".  Each party is a process of its own
(libparty.py)."""
import os
import queue
import subprocess
import sys
import threading

import pytest

from harness import Child, lock_nodes, wait_until

PARTY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "libparty.py")


# Perl's flock, as a Perl program takes it: the same words as libparty.py.
PERL_FLOCK = r"""
use Fcntl qw(:flock);
open(my $f, "<", $ARGV[0]) or die "open $ARGV[0]: $!";
$| = 1;
if (!flock($f, LOCK_EX | (($ARGV[1] // "") eq "try" ? LOCK_NB : 0))) {
    print "busy\n";
    exit 0;
}
print "held\n";
1 while <STDIN>;
flock($f, LOCK_UN) or die "unlock: $!";
print "released\n";
"""


class Party(Child):
    """libparty.py HOW PATH [try] (or perl-flock), its lines read as they
    come (by a thread: two lines may come in one read)."""

    def __init__(self, how, path, *extra):
        argv = ["perl", "-e", PERL_FLOCK, path, *extra] \
            if how == "perl-flock" else [sys.executable, PARTY, how, path,
                                         *extra]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        Child.alive.add(self)

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def line(self, timeout=30):
        try:
            got = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"no word from {self.proc.args[-2:]} within {timeout} s")
        assert got, (f"{self.proc.args[-2:]} ended: "
                     f"{self.proc.stderr.read().strip()}")
        return got

    def release(self):
        self.proc.stdin.close()
        assert self.line() == "released"
        self.proc.wait(15)
        Child.alive.discard(self)

    def finish(self):
        """A party that said "busy": it has ended."""
        assert self.proc.wait(15) == 0, self.proc.stderr.read()
        Child.alive.discard(self)


def refused_nonblocking(path, flags=os.O_RDWR):
    """Does an O_NONBLOCK open of path find its lock taken?"""
    try:
        os.close(os.open(path, flags | os.O_NONBLOCK))
        return False
    except BlockingIOError:
        return True


@pytest.mark.parametrize("mode", ["a+", "r+", "w+"])
@pytest.mark.parametrize("kind", ["write", "lease"])
def test_python_buffered_modes_lock_seek_and_read_the_token(
        zk, base, m1, m2, kind, mode):
    """open(path, 'a+'|'r+'|'w+') needs lseek (Python checks at open, and
    'a' seeks to the end): the open takes the lock, seek(0) and readline()
    give the fencing token, and the other host is kept out."""
    holder = Party(mode, m1.path("r", kind))
    seek = holder.line()
    assert seek.startswith("seek ") and seek.split()[1].isdigit() and \
        seek.endswith("seekable"), seek
    assert holder.line() == "held"
    assert refused_nonblocking(m2.path("r", kind)), \
        "the other host took the lock while it was held"
    holder.release()
    assert not refused_nonblocking(m2.path("r", kind))


def test_python_a_plus_on_read_shares_and_keeps_a_writer_out(zk, base, m1,
                                                             m2):
    """'a+' on `read`: two hosts share it; a writer waits for both."""
    readers = [Party("a+", m.path("r", "read")) for m in (m1, m2)]
    for r in readers:
        assert r.line().startswith("seek ") and r.line() == "held"
    assert refused_nonblocking(m2.path("r", "write"))
    for r in readers:
        r.release()
    assert not refused_nonblocking(m2.path("r", "write"))


def test_fasteners_reader_writer_lock_shares_reads_and_excludes_a_writer(
        zk, base, m1, m2):
    """fasteners.InterProcessReaderWriterLock (what oslo.concurrency
    uses) on `lock`: it opens the file 'a+' and takes lockf(LOCK_SH) or
    lockf(LOCK_EX); readers on two hosts share it, a writer on either is
    refused while they hold it and gets it once they let go; while the
    writer holds it, a reader is refused."""
    r1 = Party("fasteners-read", m1.path("r", "lock"))
    assert r1.line() == "held"
    r2 = Party("fasteners-read", m2.path("r", "lock"), "try")
    assert r2.line() == "held", "a second host's reader was refused"
    w = Party("fasteners-write", m2.path("r", "lock"), "try")
    assert w.line() == "busy", "a writer got in beside two readers"
    w.finish()
    r1.release()
    r2.release()
    w = Party("fasteners-write", m2.path("r", "lock"), "try")
    assert w.line() == "held"
    r = Party("fasteners-read", m1.path("r", "lock"), "try")
    assert r.line() == "busy", "a reader got in beside the writer"
    r.finish()
    w.release()
    assert not lock_nodes(zk, base)


@pytest.mark.parametrize("how", ["portalocker-w", "portalocker-a",
                                 "fasteners-lock", "filelock", "perl-flock"])
def test_an_exclusive_library_lock_keeps_the_other_host_out(
        zk, base, m1, m2, how):
    """portalocker.Lock(path, mode='w') opens 'a', takes the lock, then
    truncates through seek(0) and truncate(0): the seek must work, or the
    lock stays held behind an exception.  Its mode 'a', fasteners'
    InterProcessLock, filelock's FileLock and Perl's flock lock as they
    are."""
    holder = Party(how, m1.path("r", "lock"))
    assert holder.line() == "held"
    other = Party(how, m2.path("r", "lock"), "try")
    assert other.line() == "busy", "the other host got the lock"
    other.finish()
    holder.release()
    other = Party(how, m2.path("r", "lock"), "try")
    assert other.line() == "held"
    other.release()
    assert not lock_nodes(zk, base)


def test_seeks_answer_as_on_a_file_whose_content_is_the_text(m1):
    """SEEK_SET, SEEK_CUR and SEEK_END answer; a read after a seek back to
    where the pass began gives the text again from its beginning, and a
    read after a seek into the text goes on with the same text."""
    fd = os.open(m1.path("r", "write"), os.O_RDWR)
    try:
        first = os.read(fd, 4096)
        assert first and first.split(b"\n")[0].isdigit(), first
        assert os.lseek(fd, 0, os.SEEK_CUR) == len(first)
        assert os.read(fd, 4096) == b"", "a pass ends at end of file"
        assert os.lseek(fd, 0, os.SEEK_END) == 0, "a lock file's size is 0"
        assert os.lseek(fd, 0, os.SEEK_SET) == 0
        assert os.read(fd, 4096) == first
        os.lseek(fd, 3, os.SEEK_SET)
        assert os.read(fd, 4096) == first[3:], "the same pass goes on"
        os.lseek(fd, 0, os.SEEK_SET)
        assert os.read(fd, 5) == first[:5], "a new pass, from the start"
        assert os.read(fd, 4096) == first[5:]
        assert os.pread(fd, 4096, 0) == first
    finally:
        os.close(fd)


def test_a_dot_lock_tool_fails_at_once_and_the_log_says_what_works(m1):
    """lockfile-create (lockfile-progs) locks by creating a temporary file
    with O_EXCL and linking it: a mount holds no such files, so it fails,
    at once rather than after retries, and the daemon's log names what
    works instead.  So does link() itself."""
    res = subprocess.run(["lockfile-create", "--retry", "0",
                          m1.path("r", "job")],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0, res
    wait_until(lambda: "dot-lock tool cannot lock" in m1.log(), 10,
               "the daemon to log why lockfile-create failed")
    assert "lockfile-create" in m1.log() and \
        "open RESOURCE/write, or flock RESOURCE/lock" in m1.log(), m1.log()
    with pytest.raises(PermissionError):
        os.link(m1.path("r", "lock"), m1.path("r", ".job.lock"))
