#!/usr/bin/python3
"""The structure doc/design.md promises, checked: recipes/ (the lock
recipes, which know nothing of FUSE) never calls fs/ (the daemon).  A
file calls another when it calls a function defined there; comments and
strings are not calls.  Prints each problem; exit status 1 if any.

Files are cut by concept, not by a line count, and the files of one
concept may call each other (STYLE.md retired the 400-line cap and the
file-level "no circle" rule, which hid upward calls behind function
pointers)."""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sorted(p for d in ("fs", "recipes") for p in (root / d).glob("*.[ch]"))
problems = []


def code_of(text):
    """The text without comments and string or character literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', '""', text)


# A definition: a name and "(" at the start of a line's declarator, the
# body's "{" on a line of its own further on, not static.
DEF = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b(\w+)\(([^;{]*?)\)\s*\n\{",
                 re.M)
defined = {}
code = {}
for p in files:
    if p.suffix != ".c":
        continue
    code[p] = code_of(p.read_text())
    for m in DEF.finditer(code[p]):
        defined.setdefault(m.group(1), p)

calls = {p: set() for p in code}
for p, text in code.items():
    for name in set(re.findall(r"\b(\w+)\s*\(", text)):
        q = defined.get(name)
        if q and q != p:
            calls[p].add(q)

for p, qs in sorted(calls.items()):
    for q in sorted(qs):
        if p.parent.name == "recipes" and q.parent.name == "fs":
            problems.append(f"{p.relative_to(root)} calls "
                            f"{q.relative_to(root)}: recipes/ must not "
                            "call the daemon")

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
