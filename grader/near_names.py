"""Which names a student defined are near a name the assignment asks for: a misspelling, another case, an underscore
added or dropped, a plural (``masked_sofmax``, ``Masked_Softmax``, ``maskedsoftmax``, ``masked_softmaxes`` for
``masked_softmax``). One rule for the grader, ``grader check`` and the student kit, which all tell a missing name
through grader/check/student.py.

The rule, on the names' keys (case folded, underscores removed: ``Masked_Softmax`` and ``maskedsoftmax`` are both
``maskedsoftmax``), a defined name other than the asked one is near when:

- its key equals the asked name's key (case, underscores); or
- its key is the asked name's key with ``s`` or ``es`` added, or the asked key is its key with one added (plural and
  singular); or
- the two keys are at most ``allowed_edits(asked)`` edits apart, an edit being a letter dropped, added, replaced, or
  two neighbouring letters swapped (the optimal string alignment distance): none for a key of 3 letters or fewer, 1
  for 4 to 7 letters, 2 for 8 or more.

A name the assignment asks for itself (under another question) is never near: it is that question's answer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def name_key(name: str) -> str:
    """``name`` compared without case or underscores."""
    return name.casefold().replace("_", "")


def allowed_edits(asked: str) -> int:
    """How many letter edits a near name may be from ``asked``: short names allow fewer (``q`` is not near ``x``)."""
    length = len(name_key(asked))
    return 0 if length <= 3 else 1 if length <= 7 else 2


def edit_distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance between ``a`` and ``b`` (drops, additions, replacements and swaps of
    neighbouring letters), or ``limit + 1`` when it is larger than ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def _plural(a: str, b: str) -> bool:
    return any(a == b + end or b == a + end for end in ("s", "es"))


def closeness(asked: str, defined: str) -> int | None:
    """How near ``defined`` is to ``asked`` (0 nearest: the same but for case and underscores), or None when not near
    by the rule above."""
    if defined == asked:
        return None
    want, got = name_key(asked), name_key(defined)
    if not got:
        return None
    if want == got:
        return 0
    limit = allowed_edits(asked)
    distance = edit_distance(want, got, max(limit, 2))
    if distance <= limit:
        return distance
    if _plural(want, got):
        return distance
    return None


def near_names(asked: str, defined: Iterable[str], *, taken: Collection[str] = ()) -> tuple[str, ...]:
    """The names in ``defined`` near ``asked``, nearest first (ties in alphabetical order), leaving out the names in
    ``taken`` (those the assignment asks for)."""
    found = [(score, name) for name in set(defined)
             if name not in taken and (score := closeness(asked, name)) is not None]
    return tuple(name for _, name in sorted(found))
