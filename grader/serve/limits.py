"""Request limits of ``grader serve``, per user, in memory: a flood of requests from one user (or one address) is
answered 429 with a ``Retry-After`` header and a clear message, and never slows anyone else.

Two budgets, each a token bucket per key (``RateLimiter``), from ``[limits]`` in the configuration (config.Limits):

- ``requests``: a user's pages, reloads, reports and forms (every address under ``/lti/a/<launch>/``), keyed by the
  launch's user, their platform's issuer and their id there (``sub`` is unique per issuer only): two users never
  share a budget, whatever address they come from (a class behind one NAT);
- ``launches``: OIDC login initiations and launches, keyed by the client's address (before the launch is verified
  no user is known), and any request under ``/lti/a/`` whose session does not hold its launch (refused anyway).

The key set (``/lti/jwks``) is not limited: the platform's server fetches it, for every token it grants the tool
in a rush of scores too. Each bucket holds at most ``limit`` requests and fills at ``limit`` per ``window_s``: a
user may make ``limit`` requests at once and then ``limit`` every ``window_s``. A bucket untouched for
``window_s`` is full again, the same as none, so it is forgotten: the memory held is that of the keys seen in the
last window, and never more than ``MAX_KEYS`` (the least recently seen forgotten first, which only ever lets a
request through). One lock per budget: waitress serves with several threads."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from flask import Flask, Response, render_template, request, session

from grader.serve.config import Limits
from grader.serve.store import ServeStore

MAX_KEYS = 50_000  # per budget: about 10 MB at most


class RateLimiter:
    """Token buckets, one per key: ``limit`` at once, then ``limit`` every ``window_s``; thread-safe, bounded."""

    def __init__(self, limit: int, window_s: float, *, max_keys: int = MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = float(limit)
        self.window_s = window_s
        self.rate = limit / window_s
        self.max_keys = max_keys
        self.clock = clock
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()  # key -> (tokens, when), oldest first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)

    def take(self, key: Hashable) -> float:
        """0.0 when ``key`` may make a request now (counted); otherwise the seconds until it may (nothing counted)."""
        with self._lock:
            now = self.clock()
            self._forget(now)
            tokens, when = self._buckets.pop(key, (self.limit, now))
            tokens = min(self.limit, tokens + max(0.0, now - when) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens, now)
            return wait

    def _forget(self, now: float) -> None:
        """Buckets full again (untouched for a window), and the least recently seen beyond ``max_keys`` - 1."""
        buckets = self._buckets
        while buckets:
            _key, (_tokens, when) = next(iter(buckets.items()))
            if now - when < self.window_s and len(buckets) < self.max_keys:
                return
            buckets.popitem(last=False)


class RequestLimits:
    """The tool's two budgets, and the Flask hook that answers 429 (``install``)."""

    def __init__(self, limits: Limits, store: ServeStore) -> None:
        self.store = store
        self.requests = RateLimiter(limits.requests, limits.window_s)
        self.launches = RateLimiter(limits.launches, limits.window_s)

    def budget(self) -> tuple[RateLimiter, Hashable, str] | None:
        """The budget and key that the current request counts against, with whose it is (for the message); None:
        not limited."""
        endpoint = request.endpoint
        if endpoint is None or endpoint in ("jwks", "static"):
            return None
        address = ("address", request.remote_addr or "")
        launch_id = (request.view_args or {}).get("launch_id")
        if endpoint in ("login", "launch") or launch_id is None:
            return self.launches, address, "from your address"
        if launch_id in session.get("launches", []) and (launch := self.store.launch(launch_id)) is not None:
            return self.requests, ("user", launch.issuer, launch.sub), "of yours"
        return self.launches, address, "from your address"

    def check(self) -> Response | None:
        found = self.budget()
        if found is None:
            return None
        limiter, key, whose = found
        wait = limiter.take(key)
        if not wait:
            return None
        seconds = max(1, math.ceil(wait))
        message = (f"too many requests {whose} in a short time (at most {limiter.limit:g} every "
                   f"{limiter.window_s:g} s): wait {seconds} s, then reload the page")
        response = Response(render_template("refused.html", message=message, status=429), status=429,
                            mimetype="text/html")
        response.headers["Retry-After"] = str(seconds)
        return response


def install(app: Flask, limits: Limits, store: ServeStore) -> RequestLimits:
    """Count every request of ``app`` against its budget before it is served; 429 once one is spent."""
    found = RequestLimits(limits, store)

    @app.before_request
    def limited() -> Any:
        return found.check()

    return found
