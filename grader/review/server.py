"""Serving the review app: waitress (a pure-Python WSGI server, on every OS the grader runs on) on 127.0.0.1 by
default, at a port the system picks unless one is asked for, behind a token drawn for this run.

The app answers under a path drawn for the run (``/r/<random>/``), and its cookie is named after the port and kept
for that path only. A browser sends a cookie to every server of the same host whatever its port, so with a plain
``/`` path another program listening on 127.0.0.1 would be sent the token, and a second review app would overwrite
the first one's cookie; with the path, a browser sends it only to this app's pages."""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waitress.server import create_server

from grader.check.load import load_assignment
from grader.check.spec import Assignment
from grader.errors import ConfigurationError
from grader.paths import SOLUTIONS_DIR
from grader.record.gradebook import damaged, is_damage
from grader.record.output import GRADEBOOK
from grader.review.app import OUTSIDE, Settings, create_app

LOCAL = ("127.0.0.1", "localhost", "::1")
EVERYWHERE = ("0.0.0.0", "::")


def graded_assignment(out_dir: Path, name: str | None, solutions_dir: Path = SOLUTIONS_DIR) -> Assignment:
    """The assignment OUT was graded for (the one in its gradebook; ``name`` when it holds several)."""
    path = out_dir / GRADEBOOK
    if not path.is_file():
        raise ConfigurationError(f"{out_dir} holds no gradebook: run `grader grade ASSIGNMENT SUBMISSIONS --out "
                                 f"{out_dir}` first")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            graded = sorted(row[0] for row in db.execute("SELECT DISTINCT assignment FROM submissions"))
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            raise damaged(path, exc) from exc
        raise
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
    """A review app served: its address (the token in it; ``urls``: every address it prints, one per network address
    when it serves other machines) and the server, to run or close."""

    url: str
    server: object
    urls: tuple[str, ...] = field(default=())
    closed: bool = False

    def run(self) -> None:
        try:
            self.server.run()  # type: ignore[attr-defined]
        except OSError:
            if not self.closed:
                raise
            # closed from another thread while waitress waited on its sockets (EBADF): the end asked for

    def close(self) -> None:
        self.closed = True
        self.server.close()  # type: ignore[attr-defined]


def serve(out_dir: Path, assignment: Assignment, *, host: str = "127.0.0.1", port: int = 0,
          token: str | None = None, threads: int = 8) -> Review:
    """The app bound to ``host``:``port`` (0: any free port), not yet running (``Review.run``)."""
    token = token or secrets.token_urlsafe(24)
    prefix = f"/r/{secrets.token_urlsafe(12)}"
    server = create_server(lambda environ, start: mounted(environ, start), host=host, port=port, threads=threads,
                           ident="grader review")
    bound = server.effective_port  # type: ignore[union-attr]
    names, shown = _names(host, bound)
    mounted = _mount(create_app(Settings(out_dir, assignment, token, frozenset(names), prefix=prefix,
                                         cookie=f"grader_review_{bound}")), prefix)
    urls = tuple(f"http://{name}{prefix}/?token={token}" for name in shown)
    return Review(urls[0], server, urls)


def _mount(app: Callable[..., Any], prefix: str) -> Callable[..., Any]:
    """The app under ``prefix`` (its links and cookie carry it); a request for any other path reaches the app marked
    OUTSIDE, which checks its Host and answers 404."""
    def mounted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == prefix or path.startswith(prefix + "/"):
            environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
            environ["PATH_INFO"] = path[len(prefix):] or "/"
        else:
            environ[OUTSIDE] = True
        return app(environ, start_response)

    return mounted


def _names(host: str, port: int) -> tuple[set[str], list[str]]:
    """The Host headers the app accepts (a request naming any other host is refused, against DNS rebinding), and the
    addresses it prints: for 0.0.0.0 or ::, every address of this machine's network interfaces, those other
    machines can use first (127.0.0.1 alone only where there is none)."""
    shown_host = f"[{host}]" if ":" in host else host
    if host in LOCAL:
        names = {f"{shown_host}:{port}", f"localhost:{port}", f"127.0.0.1:{port}"}
        return names, [f"{shown_host}:{port}"]
    if host not in EVERYWHERE:
        return {f"{shown_host}:{port}"}, [f"{shown_host}:{port}"]
    addresses = _interface_addresses(ipv6=host == "::")
    names = {f"{_bracketed(a)}:{port}" for a in addresses} | {f"{n}:{port}" for n in _host_names()}
    names |= {f"localhost:{port}", f"127.0.0.1:{port}"}
    reachable = [a for a in addresses if not a.is_loopback and not a.is_link_local]
    shown = [f"{_bracketed(a)}:{port}" for a in sorted(reachable, key=lambda a: (a.version, a))]
    return names, shown or [f"127.0.0.1:{port}"]


def _bracketed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    return f"[{address}]" if address.version == 6 else str(address)


def _interface_addresses(*, ipv6: bool) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """This machine's addresses, as its network interfaces have them (psutil); IPv6 ones when serving on ::."""
    import psutil

    found = []
    for addresses in psutil.net_if_addrs().values():
        for entry in addresses:
            with contextlib.suppress(ValueError):  # a link-layer address, not an IP one
                address = ipaddress.ip_address(entry.address.split("%", 1)[0])  # fe80::1%eth0: the zone aside
                if address.version == 4 or ipv6:
                    found.append(address)
    return sorted(set(found), key=lambda a: (a.version, a))


def _host_names() -> Iterable[str]:
    import socket

    found = {socket.gethostname(), socket.getfqdn()}
    with contextlib.suppress(OSError):
        found |= {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)}
    return {f"[{name}]" if ":" in name else name for name in found}
