"""Serving the tool: waitress (the review app's server) in front of the Flask app, with the grading threads and the
score sender running beside it (worker.py). Behind the course's TLS reverse proxy, waitress takes the client's
scheme and address from the proxy's X-Forwarded-* headers when ``trusted_proxy`` names it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from waitress.server import create_server

from grader.serve.app import Tool, create_app
from grader.serve.config import ServeConfig, tool_conf
from grader.serve.instructor import ReviewFactory
from grader.serve.store import ServeStore
from grader.serve.worker import Background


@dataclass
class Service:
    """The tool served: its local address, the waitress server, the database and the background threads."""

    url: str
    server: Any
    store: ServeStore
    background: Background
    closed: bool = False

    def run(self) -> None:
        try:
            self.server.run()
        except OSError:
            if not self.closed:
                raise

    def close(self) -> None:
        self.closed = True
        self.server.close()
        self.background.stop()
        self.store.close()


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
