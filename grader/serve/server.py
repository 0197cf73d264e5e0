"""Serving the tool: waitress (the review app's server) in front of the Flask app, with the grading threads and the
score sender running beside it (worker.py). Behind the course's TLS reverse proxy, waitress takes the client's
scheme and address from the proxy's X-Forwarded-* headers when ``trusted_proxy`` names it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from waitress import wasyncore
from waitress.server import create_server

from grader.serve.app import Tool, create_app
from grader.serve.config import ServeConfig, tool_conf
from grader.serve.instructor import ReviewFactory
from grader.serve.store import ServeStore
from grader.serve.worker import Background

LOOP_TURN_S = 0.2  # how soon a close is seen by the serving loop


@dataclass
class Service:
    """The tool served: its local address, the waitress server, the database and the background threads."""

    url: str
    server: Any
    store: ServeStore
    background: Background
    closed: bool = False
    running: bool = False
    stopped: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Serve until ``close`` (``serve_until``)."""
        self.running = True
        try:
            serve_until(self.server, lambda: self.closed)
        finally:
            self.stopped.set()

    def close(self) -> None:
        self.closed = True
        if self.running:
            self.stopped.wait(10)  # the loop's next turn ends it, and the requests in hand are answered
        else:
            stop_serving(self.server)
        self.background.stop()
        self.store.close()


def serve_until(server: Any, stopped: Callable[[], bool]) -> None:
    """Serve with a waitress ``server`` until ``stopped()``: its loop a turn at a time, then every connection
    closed. waitress's own ``run`` goes on serving the connections clients keep alive after the listening socket
    is closed: a stopped tool answered them with its database closed (500), and a stopped server's thread lived on
    until they timed out."""
    try:
        while not stopped():
            wasyncore.loop(timeout=LOOP_TURN_S, map=server._map, use_poll=server.adj.asyncore_use_poll, count=1)
    finally:
        stop_serving(server)


def stop_serving(server: Any) -> None:
    server.close()
    wasyncore.close_all(server._map)
    server.task_dispatcher.shutdown()


def serve_tool(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, threads: int = 8,
               review: ReviewFactory | None = None) -> Service:
    """The tool bound to ``host``:``port`` (0: any free port) with its background threads started; the server not
    yet running (``Service.run``). ``review``: the review pages an instructor's launch offers (grader/cli/serve.py
    gives grader.review's)."""
    config.data.mkdir(parents=True, exist_ok=True)
    store = ServeStore(config.data / "serve.sqlite")
    conf = tool_conf(config)
    background = Background(config, store, conf)
    app = create_app(Tool(config, store, conf, queued=background.wake, send_marks=background.send_marks,
                          review=review, late_rule=background.deadline_rule))
    proxy = {}
    if config.trusted_proxy:
        proxy = {"trusted_proxy": config.trusted_proxy,
                 "trusted_proxy_headers": "x-forwarded-proto x-forwarded-for x-forwarded-host"}
    try:
        server = create_server(app, host=host, port=port, threads=threads, ident="grader serve",
                               max_request_body_size=config.max_upload_bytes + (1 << 20), **proxy)
    except BaseException:
        store.close()
        raise
    background.start()
    shown = f"[{host}]" if ":" in host else host
    return Service(f"http://{shown}:{server.effective_port}", server, store, background)  # type: ignore[union-attr]
