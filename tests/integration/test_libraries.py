"""The lock libraries and file modes that programs already use, on a
mount's lock files, with the other party on another mount (another
host): doc/locks.md, "Works with".  Each party is a process of its own
(libparty.py)."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from harness import Child, Lines, lock_nodes, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
PARTY = os.path.join(HERE, "libparty.py")


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


# Perl's fcntl(F_SETLKW) of the whole file, struct flock packed by hand
# (x86-64 and arm64: short, short, off_t, off_t, pid_t).
PERL_FCNTL = r"""
use Fcntl qw(F_SETLK F_SETLKW F_WRLCK F_UNLCK SEEK_SET);
open(my $f, "+<", $ARGV[0]) or die "open $ARGV[0]: $!";
$| = 1;
my $try = ($ARGV[1] // "") eq "try";
my $lock = pack("ssx4qqix4", F_WRLCK, SEEK_SET, 0, 0, 0);
if (!fcntl($f, $try ? F_SETLK : F_SETLKW, $lock)) {
    die "fcntl: $!" unless $!{EAGAIN} || $!{EACCES};
    print "busy\n";
    exit 0;
}
print "held\n";
1 while <STDIN>;
my $unlock = pack("ssx4qqix4", F_UNLCK, SEEK_SET, 0, 0, 0);
fcntl($f, F_SETLK, $unlock) or die "unlock: $!";
print "released\n";
"""
PERL = {"perl-flock": PERL_FLOCK, "perl-fcntl": PERL_FCNTL}

# Ruby's File#flock, the same words again.
RUBY_FLOCK = r"""
f = File.open(ARGV[0], "r")
$stdout.sync = true
how = File::LOCK_EX | (ARGV[1] == "try" ? File::LOCK_NB : 0)
unless f.flock(how)
  puts "busy"
  exit 0
end
puts "held"
$stdin.read
f.flock(File::LOCK_UN) or raise "unlock failed"
puts "released"
"""


class Party(Child):
    """libparty.py HOW PATH [try] (or Perl's perl-flock, perl-fcntl, or
    Ruby's ruby-flock, or the argv of another program that speaks its
    protocol), its lines read as they come (by a thread: two lines may
    come in one read)."""

    def __init__(self, how, path, *extra, argv=None):
        if argv is None:
            argv = ["perl", "-e", PERL[how], path, *extra] if how in PERL \
                else ["ruby", "-e", RUBY_FLOCK, path, *extra] \
                if how == "ruby-flock" \
                else [sys.executable, PARTY, how, path, *extra]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True)
        self.lines = Lines(self.proc.stdout)
        Child.alive.add(self)

    def line(self, timeout=30):
        got = self.lines.next(timeout, f"word from {self.proc.args[-2:]}")
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

    def silent_for(self, seconds):
        """Negative check: no line within `seconds` (a party that
        waits)."""
        return self.lines.silent_for(seconds)


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
    # A last close's release reaches the daemon after close() returned
    # (doc/locks.md, "When another host sees a release").
    wait_until(lambda: not refused_nonblocking(m2.path("r", kind)), 15,
               "the other host to get the lock after the close")


def test_python_a_plus_on_read_shares_and_keeps_a_writer_out(zk, base, m1,
                                                             m2):
    """'a+' on `read`: two hosts share it; a writer waits for both."""
    readers = [Party("a+", m.path("r", "read")) for m in (m1, m2)]
    for r in readers:
        assert r.line().startswith("seek ") and r.line() == "held"
    assert refused_nonblocking(m2.path("r", "write"))
    for r in readers:
        r.release()
    wait_until(lambda: not refused_nonblocking(m2.path("r", "write")), 15,
               "a writer to get in after both readers closed")


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
                                 "fasteners-lock", "filelock", "perl-flock",
                                 "perl-fcntl", "ruby-flock"])
def test_an_exclusive_library_lock_keeps_the_other_host_out(
        zk, base, m1, m2, how):
    """portalocker.Lock(path, mode='w') opens 'a', takes the lock, then
    truncates through seek(0) and truncate(0): the seek must work, or the
    lock stays held behind an exception.  Its mode 'a', fasteners'
    InterProcessLock, filelock's FileLock, Perl's flock and fcntl and
    Ruby's File#flock lock as they are."""
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


@pytest.mark.concurrency
@pytest.mark.parametrize("how", ["fasteners-write", "fasteners-lock",
                                 "portalocker-a", "filelock"])
def test_no_lost_update_across_hosts_and_a_killed_holder(zk, base, m1, m2,
                                                          tmp_path, how):
    """Two processes on each mount add one to a local counter 20 times
    each, under the library's lock; one of them is killed with -9 once it
    has done a few.  Every increment a process finished is in the counter
    (the killed one may have written one more before it could say so),
    and nothing is left in ZooKeeper."""
    counter = tmp_path / "counter"
    counter.write_text("0\n")
    each = 20
    procs = [subprocess.Popen(
        [sys.executable, PARTY, how, m.path("r", "lock"), "count", str(each),
         str(counter)], stdout=subprocess.PIPE, text=True,
        start_new_session=True) for m in (m1, m2, m1, m2)]
    done = [0] * len(procs)
    try:
        victim = procs[1]
        for line in victim.stdout:  # killed once it has done three
            done[1] = int(line.split()[1])
            if done[1] >= 3:
                break
        victim.kill()
        victim.wait(15)
        for line in victim.stdout:
            done[1] = int(line.split()[1])
        for i, p in enumerate(procs):
            if p is victim:
                continue
            out, _ = p.communicate(timeout=120)
            assert p.returncode == 0, f"{how}: worker {i} failed"
            done[i] = int(out.split()[-1])
            assert done[i] == each, out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(15)
    total = int(counter.read_text())
    assert total in (sum(done), sum(done) + 1), \
        f"{how}: the counter says {total}, the workers did {done}"
    wait_until(lambda: not lock_nodes(zk, base), 15,
               "the killed holder's lock node to go")


@pytest.fixture(scope="module")
def filechannel_java():
    """FileChannelLocks.java compiled once for the module: a function
    (how, path) -> its Party.  Skipped, saying why, without a JDK."""
    if not shutil.which("javac"):
        pytest.skip("no javac: run contrib/install-deps --tests")
    classes = tempfile.mkdtemp(prefix="zklockfs-filechannel-")
    try:
        subprocess.run(["javac", "-J-XX:-UsePerfData", "-d", classes,
                        os.path.join(HERE, "FileChannelLocks.java")],
                       check=True)
        yield lambda how, path: Party(how, path, argv=[
            "java", "-XX:-UsePerfData", "-cp", classes, "FileChannelLocks",
            path, how])
    finally:
        shutil.rmtree(classes, ignore_errors=True)


def test_java_filechannel_locks_the_whole_file_a_try_and_a_range(
        zk, base, m1, m2, filechannel_java):
    """Java's FileChannel on `lock`: lock(0, 10, false) (a byte range)
    holds the whole resource, so the other host's tryLock() and
    tryLock(0, 10, false) find it taken and its lock() (the whole file)
    waits; once let go, that lock() holds, and keeps a range out."""
    java = filechannel_java
    holder = java("range", m1.path("r", "lock"))
    assert holder.line() == "held", "lock(0, 10, false) failed"
    for how in ("trylock", "tryrange"):
        other = java(how, m2.path("r", "lock"))
        assert other.line() == "busy", f"{how} got a range held elsewhere"
        other.finish()
    waiter = java("lock", m2.path("r", "lock"))
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 30,
               "lock()'s node to queue behind the range")
    assert waiter.silent_for(0.5), "lock() got a range held elsewhere"
    holder.release()
    assert waiter.line() == "held"
    other = java("tryrange", m1.path("r", "lock"))
    assert other.line() == "busy", "tryLock(0, 10) got a lock() held elsewhere"
    other.finish()
    waiter.release()
    other = java("trylock", m1.path("r", "lock"))
    assert other.line() == "held"
    other.release()
    assert not lock_nodes(zk, base)


def test_java_filechannel_upgrading_a_range_is_refused_by_name(
        zk, base, m1, filechannel_java):
    """Java's lock(20, 10, false) over its own lock(0, 10, true): the
    exception names the reason (EDEADLK), the daemon's log says what to do
    instead, and nothing is left once the program ends."""
    party = filechannel_java("upgrade", m1.path("r", "lock"))
    line = party.line()
    assert line == "error java.io.IOException: Resource deadlock avoided", \
        line
    party.finish()
    wait_until(lambda: "only for the whole file" in m1.log(), 10,
               "the daemon to log the refused upgrade")
    wait_until(lambda: not lock_nodes(zk, base), 10,
               "the shared range's node to go with the program")
