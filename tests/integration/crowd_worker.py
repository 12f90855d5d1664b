"""A crowd of holders waiting for one busy lock, for
test_deadlock_owners.py and bench/run --only deadlock.

    crowd_worker.py MOUNT N [PREFIX]

N processes (forked: each of one thread) each take
MOUNT/PREFIXcrowd<i>/write, then open MOUNT/PREFIXbusy/write, which blocks
until its holder lets go.  Prints
"held" once all N hold their own lock, and, once all have taken the busy
lock in turn and exited, "done <how many got it>" followed by the errno
names of the others.
"""
import errno
import os
import sys

MOUNT, N = sys.argv[1], int(sys.argv[2])
PREFIX = sys.argv[3] if len(sys.argv) > 3 else ""

ready_r, ready_w = os.pipe()
pids = []
for i in range(N):
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        try:
            own = os.open(f"{MOUNT}/{PREFIX}crowd{i}/write", os.O_WRONLY)
            os.write(ready_w, b"h")
            os.close(os.open(f"{MOUNT}/{PREFIX}busy/write", os.O_WRONLY))
            os.close(own)
            os._exit(0)
        except OSError as e:
            os._exit(e.errno)
    pids.append(pid)
os.close(ready_w)
held = 0
while held < N:
    got = os.read(ready_r, N)
    if not got:
        break
    held += len(got)
print("held" if held == N else f"only {held} held", flush=True)
codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
print("done", codes.count(0),
      *sorted(errno.errorcode.get(c, str(c)) for c in codes if c), flush=True)
