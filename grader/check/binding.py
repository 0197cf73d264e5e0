"""Which of the student's parameters the weights a check sets go into: by name first, then by the module's structure.

One rule for everyone, decided from the names and shapes the student's module declares (never by trying bindings and
keeping the one that passes, which would give marks to code that swaps W_q and W_k):

1. the names the assignment specifies (``W_q.weight``);
2. the same names up to case, and the aliases a question lists (``W_v`` or ``v`` for ``w_v``);
3. the structure: the student's layers (``nn.Linear``, ``nn.LazyLinear``: a ``weight`` and maybe a ``bias``) and bare
   ``nn.Parameter``s whose shapes fit the ones the reference needs (a lazy layer's unknown input size fits any);
   where several fit several, names that say their role (``query_proj`` for ``W_q``) decide, then the order the
   module declares them in.

Where the structure leaves a choice open (three layers fit two places), nothing is bound on a guess: the binding
says why, and the check fails with that message. A name the assignment specifies that the student uses with another
shape is a mistake of its own (a transposed ``W``), reported as such rather than searched for elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Shape = tuple[int | None, ...]  # None: a size a lazy layer does not know yet

EXACT, RENAMED, STRUCTURE = "exact", "renamed", "structure"
LAYER_LEAVES = ("weight", "bias")

# Words that name a parameter's role, each set one role: a layer called query_proj is the W_q of the formula.
ROLE_WORDS = (
    frozenset({"q", "query", "queries", "qry"}),
    frozenset({"k", "key", "keys"}),
    frozenset({"v", "value", "values", "val"}),
    frozenset({"energy", "score", "scores"}),
    frozenset({"o", "out", "output"}),
    frozenset({"c", "combine", "concat"}),
)


@dataclass(frozen=True)
class Naming:
    """How a question binds the weights its checks set. ``strict``: the specified names only (no fallback);
    ``aliases``: other names accepted for one component of a specified name, e.g. ``{"w_v": ("v", "w_e")}``."""

    strict: bool = False
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Found:
    """One parameter of the student's module, in the order ``named_parameters()`` gives (declaration order)."""

    name: str
    shape: Shape | None  # None: a lazy parameter of unknown shape


@dataclass(frozen=True)
class Binding:
    """Where each specified parameter goes: ``bound`` maps the assignment's name to the student's, ``how`` says by
    which step. ``wrong_shape``: specified names the student has with another shape; ``missing``: specified names with
    nothing to go into; ``undecided``: why the structure could not decide (nothing is then set)."""

    bound: Mapping[str, str]
    how: Mapping[str, str]
    shapes: Mapping[str, Shape]  # the specified shapes
    found: tuple[Found, ...]
    missing: tuple[str, ...] = ()
    wrong_shape: Mapping[str, tuple[str, Shape | None]] = field(default_factory=dict)  # -> (student's name, shape)
    undecided: str = ""

    @property
    def exact(self) -> bool:
        return all(how == EXACT for how in self.how.values())

    @property
    def usable(self) -> bool:
        """Whether the weights can be set: what cannot be bound is a mistake the values will show, but a wrong shape
        or an open choice leaves nothing to grade the values with."""
        return not self.undecided and not self.wrong_shape

    @property
    def unused(self) -> tuple[str, ...]:
        """The student's parameters no specified name went into (an extra bias, a layer the formula has no use for)."""
        taken = set(self.bound.values())
        return tuple(f.name for f in self.found if f.name not in taken)

    def renamed(self) -> list[tuple[str, str]]:
        """(the student's unit, the specified unit) for each one bound by a fallback, in the specified order."""
        pairs: list[tuple[str, str]] = []
        for spec, student in self.bound.items():
            if self.how[spec] == EXACT:
                continue
            # A bare parameter found as a layer's weight (W as an nn.Linear) is named by that weight.
            pair = (student if spec == _unit_of(spec) else _unit_of(student), _unit_of(spec))
            if pair not in pairs:
                pairs.append(pair)
        return pairs

    def rename_message(self, owner: str) -> str:
        """'found `W_v` (1 x 8), used as `w_v`: rename it `w_v`', for the check about the parameters."""
        pairs = self.renamed()
        if not pairs:
            return ""
        parts = [f"`{student}` ({_shape_text(self._unit_shape(spec))}) used as `{spec}`" for student, spec in pairs]
        names = _join([f"`{spec}`" for _, spec in pairs])
        return (f"{owner}'s parameters are not named as the assignment specifies: found {_join(parts)}: "
                f"rename {'it' if len(pairs) == 1 else 'them'} {names}")

    def problem(self, owner: str) -> str:
        """Why the weights could not be set, for the student; empty when they could."""
        if self.undecided:
            return f"the grader could not tell which of {owner}'s parameters to set: {self.undecided}"
        if self.wrong_shape:
            parts = [f"`{name}` has shape {_shape_text(shape)}, where the assignment's `{spec}` is "
                     f"{_shape_text(self.shapes[spec])}" for spec, (name, shape) in self.wrong_shape.items()]
            return f"{owner}'s {_join(parts)}"
        return ""

    def _unit_shape(self, spec_unit: str) -> Shape:
        for name, shape in self.shapes.items():
            if _unit_of(name) == spec_unit and (name == spec_unit or name.endswith(".weight")):
                return shape
        return ()


def _unit_of(name: str) -> str:
    """The layer a weight or bias belongs to ("query_proj"), or a bare parameter's own name."""
    owner, _, leaf = name.rpartition(".")
    return owner if leaf in LAYER_LEAVES and owner else name


def _shape_text(shape: Shape | None) -> str:
    if shape is None:
        return "not yet initialised"
    return " x ".join("?" if size is None else str(size) for size in shape) or "a scalar"


def _join(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def fits(found: Shape | None, wanted: Shape) -> bool:
    """A student's shape can take the specified one: the same, or a lazy parameter's with its known sizes equal."""
    if found is None:
        return True
    return len(found) == len(wanted) and all(a is None or a == b for a, b in zip(found, wanted))


def _tokens(name: str) -> set[str]:
    """'queryProj2' -> {'query', 'proj', '2'}: the words of a name's last component."""
    last = name.rpartition(".")[2]
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", last)
    return {t.lower() for t in re.split(r"[^A-Za-z]+|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])", spaced) if t}


def _roles(name: str) -> frozenset[int]:
    words = _tokens(name)
    return frozenset(i for i, role in enumerate(ROLE_WORDS) if words & role)


def _same_name(spec: str, student: str, aliases: Mapping[str, tuple[str, ...]]) -> bool:
    """Component by component, up to case, a component also matching its listed aliases."""
    wanted, have = spec.split("."), student.split(".")
    if len(wanted) != len(have):
        return False
    for a, b in zip(wanted, have):
        accepted = {a.lower(), *(alias.lower() for alias in aliases.get(a, ()))}
        if b.lower() not in accepted:
            return False
    return True


def bind(shapes: Mapping[str, Shape], found: Sequence[Found], naming: Naming | None = None) -> Binding:
    """Bind the specified parameters (name -> shape, in the assignment's order) to the student's ``found`` ones."""
    naming = naming or Naming()
    by_name = {f.name: f for f in found}
    bound: dict[str, str] = {}
    how: dict[str, str] = {}
    wrong: dict[str, tuple[str, Shape | None]] = {}

    def take(spec: str, student: Found, step: str) -> None:
        bound[spec], how[spec] = student.name, step
        if not fits(student.shape, shapes[spec]):
            wrong[spec] = (student.name, student.shape)

    for spec in shapes:  # 1. the specified names
        if spec in by_name:
            take(spec, by_name[spec], EXACT)
    if naming.strict:
        return _finish(shapes, found, bound, how, wrong, "")
    taken = set(bound.values())
    for spec in shapes:  # 2. up to case, and the aliases
        if spec in bound:
            continue
        candidates = [f for f in found if f.name not in taken and (
            _same_name(spec, f.name, naming.aliases)
            or ("." not in spec and _same_name(f"{spec}.weight", f.name, naming.aliases)))]
        if len(candidates) == 1:
            take(spec, candidates[0], RENAMED)
            taken.add(candidates[0].name)
        elif len(candidates) > 1:
            names = _join([f"`{f.name}`" for f in candidates])
            return _finish(shapes, found, bound, how, wrong, f"{names} all match the name `{spec}`: keep only one")
    undecided = _bind_structure(shapes, found, bound, how)
    return _finish(shapes, found, bound, how, wrong, undecided)


def _finish(shapes: Mapping[str, Shape], found: Sequence[Found], bound: dict[str, str], how: dict[str, str],
            wrong: dict[str, tuple[str, Shape | None]], undecided: str) -> Binding:
    order = list(shapes)
    bound = {spec: bound[spec] for spec in order if spec in bound and spec not in wrong}
    return Binding(bound, {spec: how[spec] for spec in bound}, dict(shapes), tuple(found),
                   missing=tuple(spec for spec in order if spec not in bound and spec not in wrong),
                   wrong_shape={spec: wrong[spec] for spec in order if spec in wrong}, undecided=undecided)


@dataclass
class _Unit:
    name: str  # the layer ("W_q") or the bare parameter ("W")
    params: dict[str, Shape | None]  # leaf ("weight", "bias", or "" for a bare parameter) -> shape

    @property
    def is_layer(self) -> bool:
        return "weight" in self.params

    def fits(self, spec: _Unit) -> bool:
        if spec.is_layer != self.is_layer:
            return False
        key = "weight" if spec.is_layer else ""
        if not fits(self.params[key], spec.params[key] or ()):
            return False
        # A bias both have must fit too; one only the student has (or only the reference) is a mistake the values
        # show, not a reason to look elsewhere.
        return "bias" not in spec.params or "bias" not in self.params \
            or fits(self.params["bias"], spec.params["bias"] or ())


def _units(names: Sequence[tuple[str, Shape | None]]) -> list[_Unit]:
    units: dict[str, _Unit] = {}
    for name, shape in names:
        unit, leaf = _unit_of(name), name.rpartition(".")[2]
        leaf = leaf if unit != name else ""
        units.setdefault(unit, _Unit(unit, {})).params[leaf] = shape
    return list(units.values())


def _bind_structure(shapes: Mapping[str, Shape], found: Sequence[Found], bound: dict[str, str],
                    how: dict[str, str]) -> str:
    """3. The specified units nothing was bound to, onto the student's units nothing was bound from; returns why it
    could not decide, or ''."""
    done_spec = {_unit_of(s) for s in bound}
    done_student = {_unit_of(s) for s in bound.values()}
    specs = [u for u in _units(list(shapes.items())) if u.name not in done_spec]
    students = [u for u in _units([(f.name, f.shape) for f in found]) if u.name not in done_student]
    if not specs or not students:
        return ""
    candidates = {s.name: [u for u in students if u.fits(s)] for s in specs}
    chosen: dict[str, _Unit] = {}
    # A specified unit that only one of the student's fits gets it, which may leave another with only one, ...
    progress = True
    while progress:
        progress = False
        for spec in specs:
            options = [u for u in candidates[spec.name] if u not in chosen.values()]
            if spec.name not in chosen and len(options) == 1:
                rivals = [s.name for s in specs if s.name not in chosen and s.name != spec.name
                          and [u for u in candidates[s.name] if u not in chosen.values()] == options]
                if rivals:
                    continue  # two places for one layer: resolved below, as a tie
                chosen[spec.name] = options[0]
                progress = True
    # What is left: groups of specified units that fit the same student units, decided by role words, then order.
    left = [s for s in specs if s.name not in chosen]
    groups: dict[tuple[str, ...], list[_Unit]] = {}
    for spec in left:
        options = tuple(u.name for u in candidates[spec.name] if u not in chosen.values())
        if options:
            groups.setdefault(options, []).append(spec)
    seen: set[str] = set()
    for options, group in groups.items():
        if seen & set(options):
            return (f"{_join([f'`{s.name}`' for s in left])} could each be several of "
                    f"{_join([f'`{u}`' for u in sorted(seen | set(options))])}: use the assignment's names")
        seen |= set(options)
        units = [u for u in students if u.name in options]
        if len(units) != len(group):
            places = _join([f"`{s.name}` ({_shape_text(s.params.get('weight', s.params.get('')))})" for s in group])
            fitting = _join([f"`{u.name}`" for u in units])
            return (f"{fitting} {'all fit' if len(units) > 1 else 'fits'} {places}: name "
                    f"{'them' if len(group) > 1 else 'it'} as the assignment does")
        by_role = _by_role(group, units)
        for spec, unit in zip(group, by_role or units):
            chosen[spec.name] = unit
    for spec in specs:
        unit = chosen.get(spec.name)
        if unit is None:
            continue
        for leaf in spec.params:
            name = f"{spec.name}.{leaf}" if leaf else spec.name
            student = f"{unit.name}.{leaf}" if leaf else unit.name
            if leaf and leaf not in unit.params:
                continue  # a bias the student's layer does not have
            bound[name], how[name] = student, STRUCTURE
    return ""


def _by_role(group: list[_Unit], units: list[_Unit]) -> list[_Unit] | None:
    """The student's units in the group's order when their names say each one's role (one each), else None."""
    ordered = []
    for spec in group:
        roles = _roles(spec.name)
        matching = [u for u in units if roles and _roles(u.name) & roles]
        if len(matching) != 1 or matching[0] in ordered:
            return None
        ordered.append(matching[0])
    return ordered
