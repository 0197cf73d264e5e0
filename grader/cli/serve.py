"""``grader serve --config FILE``: the grader as an LTI 1.3 tool of a course platform (grader/serve, docs/lms.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.serve.config import ServeConfig
    from grader.serve.server import Service


def tool(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000) -> Service:
    """The tool as ``grader serve`` serves it: with the review pages (grader/review) under an instructor's launch,
    given here, where both packages may be imported (grader/serve may not import grader/review)."""
    from grader.review.app import embedded_app
    from grader.serve.server import serve_tool

    return serve_tool(config, host=host, port=port, review=embedded_app)


def _serve(args: argparse.Namespace) -> int:
    from grader.serve.config import load_config

    config = load_config(Path(args.config))
    service = tool(config, host=args.host, port=args.port)
    names = ", ".join(config.assignments)
    print(f"Serving {names} as an LTI 1.3 tool on {service.url} (public address {config.url}); data in "
          f"{config.data}\n  login (OIDC initiation): {config.login_url}\n  key set (JWKS): {config.jwks_url}\n"
          + "".join(f"  launch: {config.launch_url(n)}\n" for n in config.assignments)
          + "(Ctrl-C stops; uploads and scores not yet sent are kept and resumed at the next start)", flush=True)
    try:
        service.run()
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve", help="serve the grader as an LTI 1.3 tool: students upload in Moodle or Canvas, scores go back",
        description="Serve the grader as an LTI 1.3 tool (docs/lms.md): students open an assignment in their "
                    "course's platform, upload a notebook or a .py, and read their report once it is graded; each "
                    "score goes back to the platform's gradebook (Assignment and Grade Services). Run it behind "
                    "the course's TLS reverse proxy.")
    serve.add_argument("--config", required=True, help="the tool's configuration (TOML or JSON; docs/lms.md)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1: the reverse proxy on this machine)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.set_defaults(run=_serve)
