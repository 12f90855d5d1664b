#!/usr/bin/python3
"""The structure doc/design.md describes, checked against the sources.

Rules by module, not by line count (files are cut by concept):
  1. recipes/ (the lock recipes, which know nothing of FUSE) never calls
     fs/ (the daemon), nor does fs/ include recipes' private headers.
  2. The session (session.c, session_clock.c, session_acl.c, watch.c,
     queue.c) never names a lock request: it calls its members, watches
     and listing waiters through the callbacks they carry.
  3. Only the lock request machine writes a request's phase, in one
     function (lr_to in recipes/lockreq.c, which checks each move).
  4. One way to take the session's mutex: session_enter (recipes/
     internal.h), and to drop it: session_leave, which runs the notices
     posted meanwhile.  Only a function that waits on one of the
     session's conditions takes it raw (pthread_cond_wait needs the
     mutex), and one that runs its notices itself drops it raw.
  5. The session's side (rule 2's files, and the hold limits' table and
     the resource znodes: maxhold.c, resource.c) never calls the request's
     side (lockreq.c and its kinds, and the features that ride on a
     request: revoke.c, holdlimit.c, waitgraph.c): the session reaches a
     request through its members' callbacks only.
  6. doc/design.md's module list ("Modules: who calls whom") names every
     source file and, for each, exactly the files it calls; its lock list
     ("Locks and their order") names every file that declares a mutex,
     and each file it names for a lock declares one.

A file calls another when it calls a function defined there; comments and
strings are not calls.  Prints each problem; exit status 1 if any.

    structure.py ROOT            check
    structure.py ROOT --print    print the module list design.md should hold
"""
import re
import sys
from pathlib import Path

args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = Path(args[0] if args else ".")
PRINT = "--print" in sys.argv
DIRS = ("fs", "recipes")
SESSION = {"session.c", "session_clock.c", "session_acl.c", "watch.c",
           "queue.c"}
SESSION_SIDE = SESSION | {"maxhold.c", "resource.c"}
REQUEST_SIDE = {"lockreq.c", "multilock.c", "peerlease.c", "revoke.c",
                "holdlimit.c", "waitgraph.c"}
PRIVATE = {"lr.h", "internal.h", "watchtab.h", "heartbeat.h", "notice.h"}
problems = []


def code_of(text):
    """The text without comments and string or character literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', '""', text)


def functions(text):
    """(name, body) of each function defined in the code text: a name and
    "(" at the start of a line, the body's "{" and "}" at its start too."""
    for m in re.finditer(r"^[A-Za-z_][^\n;{}]*?\b(\w+)\([^;{}]*?\)\s*\n\{\n"
                         r"(.*?)^\}", text, re.M | re.S):
        yield m.group(1), m.group(2)


files = sorted(p for d in DIRS for p in (root / d).glob("*.[ch]"))
code = {p: code_of(p.read_text()) for p in files}
rel = {p: f"{p.parent.name}/{p.name}" for p in files}

# Who defines what: public functions of .c files, and the static inline
# functions of headers (which are calls into that header's module).
defined = {}
for p in files:
    for name, _ in functions(code[p]):
        line = re.search(r"^[^\n]*\b" + name + r"\(", code[p], re.M).group(0)
        if p.suffix == ".c" and not line.startswith("static"):
            defined.setdefault(name, p)
for p in files:
    if p.suffix == ".c":
        continue
    c = p.with_suffix(".c")
    for name, _ in functions(code[p]):
        defined.setdefault(name, c if c in code else p)

calls = {p: set() for p in files if p.suffix == ".c"}
for p in calls:
    for name in set(re.findall(r"\b(\w+)\s*\(", code[p])):
        q = defined.get(name)
        if q and q != p and q.suffix == ".c":
            calls[p].add(q)

# 1. recipes/ never calls fs/; fs/ uses recipes' public headers only.
for p, qs in sorted(calls.items()):
    for q in sorted(qs):
        if p.parent.name == "recipes" and q.parent.name == "fs":
            problems.append(f"{rel[p]} calls {rel[q]}: recipes/ must not "
                            "call the daemon")
for p in files:
    if p.parent.name != "fs":
        continue
    for h in re.findall(r'#include "([\w.]+)"', p.read_text()):
        if h in PRIVATE:
            problems.append(f"{rel[p]} includes recipes/{h}, which is "
                            "private to recipes/")

# 2. The session never names a lock request.
for p in files:
    if p.parent.name == "recipes" and p.name in SESSION:
        for m in re.finditer(r"\b(zkl_lockreq|lr_\w+|lockreq_\w+|"
                             r"multilock_\w+|peerlease_\w+)\b", code[p]):
            line = code[p].count("\n", 0, m.start()) + 1
            problems.append(f"{rel[p]}:{line}: names {m.group(1)}: the "
                            "session must not name a lock request")

# 3. Only lr_to writes a phase.
for p in files:
    for name, body in functions(code[p]):
        if re.search(r"->phase\s*=[^=]", body) and not (
                rel[p] == "recipes/lockreq.c" and name == "lr_to"):
            problems.append(f"{rel[p]}: {name} writes a phase: only lr_to "
                            "(recipes/lockreq.c) may")

# 4. The session's mutex is taken by session_enter, or raw only around a
#    wait on one of its conditions; it is dropped by session_leave, or raw
#    by a function that then runs its notices itself (notice_run_all).
for p in files:
    if p.parent.name != "recipes":
        continue
    for name, body in functions(code[p]):
        waits = re.search(r"pthread_cond_(timed)?wait\(", body)
        # The session's mutex: a session's `lock` (s->lock); a leaf lock
        # of a file's own (tls.c's) is named in design.md's lock list.
        if re.search(r"pthread_mutex_lock\(&\w+->lock\)", body) and \
                name != "session_enter" and not waits:
            problems.append(f"{rel[p]}: {name} takes the session's mutex "
                            "raw: use session_enter/session_leave")
        if re.search(r"pthread_mutex_unlock\(&\w+->lock\)", body) and \
                name not in ("session_leave", "zkl_mutex_is_locked") and \
                not waits and \
                "notice_run_all(" not in body:
            problems.append(f"{rel[p]}: {name} drops the session's mutex "
                            "raw, and its notices would not run: use "
                            "session_leave")


# 5. The session's side never calls the request's side.
for p, qs in sorted(calls.items()):
    for q in sorted(qs):
        if p.parent.name == q.parent.name == "recipes" and \
                p.name in SESSION_SIDE and q.name in REQUEST_SIDE:
            problems.append(f"{rel[p]} calls {rel[q]}: the session's side "
                            "must not call the request's side (through a "
                            "member's callback instead)")


# 6. design.md's module list.
def module_list():
    out = []
    for d in DIRS:
        out.append(f"{d}/")
        for p in sorted((p for p in calls if p.parent.name == d),
                        key=lambda p: p.name):
            qs = sorted(calls[p], key=lambda q: (q.parent.name != d,
                                                 rel[q]))
            names = [q.name if q.parent.name == d else rel[q] for q in qs]
            line = f"  {p.name:<16}→ "
            text = ", ".join(names) if names else "(nothing)"
            # wrap at 76 columns under the arrow
            words, cur = text.split(" "), line
            lines = []
            for w in words:
                if len(cur) + len(w) + 1 > 76 and cur.strip() != "→":
                    lines.append(cur.rstrip())
                    cur = " " * 20
                cur += w + " "
            lines.append(cur.rstrip())
            out.extend(lines)
    return out


if PRINT:
    print("\n".join(module_list()))
    sys.exit(0)

design = (root / "doc" / "design.md").read_text()
m = re.search(r"## Modules: who calls whom\n.*?```\n(.*?)```", design, re.S)
if not m:
    problems.append("doc/design.md: no module list under "
                    "'## Modules: who calls whom'")
else:
    want = module_list()
    have = m.group(1).rstrip("\n").split("\n")
    if have != want:
        problems.append("doc/design.md's module list differs from the "
                        "calls in the sources; the list they make "
                        f"(tests/static/structure.py {root} --print):")
        problems.extend("    " + line for line in want)

locks = re.search(r"### Locks and their order\n(.*?)\n## ", design, re.S)
for p in files:
    if re.search(r"^\s*pthread_mutex_t \w+;", code[p], re.M) and \
            p.name != "held.h" and \
            (not locks or p.name not in locks.group(1)):
        problems.append(f"{rel[p]} declares a mutex that doc/design.md's "
                        "'Locks and their order' does not name")
# ... and every lock it names in a file of ours is declared there (one
# named by another project, libfuse's, names no file).
for m in re.finditer(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)",
                     locks.group(1) if locks else "", re.M | re.S):
    f = re.search(r"\(((?:fs|recipes)/)?(\w+\.[ch])\b", m.group(2))
    if not f:
        continue
    named = [p for p in files if rel[p] == (f.group(1) or "") + f.group(2)
             or not f.group(1) and p.name == f.group(2)]
    if not any(re.search(r"^\s*pthread_mutex_t \w+;", code[p], re.M)
               for p in named):
        problems.append(f"doc/design.md's 'Locks and their order' names "
                        f"lock {m.group(1)} in {f.group(0)[1:]}, which "
                        "declares no mutex")

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
