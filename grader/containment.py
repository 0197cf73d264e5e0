"""What contained a class's code as each submission was graded, as the results recorded it (``environment.sandbox``
and, where a layer was missing, ``exposed``: grader/execute/isolation.py says both): one account for every page and
export that shows the run to the instructor (the dashboard, the review app, Canvas's README.txt). A result reused
from an earlier run keeps the layers of that run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grader.results import EXPOSED, SubmissionResult


@dataclass(frozen=True)
class Containment:
    layers: tuple[tuple[str, int], ...]  # the sandbox's layers (Sandbox.summary) -> submissions
    exposed: tuple[tuple[str, int], ...]  # what student code could reach (Sandbox.exposure) -> submissions
    modes: tuple[str, ...]  # the --sandbox modes the results were graded under
    submissions: int  # every result, run or not
    exposed_modes: tuple[str, ...] = ()  # the modes of those graded with a layer missing

    @property
    def exposed_count(self) -> int:
        return sum(count for _, count in self.exposed)

    def warning(self) -> str:
        """One line for a plain-text export; "" where every submission was fully contained."""
        if not self.exposed:
            return ""
        modes = f", --sandbox {', '.join(self.exposed_modes)}" if self.exposed_modes else ""
        reach = "; ".join(text for text, _ in self.exposed)
        return (f"WARNING: {self.exposed_count} of {self.submissions} submissions were graded with a layer of the "
                f"sandbox missing{modes} ({reach}): a score there may not be the student's own work. Install "
                "bubblewrap and grade again (docs/security.md).")


def containment(results: Sequence[SubmissionResult]) -> Containment:
    return containment_of([dict(r.environment) for r in results])


def containment_of(environments: Sequence[Mapping[str, str]]) -> Containment:
    """The account from the results' environments alone (what the review app keeps of each student)."""
    ran = [e for e in environments if "sandbox" in e]
    layers = Counter(e["sandbox"] for e in ran)
    exposed = Counter(e[EXPOSED] for e in environments if e.get(EXPOSED))
    modes = tuple(sorted({e["sandbox_mode"] for e in ran if "sandbox_mode" in e}))
    exposed_modes = tuple(sorted({e["sandbox_mode"] for e in ran if "sandbox_mode" in e and e.get(EXPOSED)}))
    return Containment(tuple(layers.most_common()), tuple(exposed.most_common()), modes, len(environments),
                       exposed_modes)
