#!/usr/bin/python3
"""The structure doc/design.md promises, checked: every source file of
fs/ and recipes/ under 400 lines, and no cycle among the files' calls (a
file calls another when it calls a function defined there; comments and
strings are not calls).  Prints each problem; exit status 1 if any."""
import re
import sys
from pathlib import Path

LIMIT = 400
root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sorted(p for d in ("fs", "recipes") for p in (root / d).glob("*.[ch]"))
problems = []

for p in files:
    n = len(p.read_text().splitlines())
    if n >= LIMIT:
        problems.append(f"{p.relative_to(root)}: {n} lines (limit {LIMIT})")


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

# Any cycle, by depth-first search.
state = {}


def visit(p, path):
    state[p] = "open"
    for q in sorted(calls[p]):
        if state.get(q) == "open":
            cycle = path[path.index(q):] + [q]
            problems.append("call cycle: " + " -> ".join(
                str(c.relative_to(root)) for c in cycle))
        elif q not in state:
            visit(q, path + [q])
    state[p] = "done"


for p in sorted(calls):
    if p not in state:
        visit(p, [p])

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
