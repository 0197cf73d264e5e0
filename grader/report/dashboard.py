"""What the class dashboard shows besides the students' rows: the score histogram, per-question and per-check rates."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from grader.points import shown
from grader.results import CRASHED, ERROR, GRADED, MARKED, PASSED, TIMEOUT, Diagnosis, SubmissionResult

BINS = 10  # of the maximum score: 0-9%, 10-19%, ..., 90-100%


@dataclass(frozen=True)
class QuestionStats:
    id: str
    title: str
    max_score: float
    average: float  # percent of the question's points, over the submissions that ran
    full_marks: int
    ran: int


@dataclass(frozen=True)
class CheckStats:
    check_id: str
    question: str
    title: str
    visibility: str
    points: float
    passed: int
    errors: int  # the student's code raised, timed out or crashed
    ran: int

    @property
    def rate(self) -> float:
        return 100 * self.passed / self.ran if self.ran else 0.0


@dataclass(frozen=True)
class MisconceptionStats:
    question: str
    variant: str
    name: str
    explanation: str
    students: int  # graded submissions with a check that matched it


@dataclass(frozen=True)
class ClassStats:
    submissions: int
    ran: int
    mean: float | None
    median: float | None
    questions: tuple[QuestionStats, ...]
    checks: tuple[CheckStats, ...]
    histogram: tuple[int, ...]  # submissions per bin of the score's percent, all submissions
    misconceptions: tuple[MisconceptionStats, ...] = ()  # most students first


def class_stats(results: Sequence[SubmissionResult], max_score: float) -> ClassStats:
    ran = [r for r in results if r.status == GRADED]
    scores = [r.score for r in ran]
    questions, checks = [], []
    first = ran[0] if ran else (results[0] if results else None)
    for question in first.questions if first else ():
        done = [q for r in ran for q in r.questions if q.id == question.id]
        average = 100 * statistics.fmean(q.score / q.max_score for q in done) if done and question.max_score else 0.0
        questions.append(QuestionStats(question.id, question.title, question.max_score, average,
                                       sum(1 for q in done if q.score >= q.max_score), len(done)))
        for check in question.checks:
            outcomes = [c for r in ran for c in r.checks if c.check_id == check.check_id]
            checks.append(CheckStats(check.check_id, check.question, check.title, check.visibility, check.max_score,
                                     sum(1 for c in outcomes if c.status == PASSED),
                                     sum(1 for c in outcomes if c.status in (ERROR, TIMEOUT, CRASHED)),
                                     len(outcomes)))
    histogram = [0] * BINS
    for r in results:
        percent = 100 * r.score / max_score if max_score else 0.0
        histogram[min(int(percent // (100 / BINS)), BINS - 1)] += 1
    return ClassStats(len(results), len(ran), statistics.fmean(scores) if scores else None,
                      statistics.median(scores) if scores else None, tuple(questions), tuple(checks),
                      tuple(histogram), misconceptions(ran))


@dataclass(frozen=True)
class WrittenStats:
    """A written question worth points, marked by hand (OUT/manual.csv)."""

    id: str
    max_score: float
    marked: int
    submissions: int
    average: float | None  # percent of its points, over the answers marked
    full_marks: int = 0


def written_stats(results: Sequence[SubmissionResult]) -> tuple[WrittenStats, ...]:
    ids = list(dict.fromkeys(m.question for r in results for m in r.manual if m.max_score))
    stats = []
    for question in ids:
        marks = [m for r in results for m in r.manual if m.question == question]
        marked = [m for m in marks if m.state == MARKED]
        average = 100 * statistics.fmean(m.score / m.max_score for m in marked) if marked else None
        stats.append(WrittenStats(question, marks[0].max_score, len(marked), len(marks), average,
                                  sum(1 for m in marked if m.score >= m.max_score)))
    return tuple(stats)


def misconceptions(results: Sequence[SubmissionResult]) -> tuple[MisconceptionStats, ...]:
    """How many students each known mistake was found in, most first (then by question)."""
    found: dict[str, tuple[str, Diagnosis]] = {}
    students: Counter[str] = Counter()
    for result in results:
        seen = {c.diagnosis.variant: (c.question, c.diagnosis) for c in result.checks if c.diagnosis is not None}
        found.update(seen)
        students.update(seen.keys())
    rows = [MisconceptionStats(question, variant, d.name, d.explanation, students[variant])
            for variant, (question, d) in found.items()]
    return tuple(sorted(rows, key=lambda m: (-m.students, m.question, m.variant)))


def histogram_svg(counts: Sequence[int], max_score: float) -> Markup:
    """Submissions per tenth of the maximum score, as an ``<svg class="histogram">`` of bars with their counts."""
    width, height, left, bottom, top = 560, 190, 34, 34, 14
    plot_w, plot_h = width - left - 8, height - top - bottom
    tallest = max(max(counts, default=0), 1)
    bar_w = plot_w / len(counts)
    out = [f'<svg class="histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="Histogram of scores: '
           f'{", ".join(str(c) for c in counts)} submissions per tenth of {shown(max_score)} points" '
           f'font-family="system-ui, sans-serif">']
    out.append(f'<path d="M{left} {top}v{plot_h}h{plot_w}" stroke="#888" fill="none"/>')
    for k in range(0, tallest + 1, max(1, tallest // 4)):
        y = top + plot_h - plot_h * k / tallest
        out.append(f'<text x="{left - 5}" y="{y + 3:.1f}" font-size="10" text-anchor="end" fill="#444">{k}</text>')
    for i, count in enumerate(counts):
        low, high = max_score * i / len(counts), max_score * (i + 1) / len(counts)
        label = f"{shown(low)}–{shown(high)}" + (" points" if i < len(counts) - 1 else " points (inclusive)")
        bar_h = plot_h * count / tallest
        x = left + i * bar_w + 3
        out.append(f'<rect x="{x:.1f}" y="{top + plot_h - bar_h:.1f}" width="{bar_w - 6:.1f}" height="{bar_h:.1f}" '
                   f'fill="#2c728e"><title>{count} submission{"s" if count != 1 else ""} scored '
                   f'{escape(label)}</title></rect>')
        if count:
            out.append(f'<text x="{x + (bar_w - 6) / 2:.1f}" y="{top + plot_h - bar_h - 3:.1f}" font-size="10" '
                       f'text-anchor="middle">{count}</text>')
        out.append(f'<text x="{left + i * bar_w:.1f}" y="{top + plot_h + 13}" font-size="10" text-anchor="middle" '
                   f'fill="#444">{shown(low)}</text>')
    out.append(f'<text x="{left + plot_w:.1f}" y="{top + plot_h + 13}" font-size="10" text-anchor="middle" '
               f'fill="#444">{shown(max_score)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" font-size="11" text-anchor="middle">Score '
               f'(points of {shown(max_score)})</text>')
    out.append("</svg>")
    return Markup("".join(out))
