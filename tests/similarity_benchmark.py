"""How long the similarity report takes for a large class: ``python -m tests.similarity_benchmark --students 200``.

The class is made from the sample submissions (tests/submissions/*attention_scoring*, the similarity fixtures), each
student a sample with its own names (identifiers renamed), comments and a few lines of
their own; a few students copy a classmate's file with names changed, so some pairs are found. It times the
comparison (``similar_pairs``) and the side-by-side pages and dashboard section (``write_similarity``).
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from grader.discover import Submission
from grader.report.similar_pages import write_similarity
from grader.similar import boilerplate_for, similar_pairs
from grader.similar.pages import code_of

ROOT = Path(__file__).parent
SOURCES = [*sorted((ROOT / "submissions" / "attention_scoring").glob("*.py")),
           *sorted((ROOT / "submissions" / "real_style" / "attention_scoring").glob("*.py")),
           *sorted((ROOT / "fixtures" / "similar").glob("*.py"))]
SOURCES = [p for p in SOURCES if not p.stem.startswith("broken")]  # one that does not parse is not compared
RENAMABLE = ("scores", "weights", "mask", "shape", "features", "hidden", "queries", "keys", "values", "valid_lens")


def variant(text: str, rng: random.Random, student: int) -> str:
    for name in RENAMABLE:
        if rng.random() < 0.5:
            text = re.sub(rf"\b{name}\b", f"{name}_{student}", text)
    own = "\n".join(f"extra_{student}_{i} = torch.zeros({rng.randint(1, 9)}, {i}).sum() * {rng.random():.3f}"
                    for i in range(rng.randint(2, 8)))
    return f"{text.rstrip()}\n\n# student {student}\nimport torch\n{own}\n"


def make_class(folder: Path, students: int, seed: int = 0) -> list[Submission]:
    rng = random.Random(seed)
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in SOURCES]
    now = datetime.now(UTC)
    submissions = []
    for n in range(students):
        path = folder / f"s{n:04d}.py"
        copied = n >= 10 and n % 25 == 0  # every 25th student copies an earlier one, names changed
        base = (folder / f"s{n - 7:04d}.py").read_text(encoding="utf-8") if copied else rng.choice(texts)
        path.write_text(variant(base, rng, n), encoding="utf-8")
        submissions.append(Submission(path.stem, path, "python", now))
    return submissions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "class"
        folder.mkdir()
        submissions = make_class(folder, args.students)
        started = time.perf_counter()
        sources = {s.student: code_of(s) for s in submissions}
        read_s = time.perf_counter() - started
        started = time.perf_counter()
        pairs = similar_pairs(sources, boilerplate=boilerplate_for("attention_scoring"), threshold=args.threshold)
        compare_s = time.perf_counter() - started
        started = time.perf_counter()
        report = write_similarity(Path(tmp) / "out", "attention_scoring", submissions, threshold=args.threshold)
        total_s = time.perf_counter() - started
    print(f"{args.students} students, {len(sources) * (len(sources) - 1) // 2} pairs considered: read {read_s:.2f} s, "
          f"compared {compare_s:.2f} s ({len(pairs)} pairs at or above {args.threshold:g}); write_similarity "
          f"(read, compare, {len(report.rows)} pages) {total_s:.2f} s")


if __name__ == "__main__":
    main()
