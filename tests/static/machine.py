#!/usr/bin/python3
"""doc/design.md's lock request machine, checked against the code.

The code is what runs; the document must say the same, in both
directions:

  1. The phase moves.  The move table in "The lock request state machine"
     (a fenced block headed "from  to  when": a line `FROM ─► TO  why`,
     FROM left out for the phase above; `FROM  (...)` for a phase with
     no move of its own) against lr_moves[] (recipes/lockreq.c), with
     what lr_to allows every phase besides: "any but GONE ─► itself",
     "─► NEW", "─► GONE", and "GONE ─► itself" for the end.
  2. Any other `A ─► B` (or A → B) of two phases in design.md is a move
     the code allows.
  3. The kinds: the kind table's kinds against enum lr_kind (recipes/
     lr.h), and its last column, the kind's phases ("all", "all but A,
     B", or "A, B, ..."), against lr_kind_phases[].
  4. The holds: the table in "What keeps a lock request alive" against
     enum lr_hold (recipes/lr.h), and "one" or "any number" against
     lr_hold_is_single (recipes/lockreq.c).

Prints each difference with the document's line; exit status 1 if any.

    machine.py ROOT
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
DOC = "doc/design.md"
ARROW = "─►"
problems = []

design = (root / DOC).read_text()
lr_h = (root / "recipes" / "lr.h").read_text()
lockreq_c = (root / "recipes" / "lockreq.c").read_text()


def code_of(text):
    """C text without its comments."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def line_of(pos):
    return design.count("\n", 0, pos) + 1


def fail(what):
    problems.append(what)


code = code_of(lr_h) + code_of(lockreq_c)


def enum(name):
    """The members of enum `name`, less a count at its end (one that
    sizes an array: LR_HOLDS)."""
    m = re.search(r"\benum\s+" + name + r"\s*\{(.*?)\}", code, re.S)
    if not m:
        fail(f"recipes/lr.h: no enum {name}")
        return []
    names = [re.match(r"\s*(\w+)", part).group(1)
             for part in m.group(1).split(",") if part.strip()]
    if names and re.search(r"\w\[\s*" + names[-1] + r"\s*\]", code):
        names.pop()
    return names


def table(name):
    """{index: expression} of a C table `name[...] = { [I] = E, ... };`."""
    m = re.search(r"\b" + name + r"\[[^]]*\]\s*=\s*\{(.*?)\};", code, re.S)
    if not m:
        fail(f"recipes/lockreq.c: no table {name}[]")
        return {}
    parts = re.split(r"\[\s*(\w+)\s*\]\s*=", m.group(1))
    return {parts[i]: parts[i + 1].strip().rstrip(",").strip()
            for i in range(1, len(parts), 2)}


phases = [p[len("PH_"):] for p in enum("lr_phase")]
PHASE = {p: i for i, p in enumerate(phases)}
kinds = enum("lr_kind")
holds = enum("lr_hold")


def phase_set(expr, what):
    """The phases a C expression of PH() bits (with ~, &, | and
    LR_PHASES_ALL) stands for."""
    py = expr.replace("LR_PHASES_ALL", str((1 << len(phases)) - 1))
    py = re.sub(r"PH\(PH_(\w+)\)", lambda m: f"(1<<{PHASE[m.group(1)]})"
                if m.group(1) in PHASE else m.group(0), py)
    if not re.fullmatch(r"[\s()|&~<0-9]*", py):
        fail(f"recipes/lockreq.c: {what} = {expr}: this test cannot read "
             "it (tests/static/machine.py reads PH(PH_X), |, &, ~ and "
             "LR_PHASES_ALL)")
        return set()
    bits = eval("(" + py + ")") & ((1 << len(phases)) - 1)
    return {p for p in phases if bits & (1 << PHASE[p])}


# ---- 1. The moves: the code's ------------------------------------------

code_moves = set()
for frm, expr in table("lr_moves").items():
    for to in phase_set(expr, f"lr_moves[{frm}]"):
        code_moves.add((frm[len("PH_"):], to))
# What lr_to allows every phase but the end, and the end itself.
m = re.search(r"may\s*=\s*from\s*==\s*PH_(\w+)\s*\?\s*PH\(PH_(\w+)\)\s*:"
              r"\s*lr_moves\[from\]((?:\s*\|\s*PH\(\w+\))*)\s*;", code)
if not m or m.group(1) != m.group(2):
    fail("recipes/lockreq.c: lr_to's `may` is not of the shape this test "
         "reads (from == PH_END ? PH(PH_END) : lr_moves[from] | PH(from) "
         "| PH(PH_X) ...): update tests/static/machine.py")
    end, extras = "GONE", set()
else:
    end = m.group(1)
    extras = {"itself" if x == "from" else x[len("PH_"):]
              for x in re.findall(r"PH\((\w+)\)", m.group(3))}
    code_moves |= {(f"any but {end}", x) for x in extras}
    code_moves.add((end, "itself"))

# ---- 1. The moves: the document's --------------------------------------

section = re.search(r"^## The lock request state machine\n(.*?)^## ",
                    design, re.S | re.M)
block = section and re.search(r"^```\n( *from +to +when[^\n]*\n)(.*?)^```",
                              section.group(1), re.S | re.M)
doc_moves = {}  # move: line
if not block:
    fail(f"{DOC}: no move table (a fenced block headed 'from  to  when') "
         "in '## The lock request state machine'")
else:
    start = section.start(1) + block.start(2)
    name = r"(?:[A-Z]+|any but [A-Z]+)"
    frm = None
    pos = start
    for text in block.group(2).split("\n")[:-1]:
        where = f"{DOC}:{line_of(pos)}"
        pos += len(text) + 1
        m = re.fullmatch(r" (" + name + r")?\s+" + ARROW +
                         r" (\w+)(?:\s{2,}\S.*)?", text)
        if m:
            frm = m.group(1) or frm
            to = m.group(2)
            if frm is None:
                fail(f"{where}: a move with no phase to come from")
            elif to != "itself" and to not in PHASE:
                fail(f"{where}: {to} is no phase (enum lr_phase)")
            elif (frm, to) in doc_moves:
                fail(f"{where}: {frm} {ARROW} {to} again")
            else:
                doc_moves[(frm, to)] = where
            continue
        m = re.fullmatch(r" ([A-Z]+)\s+\(.*", text)
        if m:  # a phase with no move of its own
            frm = m.group(1)
            if any(f == frm for f, _ in code_moves):
                fail(f"{where}: {frm} has moves in lr_moves[], which this "
                     "line says it has not")
            continue
        if re.fullmatch(r" {20,}\S.*", text):
            continue  # a why, continued
        fail(f"{where}: this test cannot read '{text.strip()}' (a move is "
             f"' FROM  {ARROW} TO  why')")
        frm = None
    for frm_ in {f for f, _ in doc_moves}:
        if not frm_.startswith("any but ") and frm_ not in PHASE:
            fail(f"{DOC}: {frm_} is no phase (enum lr_phase)")
    for move, where in sorted(doc_moves.items()):
        if move not in code_moves:
            fail(f"{where}: draws {move[0]} {ARROW} {move[1]}, which "
                 "lr_moves[] and lr_to (recipes/lockreq.c) do not allow")
    for move in sorted(code_moves - set(doc_moves)):
        fail(f"{DOC}:{line_of(start)}: the move table lacks {move[0]} "
             f"{ARROW} {move[1]}, which lr_moves[] and lr_to "
             "(recipes/lockreq.c) allow")


# ---- 2. Every other arrow between two phases ----------------------------

def allowed(a, b):
    return (a, b) in code_moves or (a == b and a != end) or \
        (a != end and b in extras)


skip = range(section.start(1) + block.start(2), section.start(1) +
             block.end(2)) if block else range(0)
names = "|".join(sorted(PHASE, key=len, reverse=True))
for m in re.finditer(r"\b(" + names + r")\b(?=\s*(?:─+►|→|->)\s*(" + names +
                     r")\b)", design):
    if m.start() not in skip and not allowed(m.group(1), m.group(2)):
        fail(f"{DOC}:{line_of(m.start())}: draws {m.group(1)} {ARROW} "
             f"{m.group(2)}, which lr_moves[] and lr_to "
             "(recipes/lockreq.c) do not allow")

# ---- 3. The kinds and their phases --------------------------------------

kind_phases = {k: phase_set(e, f"lr_kind_phases[{k}]")
               for k, e in table("lr_kind_phases").items()}
for k in kinds:
    if k not in kind_phases:
        fail(f"recipes/lockreq.c: lr_kind_phases[] has no {k}")


def doc_rows(name_re):
    """design.md's table rows whose first cell is `NAME` (matching
    name_re), each as (NAME, its last cell, where), the rows named twice
    failed; and the names with where each is."""
    rows, seen = [], {}
    for m in re.finditer(r"^\| `(" + name_re + r")` \|.*\| ([^|]+?) \|$",
                         design, re.M):
        name, where = m.group(1), f"{DOC}:{line_of(m.start())}"
        if name in seen:
            fail(f"{where}: {name} again")
            continue
        seen[name] = where
        rows.append((name, m.group(2), where))
    return rows, seen


doc_kinds = {}
for kind, text, where in doc_rows(r"LR_(?!HOLD_)[A-Z_]+")[0]:
    doc_kinds[kind] = where
    if kind not in kinds:
        fail(f"{where}: {kind} is no kind (enum lr_kind, recipes/lr.h)")
        continue
    words = re.fullmatch(r"all(?: but ([A-Z, ]+))?|([A-Z, ]+)", text)
    if not words:
        fail(f"{where}: this test cannot read {kind}'s phases '{text}' "
             "(all, all but A, B, or A, B, ...)")
        continue
    listed = {w.strip() for w in (words.group(1) or words.group(2) or
                                  "").split(",") if w.strip()}
    for p in listed - set(PHASE):
        fail(f"{where}: {p} is no phase (enum lr_phase)")
    said = set(phases) - listed if text.startswith("all") else listed
    if kind in kind_phases and said != kind_phases[kind]:
        fail(f"{where}: {kind}'s phases are "
             f"{', '.join(p for p in phases if p in said)}; "
             "lr_kind_phases[] (recipes/lockreq.c) says "
             f"{', '.join(p for p in phases if p in kind_phases[kind])}")
for k in kinds:
    if k not in doc_kinds:
        fail(f"{DOC}: the kind table has no {k} (enum lr_kind, recipes/lr.h)")

# ---- 4. The holds --------------------------------------------------------

m = re.search(r"lr_hold_is_single\(enum lr_hold h\)\s*\{\s*return\s+"
              r"((?:h != LR_HOLD_\w+\s*(?:&&\s*)?)+);", code)
if not m:
    fail("recipes/lockreq.c: lr_hold_is_single is not of the shape this "
         "test reads (return h != LR_HOLD_X && ...;): update "
         "tests/static/machine.py")
many = set(re.findall(r"LR_HOLD_\w+", m.group(1))) if m else set()
hold_rows, doc_holds = doc_rows(r"LR_HOLD_\w+")
for hold, count, where in hold_rows:
    if hold not in holds:
        fail(f"{where}: {hold} is no hold (enum lr_hold, recipes/lr.h)")
    elif count not in ("one", "any number"):
        fail(f"{where}: {hold}: 'one' or 'any number', not '{count}'")
    elif (count == "any number") != (hold in many):
        fail(f"{where}: {hold} is {count}; lr_hold_is_single "
             "(recipes/lockreq.c) says "
             f"{'any number' if hold in many else 'one'}")
for h in holds:
    if h not in doc_holds:
        fail(f"{DOC}: the hold table has no {h} (enum lr_hold, "
             "recipes/lr.h)")

for line in problems:
    print(line)
sys.exit(1 if problems else 0)
