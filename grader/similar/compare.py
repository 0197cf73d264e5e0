"""Which students' code shares more than the assignment's template and the textbook: winnowed token k-grams, as in
MOSS (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003).

Each submission is read as a sequence of tokens in which comments and layout are dropped, every string literal is
``S`` and every name the code could have chosen itself (variables, arguments, functions, classes, attributes it
sets) is ``V``; keywords, builtins and the libraries' names (``torch``, ``bmm``, ``softmax``: whatever the
boilerplate reaches through a dot) stay as they are, so renaming variables or reformatting hides nothing while two
students calling the same library functions in their own way share little. Every run of ``K`` tokens that also occurs
in the boilerplate (the template, the textbook) is struck out before comparing, so code both students took from
there is never counted.

Candidates come from the winnowed fingerprints (any common run of ``K + WINDOW - 1`` tokens is sure to be seen) through
an index from fingerprint to students, so a class costs about its total size rather than its number of pairs; a
fingerprint held by more than ``common`` students is set aside as common knowledge (MOSS's ``-m``). Each candidate
pair is then compared on all its k-grams, for its shares and the regions to mark.

Hashes are of integers only (a token's CRC-32, never ``hash()`` of a string, which changes with every process), so the
same class gives the same report on every run.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import re
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise

K = 15  # tokens in a k-gram: about a line and a half of code, longer than the idioms everyone writes alike
WINDOW = 8  # winnowing window: a common run of K + WINDOW - 1 = 22 tokens (two lines) always yields a fingerprint
MIN_TOKENS = 40  # a pair is reported only when it shares at least this many tokens (3 to 4 lines)
COMMON_AT_LEAST = 10  # a fingerprint is common knowledge only when more students than this (and `COMMON_SHARE`)...
COMMON_SHARE = 0.2  # ...of the class hold it

_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>[rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
                               |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<number>0[xXoObB][0-9a-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?)
  | (?P<name>[^\W\d]\w*)
  | (?P<space>\s+)
  | (?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%@&|^=<>!]=|.)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class Region:
    """One stretch of code the two students share: character spans ``[start, end)`` in each one's source."""

    a: tuple[int, int]
    b: tuple[int, int]
    a_lines: tuple[int, int]  # first and last line (1-based) of the span in a's source
    b_lines: tuple[int, int]
    tokens: int  # tokens of a's code in the region


@dataclass(frozen=True)
class Pair:
    a: str  # the student first in sorted order
    b: str
    share_a: float  # of a's own code (its tokens outside the boilerplate), the part also in b's: 0..1
    share_b: float
    regions: tuple[Region, ...]  # in the order they come in a's source
    b_spans: tuple[tuple[int, int], ...] = ()  # every shared stretch of b's (some may pair with no region of a's)

    @property
    def share(self) -> float:
        """The larger share: a student who copied one helper into a short submission is found by their own share."""
        return max(self.share_a, self.share_b)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.regions)


@dataclass(frozen=True)
class _Doc:
    text: str
    starts: tuple[int, ...]  # each token's first character
    ends: tuple[int, ...]
    grams: tuple[int, ...]  # the hash of the k-gram starting at each token
    boilerplate: bytes  # 1 for each token some boilerplate k-gram covers
    line_starts: tuple[int, ...]

    @property
    def own(self) -> int:
        """Tokens no boilerplate k-gram covers: the student's own code."""
        return len(self.boilerplate) - sum(self.boilerplate)

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)


def _raw_tokens(text: str) -> Iterable[tuple[str, str, int, int]]:
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind not in ("comment", "space"):
            yield kind or "op", match.group(), match.start(), match.end()


def _bound_names(text: str) -> set[str]:
    """Names the code chooses itself: what it assigns, its arguments, functions, classes and the attributes it sets.
    Code that does not parse (the textbook's, extracted without indentation) is read for ``name =`` instead."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tokens = list(_raw_tokens(text))
        return {t[1] for t, after in pairwise(tokens) if t[0] == "name" and after[1] == "="}
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def library_names(boilerplate: Sequence[str]) -> frozenset[str]:
    """The names kept as they are: keywords, builtins, and the names the boilerplate reaches through a dot
    (``torch``, ``nn``, ``bmm``) that it does not choose itself."""
    dotted: set[str] = set()
    bound: set[str] = set()
    for text in boilerplate:
        tokens = list(_raw_tokens(text))
        for before, token, after in zip([("", "", 0, 0), *tokens], tokens, [*tokens[1:], ("", "", 0, 0)]):
            if token[0] == "name" and (before[1] == "." or after[1] == "."):
                dotted.add(token[1])
        bound |= _bound_names(text)
    return frozenset((dotted - bound) | set(keyword.kwlist) | set(dir(builtins)))


def _hash(token: str) -> int:
    return zlib.crc32(token.encode("utf-8"))


def _read(text: str, keep: frozenset[str], boilerplate: frozenset[int] = frozenset()) -> _Doc:
    normal: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for kind, value, start, end in _raw_tokens(text):
        if kind == "string":
            value = "S"
        elif kind == "name" and value not in keep:
            value = "V"
        normal.append(_hash(value))
        starts.append(start)
        ends.append(end)
    grams = tuple(hash(tuple(normal[i:i + K])) for i in range(len(normal) - K + 1))  # ints: same on every run
    covered = bytearray(len(normal))
    for i, gram in enumerate(grams):
        if gram in boilerplate:
            covered[i:i + K] = b"\x01" * K
    line_starts = (0, *(m.end() for m in re.finditer("\n", text)))
    return _Doc(text, tuple(starts), tuple(ends), grams, bytes(covered), line_starts)


def _winnow(grams: Sequence[int]) -> set[int]:
    """The smallest hash of every window of WINDOW k-grams (robust winnowing: the rightmost smallest)."""
    if len(grams) <= WINDOW:
        return set(grams[:1]) if grams else set()
    chosen: set[int] = set()
    for i in range(len(grams) - WINDOW + 1):
        chosen.add(min(grams[i:i + WINDOW]))
    return chosen


def _runs(mask: Sequence[int]) -> list[tuple[int, int]]:
    """Maximal runs ``[first, last]`` of set entries."""
    runs, first = [], None
    for i, bit in enumerate((*mask, 0)):
        if bit and first is None:
            first = i
        elif not bit and first is not None:
            runs.append((first, i - 1))
            first = None
    return runs


def _regions(a: _Doc, b: _Doc, banned: frozenset[int]) -> tuple[tuple[Region, ...], tuple[tuple[int, int], ...],
                                                                 int, int]:
    """The stretches of their own code a and b share (tokens under a k-gram both have that is not boilerplate),
    each of a's paired with the stretch of b's where its first shared k-gram is; and the tokens covered in each."""
    shared = (set(a.grams) & set(b.grams)) - banned
    first_in_b: dict[int, int] = {}
    for j, gram in enumerate(b.grams):
        if gram in shared:
            first_in_b.setdefault(gram, j)
    covered_a, covered_b = bytearray(len(a.starts)), bytearray(len(b.starts))
    for i, gram in enumerate(a.grams):
        if gram in shared:
            covered_a[i:i + K] = b"\x01" * K
    for j, gram in enumerate(b.grams):
        if gram in shared:
            covered_b[j:j + K] = b"\x01" * K
    # a shared k-gram may run into boilerplate at its ends: only the students' own tokens count and are marked
    own_a = [c and not o for c, o in zip(covered_a, a.boilerplate)]
    own_b = [c and not o for c, o in zip(covered_b, b.boilerplate)]
    runs_b = _runs(own_b)
    regions = []
    for first, last in _runs(own_a):
        grams = (a.grams[i] for i in range(max(0, first - K + 1), min(last + 1, len(a.grams))))
        j = next((first_in_b[g] for g in grams if g in first_in_b), 0)
        # b's own stretch at or after that k-gram; none when all of it is boilerplate on b's side: the k-gram then
        partner = next((r for r in runs_b if r[1] >= j), (j, min(j + K, len(b.starts)) - 1))
        span_a = (a.starts[first], a.ends[last])
        span_b = (b.starts[partner[0]], b.ends[partner[1]])
        regions.append(Region(span_a, span_b, (a.line(span_a[0]), a.line(span_a[1] - 1)),
                              (b.line(span_b[0]), b.line(span_b[1] - 1)), last - first + 1))
    spans_b = tuple((b.starts[first], b.ends[last]) for first, last in runs_b)
    return tuple(regions), spans_b, sum(own_a), sum(own_b)


def similar_pairs(sources: Mapping[str, str], *, boilerplate: Sequence[str], threshold: float,
                  common: int | None = None) -> list[Pair]:
    """The pairs of students whose code shares at least ``threshold`` (0..1) of either one's own code, most shared
    first. ``sources``: student -> their code; ``boilerplate``: code any student may use (the template, the
    textbook's); ``common``: a fingerprint held by more students than this is nobody's (default: the larger of 10
    and a fifth of the class)."""
    keep = library_names(boilerplate)
    banned: set[int] = set()
    for text in boilerplate:
        banned.update(_read(text, keep).grams)
    frozen = frozenset(banned)
    docs = {student: _read(text, keep, frozen) for student, text in sources.items()}
    holders: dict[int, list[str]] = defaultdict(list)
    for student in sorted(docs):
        for fingerprint in _winnow(docs[student].grams) - frozen:
            holders[fingerprint].append(student)
    limit = common if common is not None else max(COMMON_AT_LEAST, int(COMMON_SHARE * len(docs)))
    shared: dict[tuple[str, str], int] = defaultdict(int)
    set_aside: set[int] = set()
    for fingerprint, students in holders.items():
        if len(students) > limit:
            set_aside.add(fingerprint)
            continue
        for pair in combinations(students, 2):
            shared[pair] += 1
    # set-aside winnowed fingerprints stand for the k-grams near them: banning only those hashes is approximate,
    # which is why `common` should stay well above the size of any group that might share code
    banned_pairs = frozen | frozenset(set_aside)
    pairs = []
    for (a, b), count in shared.items():
        if count * K < MIN_TOKENS // 2:  # too few fingerprints to hold MIN_TOKENS tokens; skip the exact look
            continue
        regions, b_spans, tokens_a, tokens_b = _regions(docs[a], docs[b], banned_pairs)
        if min(tokens_a, tokens_b) < MIN_TOKENS:
            continue
        share_a = min(1.0, tokens_a / docs[a].own) if docs[a].own else 0.0
        share_b = min(1.0, tokens_b / docs[b].own) if docs[b].own else 0.0
        if max(share_a, share_b) >= threshold:
            pairs.append(Pair(a, b, share_a, share_b, regions, b_spans))
    return sorted(pairs, key=lambda p: (-p.share, -p.tokens, p.a, p.b))
