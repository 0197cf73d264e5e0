"""``grader review OUT``: mark written answers and override checks in the browser (grader/review)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.paths import SOLUTIONS_DIR


def _review(args: argparse.Namespace) -> int:
    from grader.review.server import LOCAL, graded_assignment, serve

    if args.host not in LOCAL and not args.allow_remote:
        print(f"error: --host {args.host} lets other machines reach the marks: add --allow-remote to mean it",
              file=sys.stderr)
        return 2
    assignment = graded_assignment(Path(args.out), args.assignment, Path(args.solutions))
    review = serve(Path(args.out), assignment, host=args.host, port=args.port)
    if args.host not in LOCAL:
        print(f"warning: serving on {args.host}: anyone who can reach this machine and has the link below can "
              "change marks (the link's token is the only guard; use it on a network you trust)", file=sys.stderr)
    links = "\n".join(f"    {url}" for url in review.urls or (review.url,))
    where = " (on another machine, the link with this machine's address on its network)" if len(review.urls) > 1 else ""
    print(f"Marking {assignment.name} from {Path(args.out).resolve()}: open{where}\n{links}\n"
          "(Ctrl-C stops; every mark is saved as it is made. Run `grader grade` again to put them in grades.csv, "
          "the students' pages and the exports.)", flush=True)
    try:
        review.run()
    except KeyboardInterrupt:
        pass
    finally:
        review.close()
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    review = commands.add_parser(
        "review", help="mark written answers and regrade checks in the browser",
        description="Serve a local web app over a graded class (after `grader grade`): mark each written question "
                    "student after student with a rubric, by keyboard, and override any check's points with a "
                    "reason. Marks are kept in OUT/gradebook.sqlite; the next `grader grade` shows them everywhere.")
    review.add_argument("out", help="the --out folder of `grader grade`")
    review.add_argument("--assignment", help="which assignment, when OUT holds several")
    review.add_argument("--solutions", default=str(SOLUTIONS_DIR), help="folder holding the assignments' checks")
    review.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine "
                                                            "only)")
    review.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    review.add_argument("--allow-remote", action="store_true",
                        help="allow a --host other machines can reach (prints a warning)")
    review.set_defaults(run=_review)
