"""A job and a lock holder in one process group of one session: the holder
joins the job's group itself (setpgid), as issue 55's unprivileged holder
joined a root job's, then takes a lock.

usage: signal_group.py LOCKFILE JOB HOLDER
JOB, HOLDER: who runs each (AS below): root, nobody, or root-nokill (root
without CAP_KILL).  Run it in a session of its own (start_new_session):
setpgid joins only a group of the caller's session.

Prints "job PID" (a sleep, the leader of a new group), "holder PID", the
holder's own "held" once its open() returned, and "exit PID HOW" (HOW:
"signal N" or "status N") as each of them ends.  The end of stdin kills
both with SIGKILL, which their exit lines then show.
"""
import os
import signal
import sys
import threading

AS = {
    "root": [],
    "nobody": ["--reuid=65534", "--regid=65534", "--clear-groups"],
    # Root's uid without CAP_KILL: it may signal only root's processes.
    "root-nokill": ["--bounding-set=-kill"],
}

# The holder: joins the group named by argv[2] with its own credentials,
# then holds the lock until it is killed (SIGTERM's default action).
HOLD = ("import os, sys, time\n"
        "os.setpgid(0, int(sys.argv[2]))\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n")


def start(argv, pgid):
    """argv as a child in process group pgid (0: a new one of its own)."""
    pid = os.fork()
    if pid == 0:
        try:
            if pgid is not None:
                os.setpgid(0, pgid)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    return pid


# The children not reaped yet (a pid reaped may be another process's
# soon), under `reaping`.
running = set()
reaping = threading.Lock()


def report_exits():
    while running:
        # Seen ended, not reaped: its pid stays its own until the lock.
        seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        with reaping:
            _, status = os.waitpid(seen.si_pid, 0)
            running.discard(seen.si_pid)
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"status {os.WEXITSTATUS(status)}")
        print(f"exit {seen.si_pid} {how}", flush=True)


def main():
    lockfile, job_as, holder_as = sys.argv[1:4]
    job = start(["setpriv", *AS[job_as], "sleep", "600"], 0)
    try:
        os.setpgid(job, job)  # the group exists before the holder joins
    except PermissionError:
        pass  # the job has exec'd: it made the group itself before
    print(f"job {job}", flush=True)
    holder = start(["setpriv", *AS[holder_as], sys.executable, "-c", HOLD,
                    lockfile, str(job)], None)
    print(f"holder {holder}", flush=True)
    running.update((job, holder))
    reaper = threading.Thread(target=report_exits)
    reaper.start()
    sys.stdin.read()
    with reaping:
        for pid in running:
            os.kill(pid, signal.SIGKILL)
    reaper.join(15)


if __name__ == "__main__":
    main()
