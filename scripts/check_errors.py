#!/usr/bin/env python3
"""Check that every named error text is asserted by a test.

coral's error texts are named constants (`constexpr std::string_view`) in a
`errors` namespace, in each layer's errors.hpp (core/include/coral/core/errors.hpp,
envs/.../errors.hpp, replay/.../errors.hpp, apps/coral/errors.hpp, ...).
Tests assert them exactly. This script lists every such constant and fails
when one is never asserted by a test, so a message cannot go untested.

A constant counts as asserted when a C++ file under tests/ or fuzz/, outside
comments, either

1. names it, qualified by an errors namespace: `errors::NAME` (with any
   leading qualification), `ALIAS::NAME` where the file declares
   `namespace ALIAS = ...::errors;`, or a bare `NAME` after
   `using ...::errors::NAME;` or `using namespace ...::errors;`. Tests use
   the constants only to build the exact text they expect
   (Catch::Message(fmt::format(fmt::runtime(errors::NAME), ...)) and the
   like); or

2. spells its text out: a string literal (adjacent literals joined) contains
   the constant's text with each `{...}` placeholder filled by anything, and
   no more specific constant explains that part of the literal (a text of
   another constant that covers the same span with more fixed characters,
   unless the match sits inside one of that constant's placeholders: a
   replay_buffer "malformed (checksum mismatch)" asserts both texts, while
   "checkpoint 'p' is corrupted: checksum mismatch" asserts only the
   checkpoint one). Constants with fewer than MIN_FIXED fixed characters
   (such as "{}: {}") match too much to count this way; only rule 1 counts
   for them.

Constants that no test can reach (an OS failure, say) go in ALLOWED below,
each with its reason; keep that list tiny.

Usage: check_errors.py [SOURCE_DIR] [--list]
Exits 0 when every constant is asserted (or allowed), 1 otherwise.
"""

import pathlib
import re
import sys

LAYERS = ("core", "channels", "envs", "actors", "replay", "training", "learners", "distributed", "apps")
TEST_DIRS = ("tests", "fuzz")
SOURCE_SUFFIXES = {".hpp", ".cpp", ".h", ".cc"}
MIN_FIXED = 8

# name -> why no test can provoke it. Keep this tiny.
ALLOWED: dict[str, str] = {
    "mpi_thread_level": "Debian's OpenMPI provides MPI_THREAD_MULTIPLE; no test can make it give less",
    "wire_too_big": "needs one message over 2 GiB (a segment of half a billion floats)",
}

NAMESPACE_OPEN = re.compile(r"\bnamespace\s+((?:\w+::)*errors)\s*\{")
CONSTANT = re.compile(r"\bconstexpr\s+std::string_view\s+(\w+)\s*=")
ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::)?(?:\w+::)*errors\s*;")
USING_NAMESPACE = re.compile(r"\busing\s+namespace\s+(?:::)?(?:\w+::)*errors\s*;")
USING_NAME = re.compile(r"\busing\s+(?:::)?(?:\w+::)*errors::(\w+)\s*;")
RAW_OPEN = re.compile(r'(?<![\w])(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "?": "?"}


def decode(body: str) -> str:
    """The value of an ordinary literal's body (the common escapes)."""

    def one(m: re.Match) -> str:
        escape = m.group(1)
        if escape.startswith("x") and len(escape) > 1:
            return chr(int(escape[1:], 16))
        return ESCAPES.get(escape, escape)

    return re.sub(r"\\(x[0-9a-fA-F]+|.)", one, body)


def scan(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Split C++ source into code and string literals.

    Returns the code with comments and literals blanked (newlines and the
    positions of literals kept, as `""`), and each run of adjacent string
    literals as (its position in the returned code, joined value).
    """
    code, literals = [], []
    code_len = 0
    i, n = 0, len(text)
    joined, start, last_end = None, 0, 0
    while i < n:
        raw = RAW_OPEN.match(text, i) if text[i] in "uULR" else None
        if raw:
            close = text.find(")" + raw.group(1) + '"', raw.end())
            close = n if close < 0 else close
            value, end = text[raw.end():close], min(close + len(raw.group(1)) + 2, n)
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            value, end = decode(text[i + 1:j]), min(j + 1, n)
        else:
            value = None
        if value is not None:
            if joined is not None and not text[last_end:i].strip():
                joined += value
            else:
                if joined is not None:
                    literals.append((start, joined))
                joined, start = value, code_len
            code.append('""')
            code_len += 2
            last_end = i = end
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            code.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            code_len += j - i
            i = j
        elif text[i] == "'" and not (i > 0 and text[i - 1].isdigit()):  # not a digit separator (100'000)
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            code.append("' '")
            code_len += 3
            i = min(j + 1, n)
        else:
            code.append(text[i])
            code_len += 1
            i += 1
    if joined is not None:
        literals.append((start, joined))
    return "".join(code), literals


def find_constants(root: pathlib.Path) -> list[tuple[str, str, str]]:
    """Every (name, header, text) declared inside an `errors` namespace."""
    found = []
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            if "errors" not in text:
                continue
            code, literals = scan(text)
            for match in NAMESPACE_OPEN.finditer(code):
                depth, end = 1, match.end()
                while end < len(code) and depth:
                    depth += {"{": 1, "}": -1}.get(code[end], 0)
                    end += 1
                for constant in CONSTANT.finditer(code, match.end(), end):
                    value = next((v for at, v in literals if at > constant.end()), "")
                    found.append((constant.group(1), str(path.relative_to(root)), value))
    return found


class Pattern:
    """A constant's text as a regex: fixed parts are groups, placeholders `.*?`."""

    def __init__(self, name: str, text: str):
        self.name = name
        fixed = PLACEHOLDER.split(text)
        self.fixed_chars = sum(len(part) for part in fixed)
        self.regex = re.compile("".join(f"({re.escape(p)})" + ("(.*?)" if k < len(fixed) - 1 else "")
                                        for k, p in enumerate(fixed)), re.S)

    def matches(self, literal: str) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
        """Each (span, placeholder spans) where the text occurs in literal."""
        out, pos = [], 0
        while pos <= len(literal):
            m = self.regex.search(literal, pos)
            if not m:
                break
            holes = [m.span(g) for g in range(2, (m.re.groups or 0) + 1, 2)]
            out.append((m.span(), holes))
            pos = m.start() + 1
        return out


def spelled_out(literal: str, patterns: list[Pattern]) -> set[str]:
    """Names of the constants whose text literal asserts (rule 2)."""
    hits = {p.name: (p, p.matches(literal)) for p in patterns if p.fixed_chars >= MIN_FIXED}
    hits = {name: v for name, v in hits.items() if v[1]}
    asserted = set()
    for name, (pattern, spans) in hits.items():
        for span, _ in spans:
            explained = any(
                other.fixed_chars > pattern.fixed_chars and o_span[0] <= span[0] and span[1] <= o_span[1]
                and not any(h[0] <= span[0] and span[1] <= h[1] for h in holes)
                for other_name, (other, other_spans) in hits.items() if other_name != name
                for o_span, holes in other_spans)
            if not explained:
                asserted.add(name)
                break
    return asserted


def asserted_names(root: pathlib.Path, patterns: list[Pattern]) -> dict[str, list[str]]:
    """Name -> test files that assert it (rule 1 or rule 2)."""
    refs: dict[str, list[str]] = {}
    for directory in TEST_DIRS:
        for path in sorted((root / directory).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            code, literals = scan(path.read_text(encoding="utf-8"))
            qualifiers = {"errors"} | set(ALIAS.findall(code))
            names = {m.group(2) for m in re.finditer(r"\b(\w+)::(?=(\w+)\b)", code) if m.group(1) in qualifiers}
            names |= set(USING_NAME.findall(code))
            if USING_NAMESPACE.search(code):
                names |= set(re.findall(r"\b\w+\b", code))
            for _, literal in literals:
                names |= spelled_out(literal, patterns)
            for name in names:
                refs.setdefault(name, []).append(str(path.relative_to(root)))
    return refs


def main(argv: list[str]) -> int:
    args = [a for a in argv[1:] if not a.startswith("--")]
    listing = "--list" in argv[1:]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    constants = find_constants(root)
    if not constants:
        print(f"check_errors: no errors constants found under {root}", file=sys.stderr)
        return 1
    refs = asserted_names(root, [Pattern(name, text) for name, _, text in constants])
    missing = []
    for name, header, _ in constants:
        if name in refs:
            status = "asserted in " + ", ".join(refs[name])
        elif name in ALLOWED:
            status = "allowed: " + ALLOWED[name]
        else:
            status = "NOT ASSERTED"
            missing.append((name, header))
        if listing:
            print(f"{header}: {name}: {status}")
    stale = sorted(set(ALLOWED) - {name for name, _, _ in constants})
    for name in stale:
        print(f"check_errors: allow-list names '{name}', which is no longer a constant", file=sys.stderr)
    for name, header in missing:
        print(f"check_errors: {header}: '{name}' is never asserted by a test under tests/ or fuzz/", file=sys.stderr)
    print(f"check_errors: {len(constants)} constants, {len(missing)} not asserted, {len(ALLOWED)} allowed")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
