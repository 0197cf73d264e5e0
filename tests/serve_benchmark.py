"""``make bench-serve``: a deadline's rush on ``grader serve``. N students (200 by default) each launch the assignment
from the test platform (lti1p3platform, tests/lti_platform.py) and upload a sample submission, the uploads spread
evenly over WITHIN seconds (300: "200 uploads within five minutes before the deadline"); meanwhile a student's page
is fetched every half second, to see whether the pages stay responsive while the queue grades.

It says: whether every upload was graded and every score accepted by the platform (none lost), how long the last
score took after the last upload, the upload and page response times (median, 95th percentile, worst), and the
queue's longest wait. Everything on 127.0.0.1.

    .venv/bin/python -m tests.serve_benchmark [--uploads 200] [--within 300] [--graders 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from .lti_platform import LEARNER, start_platform
from .test_serve import SAMPLES, Course, browser, free_port, launch, start_tool, upload, write_config

SAMPLE_FILES = sorted(p for p in SAMPLES.glob("*.py") if not p.name.startswith("broken"))


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1), "count": len(ordered)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--within", type=float, default=300.0, help="seconds over which the uploads are spread")
    parser.add_argument("--graders", type=int, default=2, help="the tool's grading threads")
    parser.add_argument("--limit", type=float, default=900.0, help="give up this many seconds after the last upload")
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    platform = start_platform(tool_url)
    students = [f"student-{i:03d}" for i in range(args.uploads)]
    platform.users = {s: {"sub": s, "role": LEARNER, "name": s} for s in students}
    platform.users["watcher"] = {"sub": "watcher", "role": LEARNER, "name": "watcher"}
    # Every student here comes from 127.0.0.1: one address's launch budget would be the whole class's.
    config_path = write_config(folder, platform, tool_url,
                               extra=f"graders = {args.graders}\nlimits = {{ launches = 100000 }}")
    service = start_tool(config_path, port)
    course = Course(platform, service, None, config_path, tool_url)  # type: ignore[arg-type]
    upload_times: list[float] = []
    page_times: list[float] = []
    failures: list[str] = []
    done = threading.Event()

    def watch() -> None:
        session = browser()
        page = launch(course, session, "watcher")
        while not done.is_set():
            started = time.perf_counter()
            answer = session.get(page.url, timeout=60)
            page_times.append(time.perf_counter() - started)
            if answer.status_code != 200:
                failures.append(f"watcher's page: HTTP {answer.status_code}")
            done.wait(0.5)

    def one(index: int, at: float) -> None:
        time.sleep(max(0.0, at - time.monotonic()))
        try:
            session = browser()
            page = launch(course, session, students[index])
            sample = SAMPLE_FILES[index % len(SAMPLE_FILES)]
            started = time.perf_counter()
            answer = upload(session, page, sample.name, sample.read_bytes())
            upload_times.append(time.perf_counter() - started)
            if answer.status_code != 200:
                failures.append(f"{students[index]}: upload answered HTTP {answer.status_code}")
        except Exception as exc:
            failures.append(f"{students[index]}: {type(exc).__name__}: {exc}")

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began = time.monotonic()
    spacing = args.within / max(args.uploads - 1, 1)
    with ThreadPoolExecutor(max_workers=32) as pool:
        for index in range(args.uploads):
            pool.submit(one, index, began + index * spacing)
    last_upload = time.monotonic()
    deadline = last_upload + args.limit
    while time.monotonic() < deadline:
        scored = {s["userId"] for s in platform.scores}
        if all(s in scored for s in students):
            break
        time.sleep(0.5)
    finished = time.monotonic()
    done.set()
    watcher.join(10)
    store = service.store
    rows = store._read("SELECT status, submitted_at, graded_at FROM uploads WHERE sub != 'watcher'")
    scores = store.all_scores()
    waits = []
    for _status, submitted, graded in rows:
        if graded:
            waits.append((datetime.fromisoformat(graded) - datetime.fromisoformat(submitted)).total_seconds())
    scored = {s["userId"] for s in platform.scores}
    summary = {
        "uploads": args.uploads, "within_s": args.within, "graders": args.graders,
        "uploads_taken": len(rows), "graded": sum(1 for r in rows if r[0] == "graded"),
        "grader_failed": sum(1 for r in rows if r[0] == "failed"),
        "scores_accepted": sum(1 for s in scores if s.status == "accepted"),
        "students_scored_at_platform": sum(1 for s in students if s in scored),
        "sending_s": round(last_upload - began, 1),
        "last_score_after_last_upload_s": round(finished - last_upload, 1),
        "longest_queue_wait_s": max(waits, default=None),
        "upload_response": percentiles(upload_times), "page_response_while_grading": percentiles(page_times),
        "failures": failures[:20],
    }
    service.close()
    platform.close()
    print(json.dumps(summary, indent=1))
    lost = args.uploads - summary["students_scored_at_platform"]
    if lost or failures:
        print(f"FAILED: {lost} student(s) without a score at the platform, {len(failures)} failure(s)",
              file=sys.stderr)
        return 1
    print(f"OK: {args.uploads} uploads in {summary['sending_s']} s, every one graded and its score accepted; the last "
          f"score {summary['last_score_after_last_upload_s']} s after the last upload")
    return 0


if __name__ == "__main__":
    sys.exit(main())
