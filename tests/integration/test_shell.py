"""Shell idioms and open file description semantics: the lock lives until
the last descriptor of the open file description closes."""
import subprocess
import textwrap

from harness import Locker, lock_nodes, wait_until
from test_core import still_waiting


def queued_behind(zk, base, what):
    wait_until(lambda: len(lock_nodes(zk, base)) == 2, 10, what)


def bash(script, timeout=30):
    return subprocess.run(["bash", "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=timeout)


def test_exec_redirections_and_cat_take_the_lock(m1, m2):
    w = m1.path("s", "write")
    r = m1.path("s", "read")
    res = bash(f"""
        set -e
        exec 9>{w}; echo write-held; exec 9>&-
        exec 9<{r}; echo read-held; exec 9<&-
        exec 9<>{w}; head -1 <&9 | grep -q '^[0-9][0-9]*$'; echo rw-held; exec 9>&-
        cat {r} | head -1 | grep -q '^[0-9]'; echo cat-held
    """)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["write-held", "read-held", "rw-held", "cat-held"]


def test_the_readmes_first_example_reads_the_token_and_a_note(m1, m2):
    """README, first lines: exec 9<>.../write; read -r token <&9; ...; the
    other mount's holders shows the note while held."""
    res = bash(f"""
        set -e
        exec 9<>{m1.path('deploy', 'write')}
        read -r token <&9
        echo "token=$token"
        echo "deploying v42" >&9
        cat {m2.path('deploy', 'holders')}
        exec 9>&-
    """)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("token=") and lines[0][6:].isdigit(), lines
    assert lines[1].startswith("held write " + lines[0][6:] + " "), lines
    assert lines[1].endswith(" deploying v42"), lines


def test_lock_survives_until_last_dup_and_forked_child_close(zk, base, m1, m2):
    holder_script = f"""
        exec 3<&0                     # background jobs get /dev/null
        exec 9>{m1.path('s', 'write')}
        exec 8>&9                     # dup
        exec 9>&-                     # close one descriptor: still held
        ( read line <&3; exec 8>&- ) & # a child inherits fd 8
        exec 8>&-                     # the parent's copy goes: child holds
        echo parent-closed
        wait
    """
    p = subprocess.Popen(["bash", "-c", textwrap.dedent(holder_script)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "parent-closed"
    other = Locker(m2.path("s", "write"))
    queued_behind(zk, base, "the other mount's open to queue")
    assert still_waiting(other, 0.2), \
        "lock released while a child still had the descriptor"
    p.stdin.write("go\n")
    p.stdin.close()
    p.wait(15)
    other.granted()
    other.close()


def test_forked_child_keeps_the_lock_after_opener_exits(zk, base, m1, m2):
    script = f"""
        exec 3<&0
        exec 9>{m1.path('f', 'write')}
        ( read line <&3 ) &   # holds the inherited fd 9 until told
        echo started
    """
    p = subprocess.Popen(["bash", "-c", textwrap.dedent(script)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "started"
    p.wait(15)  # the opener has exited
    other = Locker(m2.path("f", "write"))
    queued_behind(zk, base, "the other mount's open to queue")
    assert still_waiting(other, 0.2), "lock released when the opener exited"
    p.stdin.write("go\n")
    p.stdin.close()  # the background child reads, exits, closes fd 9
    other.granted(timeout=10)
    other.close()
