"""Serving the review app: waitress (a pure-Python WSGI server, on every OS the grader runs on) on 127.0.0.1 by
default, at a port the system picks unless one is asked for, behind a token drawn for this run."""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from waitress.server import create_server

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.errors import ConfigurationError
from grader.paths import SOLUTIONS_DIR
from grader.record.output import GRADEBOOK
from grader.review.app import Settings, create_app

LOCAL = ("127.0.0.1", "localhost", "::1")


def graded_assignment(out_dir: Path, name: str | None, solutions_dir: Path = SOLUTIONS_DIR) -> Assignment:
    """The assignment OUT was graded for (the one in its gradebook; ``name`` when it holds several)."""
    path = out_dir / GRADEBOOK
    if not path.is_file():
        raise ConfigurationError(f"{out_dir} holds no gradebook: run `grader grade ASSIGNMENT SUBMISSIONS --out "
                                 f"{out_dir}` first")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        graded = sorted(row[0] for row in db.execute("SELECT DISTINCT assignment FROM submissions"))
    if name is None:
        if len(graded) != 1:
            raise ConfigurationError(f"{out_dir} holds {', '.join(graded) or 'no'} results: say which with "
                                     "--assignment")
        name = graded[0]
    elif name not in graded:
        raise ConfigurationError(f"{out_dir} holds no results for {name} (it holds {', '.join(graded) or 'none'})")
    return load_assignment(name, solutions_dir=solutions_dir)


@dataclass
class Review:
    """A review app served: its address (the token in it) and the server, to run or close."""

    url: str
    server: object

    def run(self) -> None:
        self.server.run()  # type: ignore[attr-defined]

    def close(self) -> None:
        self.server.close()  # type: ignore[attr-defined]


def serve(out_dir: Path, assignment: Assignment, *, host: str = "127.0.0.1", port: int = 0,
          token: str | None = None, threads: int = 8) -> Review:
    """The app bound to ``host``:``port`` (0: any free port), not yet running (``Review.run``)."""
    token = token or secrets.token_urlsafe(24)
    server = create_server(lambda environ, start: app(environ, start), host=host, port=port, threads=threads,
                           ident="grader review")
    bound = server.effective_port  # type: ignore[union-attr]
    shown_host = f"[{host}]" if ":" in host else host
    names = {f"{shown_host}:{bound}"} | ({f"localhost:{bound}", f"127.0.0.1:{bound}"} if host in LOCAL else set())
    if host in ("0.0.0.0", "::"):
        names |= {f"{name}:{bound}" for name in _addresses()}
    app = create_app(Settings(out_dir, assignment, token, frozenset(names)))
    url_host = "127.0.0.1" if host in ("0.0.0.0", "::") else shown_host
    return Review(f"http://{url_host}:{bound}/?token={token}", server)


def _addresses() -> set[str]:
    import socket

    found = {socket.gethostname(), socket.getfqdn()}
    with contextlib.suppress(OSError):
        found |= {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    return found
