#!/usr/bin/python3
"""Every file and function the documents cite, checked against the tree.

A citation of a file split or renamed, or of a function renamed, sends a
reader looking for what is not there.  Documents: README.md, HACKING.md,
doc/*.md, doc/*.scd, and the comments of every C file (fs/, recipes/,
tests/unit/, bench/).  What counts as a citation:

  1. A path in one of the tree's folders (fs/..., recipes/..., tests/...,
     contrib/..., bench/..., doc/..., debian/..., subprojects/...): the
     file or folder exists, or the pattern (doc/*.md, fs/tree.[ch])
     matches one.  A path inside another (/usr/share/doc/...,
     MOUNT/<res>/...) is not ours.  subprojects/ also has what the wraps
     unpack there.
  2. A bare name.c or name.h: a file of that name is in the tree, unless
     the text says whose it is ("SQLite's test_malloc.c").
  3. A name of ours: `name(` anywhere (a call, with or without its
     arguments, diagrams too), any identifier in a backticked
     span of a document, any word of a C comment.  It is ours when it has
     an underscore inside it and ends in _locked, or begins as the tree's
     functions do (lr_, session_, waiter_, ...) or, in capitals, as its
     macros and constants do (LR_, PH_, WAITER_, ...).  The tree's C code
     (comments aside) must then use it, or a file be named so
     (session_clock for session_clock.c).

Prints DOCUMENT:LINE: what it cites and is missing; exit status 1 if any.

    docrefs.py ROOT
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
FOLDERS = ("fs", "recipes", "tests", "contrib", "bench", "doc", "debian",
           "subprojects")
C_FOLDERS = ("fs", "recipes", "tests/unit", "bench")
# Our own code defines names that begin as ours do; tests/unit's fakes of
# the ZooKeeper client (zoo_*) are not ours.
OWN_FOLDERS = ("fs", "recipes", "bench")
# Other projects' names that begin as ours do, which the texts cite (a
# name reported that is another project's goes here).
FOREIGN = {
    "FS_IOC_GETFLAGS", "FS_IOC_FSGETXATTR",  # the kernel's ioctls (fs/)
    "histogram_quantile",  # Prometheus's (doc/operations.md)
}
problems = []

# Comments, and string and character literals, of C text.
C_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|"
                     r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
# Not in a path, an address, a variable or an option already.
OUTSIDE = r"(?<![\w/.<>$~@-])"
PATH = re.compile(OUTSIDE + r"((?:" + "|".join(FOLDERS) +
                  r")/(?:\[ch\]|[\w.@*+/-])*)")
BARE = re.compile(OUTSIDE + r"(?:(\w+'s[\s*]+))?"
                  r"([A-Za-z_]\w*\.(?:[ch]|\[ch\]))(?![\w/])")
WORD = re.compile(OUTSIDE + r"([A-Za-z]\w*_\w*[A-Za-z0-9])\b")
CALL = re.compile(OUTSIDE + r"([A-Za-z_]\w*)\(")

c_files = sorted(p for d in C_FOLDERS for p in (root / d).glob("*.[ch]"))
c_text = {p: p.read_text() for p in c_files}


def without_comments(text):
    """C text with its comments blanked; strings kept: an option's name or
    a message's words are the code's too."""
    return C_NOISE.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'"
                       else " ", text)


# Every word the code uses, and every file's name without its suffix.
used = set()
for text in c_text.values():
    used.update(re.findall(r"[A-Za-z_]\w*", without_comments(text)))
files = {p.name for d in FOLDERS if (root / d).is_dir()
         for p in (root / d).rglob("*") if "apache-" not in str(p)}
used.update(name.split(".")[0] for name in files)

# How our names begin: functions defined (a name and "(" at the start of a
# line), macros and constants (#define, and an enum's members).
ours, OURS = set(), set()
for p, text in c_text.items():
    if p.parent.relative_to(root).as_posix() not in OWN_FOLDERS:
        continue
    code = C_NOISE.sub(" ", text)
    for m in re.finditer(r"^[A-Za-z_][^\n;{}=]*?\b([a-z]\w*)\(", code, re.M):
        if "_" in m.group(1):
            ours.add(m.group(1).split("_")[0])
    for m in re.finditer(r"^#\s*define\s+([A-Z][A-Z0-9]*)_", code, re.M):
        OURS.add(m.group(1))
    for body in re.findall(r"\benum\s+\w*\s*\{(.*?)\}", code, re.S):
        OURS.update(re.findall(r"\b([A-Z][A-Z0-9]*)_\w+", body))

# What the wraps unpack into subprojects/ (made at configure, not kept).
unpacked = set()
for wrap in (root / "subprojects").glob("*.wrap"):
    m = re.search(r"^directory\s*=\s*(\S+)", wrap.read_text(), re.M)
    if m:
        unpacked.add("subprojects/" + m.group(1))


def is_ours(word):
    head = word.split("_")[0]
    return word not in FOREIGN and (word.endswith("_locked") or
                                    head in ours or head in OURS)


def path_exists(path):
    path = path.rstrip(".,:;-")
    if any(path == u or path.startswith(u + "/") for u in unpacked):
        return True
    if re.search(r"[*\[]", path):
        return next(root.glob(path.rstrip("/")), None) is not None
    return (root / path).exists()


def check(where, text, offset_line, spans):
    """Report what `text` (of `where`, starting at line offset_line) cites
    that the tree lacks.  `spans`: the parts whose every word of ours is a
    citation; elsewhere only name() is."""
    def line_of(pos):
        return offset_line + text.count("\n", 0, pos)

    for m in PATH.finditer(text):
        if not path_exists(m.group(1)):
            problems.append(f"{where}:{line_of(m.start())}: cites "
                            f"{m.group(1).rstrip('.,:;-')}, which the tree "
                            "does not have")
    for m in BARE.finditer(text):
        if m.group(1):
            continue  # another project's (libfuse's fuse_lowlevel.c)
        name = m.group(2)
        if name not in files and name.replace(".[ch]", ".c") not in files:
            problems.append(f"{where}:{line_of(m.start(2))}: cites {name}, "
                            "which the tree does not have")
    seen = set()
    for m in CALL.finditer(text):
        name = m.group(1)
        if is_ours(name) and name not in used:
            seen.add(m.start(1))
            problems.append(f"{where}:{line_of(m.start(1))}: cites "
                            f"{name}(), which the tree does not define")
    for start, end in spans:
        for m in WORD.finditer(text, start, end):
            name = m.group(1)
            if m.start(1) in seen or name in used or not is_ours(name):
                continue
            problems.append(f"{where}:{line_of(m.start(1))}: cites {name}, "
                            "which the tree does not have")


DOCS = ["README.md", "HACKING.md",
        *sorted(str(p.relative_to(root)) for p in (root / "doc").glob("*.md")),
        *sorted(str(p.relative_to(root))
                for p in (root / "doc").glob("*.scd"))]
for doc in DOCS:
    text = (root / doc).read_text()
    # Backticked spans outside fenced blocks (a fence's ``` is no span).
    prose = re.sub(r"(?ms)^```.*?^```", lambda m: " " * len(m.group(0)),
                   text)
    spans = [m.span(1) for m in re.finditer(r"`([^`\n]+)`", prose)]
    check(doc, text, 1, spans)

for p, text in c_text.items():
    where = str(p.relative_to(root))
    for m in C_NOISE.finditer(text):
        if m.group(0)[0] != "/":
            continue
        check(where, m.group(0), text.count("\n", 0, m.start()) + 1,
              [(0, len(m.group(0)))])

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
