"""The configuration of ``grader serve``: the tool's public address, its data folder, the assignments it offers and
the platform registrations (one per issuer and client id), read from a TOML or JSON file; the tool's own RSA key
pair, made once into private files if missing.

A TOML example (every key is documented in docs/lms.md)::

    url = "https://grader.example.edu"        # the tool's address as the platform and browsers reach it
    data = "/srv/grader"                      # uploads, results, the serve database, the session secret
    assignments = ["attention_scoring"]
    private_key = "keys/tool.pem"             # made once (RSA 2048, mode 0600) when missing
    public_key = "keys/tool.pub.pem"

    [[platforms]]
    issuer = "https://moodle.example.edu"
    client_id = "aBcD1234"
    deployment_ids = ["1"]
    auth_login_url = "https://moodle.example.edu/mod/lti/auth.php"
    auth_token_url = "https://moodle.example.edu/mod/lti/token.php"
    key_set_url = "https://moodle.example.edu/mod/lti/certs.php"

Relative paths are taken from the configuration file's folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from grader.adjust import DeadlineRule
from grader.check.load import available_assignments
from grader.errors import ConfigurationError
from grader.paths import SOLUTIONS_DIR
from grader.times import LatePolicy, parse_time

PLATFORM_KEYS = ("issuer", "client_id", "deployment_ids", "auth_login_url", "auth_token_url", "key_set_url")
DEFAULT_MAX_UPLOAD = 8 << 20  # bytes: a notebook with its figures; far more than any .py


@dataclass(frozen=True)
class Platform:
    """One registration of the tool in a course platform (what the platform's administrator was given and gave)."""

    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    auth_audience: str | None = None


@dataclass(frozen=True)
class Policy:
    """What an assignment allows a student: uploads until ``deadline`` (None: always), or after it until
    ``late_until`` with the late rule (``late``; None: the assignment's own, ``Assignment(late=...)``, as
    ``grader grade`` applies it); at most ``attempts`` graded uploads (None: any number); ``hidden``: when the hidden
    checks count, "at_once" (the report as the grader writes it, the score sent when graded) or "after_deadline"
    (until uploads close the student's pages show the public checks only, and the score, the hidden checks'
    included, is sent then)."""

    deadline: datetime | None = None
    attempts: int | None = None
    hidden: str = "at_once"
    late_until: datetime | None = None
    late: LatePolicy | None = None

    @property
    def closes(self) -> datetime | None:
        """When uploads stop being taken: the end of the late window, or the deadline."""
        return self.late_until or self.deadline

    def holds_hidden(self, now: datetime) -> bool:
        """Whether the hidden checks are held back from the student at ``now``: while anyone may still upload,
        late uploads included, no one sees them."""
        return self.hidden == "after_deadline" and self.closes is not None and now < self.closes

    def late_rule(self, assignments: LatePolicy) -> DeadlineRule:
        """The late rule an upload is scored under (``assignments``: the assignment's own): none where uploads close
        at the deadline; with a late window, this policy's rule or else the assignment's, from the deadline, as
        ``grader grade`` puts it on (the data folder's extensions.csv included)."""
        if self.late_until is None:
            return DeadlineRule(None)
        return DeadlineRule(self.deadline, self.late or assignments, "grader serve's policy")


PAGE_REFRESH_S = 3.0  # how often a student's page reloads itself while an upload waits (templates/student.html)
POLLING_TABS = 3  # the reloading pages of one user the request limit must always let through


@dataclass(frozen=True)
class Limits:
    """Against a flood. Uploads, per student and assignment: at most ``waiting`` queued or being graded at once, and
    ``per_hour`` in any hour. Requests (limits.py), in memory: a user's (their platform's issuer and id) pages,
    reloads, reports and forms, ``requests`` at once and then ``requests`` every ``window_s``; logins and launches
    from one client address (no user is known yet), ``launches`` at once and then ``launches`` every ``window_s``."""

    waiting: int = 3
    per_hour: int = 30
    requests: int = 120
    launches: int = 300
    window_s: float = 60.0


@dataclass(frozen=True)
class ServeConfig:
    url: str  # the tool's public base address, no trailing slash
    data: Path
    assignments: tuple[str, ...]
    platforms: tuple[Platform, ...]
    private_key: Path
    public_key: Path
    solutions: Path = SOLUTIONS_DIR
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD
    graders: int = 1  # grading threads, each with its own warm sandboxed worker per assignment
    sandbox: str = "require"
    # The reverse proxy in front (its address as waitress sees it): waitress then takes the client's scheme and
    # address from its X-Forwarded-* headers. Empty: none trusted.
    trusted_proxy: str = ""
    scheduler: str = ""  # a Dask scheduler's address: uploads graded on its cluster (grader grade --scheduler)
    # Origins besides the platforms' own addresses whose pages may frame the tool (a platform served under
    # another name than its issuer, token and login addresses).
    frame_ancestors: tuple[str, ...] = ()
    policies: dict[str, Policy] = field(default_factory=dict)  # by assignment; missing: Policy()
    limits: Limits = field(default_factory=Limits)

    def policy(self, assignment: str) -> Policy:
        return self.policies.get(assignment, Policy())
    extra: dict[str, Any] = field(default_factory=dict)

    def launch_url(self, assignment: str) -> str:
        return f"{self.url}/lti/launch/{assignment}"

    @property
    def login_url(self) -> str:
        return f"{self.url}/lti/login"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/lti/jwks"


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the configuration {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigurationError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from exc


def _text(raw: dict[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{where}: `{key}` is missing or not a text")
    return value.strip()


def _address(raw: dict[str, Any], key: str, where: str) -> str:
    value = _text(raw, key, where)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(f"{where}: `{key}` = {value!r} is not an http(s) address")
    return value


def _platform(raw: Any, where: str) -> Platform:
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{where}: a platform is a table of {', '.join(PLATFORM_KEYS)}")
    deployments = raw.get("deployment_ids")
    if not isinstance(deployments, list) or not deployments or not all(isinstance(d, str) and d for d in deployments):
        raise ConfigurationError(f"{where}: `deployment_ids` must list the platform's deployment ids (texts)")
    audience = raw.get("auth_audience")
    return Platform(issuer=_text(raw, "issuer", where), client_id=_text(raw, "client_id", where),
                    deployment_ids=tuple(deployments),
                    auth_login_url=_address(raw, "auth_login_url", where),
                    auth_token_url=_address(raw, "auth_token_url", where),
                    key_set_url=_address(raw, "key_set_url", where),
                    auth_audience=audience if isinstance(audience, str) and audience else None)


def _policy(raw: dict, name: str, where: str, *, attempts: int | None, hidden: str) -> Policy:
    """[policies.NAME]'s times and late rule, each checked (attempts and hidden are checked by the caller)."""
    for key in ("deadline", "late_until"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigurationError(f"{where}: [policies.{name}] {key} is a time in quotes, "
                                     "\"2026-12-01T23:59:00+01:00\"")
    deadline, late_until = (parse_time(raw[key], what=f"[policies.{name}] {key}") if key in raw else None
                            for key in ("deadline", "late_until"))
    rule = {key: raw[f"late_{key}"] for key in ("per_day", "zero_after_days", "grace_minutes")
            if f"late_{key}" in raw}
    if late_until is not None and (deadline is None or late_until <= deadline):
        raise ConfigurationError(f"{where}: [policies.{name}] late_until must come after a deadline (late uploads "
                                 "are taken from the deadline until then)")
    if rule and late_until is None:
        raise ConfigurationError(f"{where}: [policies.{name}] late_{next(iter(rule))} needs late_until (without it "
                                 "no upload is taken after the deadline)")
    if not all(isinstance(value, int | float) and not isinstance(value, bool) for value in rule.values()):
        raise ConfigurationError(f"{where}: [policies.{name}] late_per_day, late_zero_after_days and "
                                 "late_grace_minutes are numbers")
    try:
        late = LatePolicy(**rule) if rule else None
    except ConfigurationError as problem:
        raise ConfigurationError(f"{where}: [policies.{name}] {problem}") from None
    return Policy(deadline=deadline, attempts=attempts, hidden=hidden, late_until=late_until, late=late)


def _limits(raw: Any, where: str) -> Limits:
    counts = ("waiting", "per_hour", "requests", "launches")
    if not isinstance(raw, dict) or set(raw) - {*counts, "window_s"} or not all(
            isinstance(raw[k], int) and not isinstance(raw[k], bool) and raw[k] >= 1 for k in counts if k in raw):
        raise ConfigurationError(f"{where}: [limits] holds {', '.join(f'`{k}`' for k in counts)} (whole numbers from "
                                 "1) and `window_s` (seconds)")
    window = raw.get("window_s", Limits.window_s)
    if isinstance(window, bool) or not isinstance(window, int | float) or not 0 < window <= 86400:
        raise ConfigurationError(f"{where}: [limits] window_s must be a number of seconds above 0, at most a day")
    limits = Limits(**{k: v for k, v in raw.items() if k != "window_s"}, window_s=float(window))
    # A student waiting for a grade keeps the page open, reloading itself: those reloads must never be refused.
    if limits.requests < POLLING_TABS or limits.requests / limits.window_s < POLLING_TABS / PAGE_REFRESH_S:
        raise ConfigurationError(
            f"{where}: [limits] requests = {limits.requests} every {window:g} s would refuse a waiting student's "
            f"pages, which reload every {PAGE_REFRESH_S:g} s: allow at least {POLLING_TABS} at once and "
            f"{POLLING_TABS / PAGE_REFRESH_S:g} a second (a student with {POLLING_TABS} pages open)")
    return limits


def load_config(path: Path) -> ServeConfig:
    """The configuration at ``path``, checked whole (every fault named with its key), keys made if missing."""
    raw = _read(path)
    base = path.resolve().parent
    where = str(path)
    url = _address(raw, "url", where).rstrip("/")
    if urlsplit(url).scheme != "https" and urlsplit(url).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise ConfigurationError(f"{where}: `url` must be https (the platform frames the tool and its cookies are "
                                 "Secure): put the tool behind the course's TLS reverse proxy (docs/lms.md)")
    platforms = raw.get("platforms")
    if not isinstance(platforms, list) or not platforms:
        raise ConfigurationError(f"{where}: no [[platforms]]: register the tool in the course platform and copy "
                                 "its issuer, client id, deployment id and addresses here (docs/lms.md)")
    solutions = (base / raw["solutions"]) if isinstance(raw.get("solutions"), str) else SOLUTIONS_DIR
    offered = raw.get("assignments")
    known = available_assignments(solutions)
    if not isinstance(offered, list) or not offered:
        raise ConfigurationError(f"{where}: `assignments` must list the assignments offered (of {', '.join(known)})")
    for name in offered:
        if name not in known:
            raise ConfigurationError(f"{where}: no assignment {name!r} in {solutions} (there are {', '.join(known)})")
    seen = set()
    for index, platform in enumerate(parsed := [_platform(p, f"{where}, platforms[{index}]")
                                               for index, p in enumerate(platforms)]):
        key = (platform.issuer, platform.client_id)
        if key in seen:
            raise ConfigurationError(f"{where}, platforms[{index}]: issuer and client id registered twice")
        seen.add(key)
    graders = raw.get("graders", 1)
    max_upload = raw.get("max_upload_bytes", DEFAULT_MAX_UPLOAD)
    if not isinstance(graders, int) or not 1 <= graders <= 64:
        raise ConfigurationError(f"{where}: `graders` must be a whole number from 1 to 64")
    if not isinstance(max_upload, int) or not 1 <= max_upload <= 256 << 20:
        raise ConfigurationError(f"{where}: `max_upload_bytes` must be a whole number of bytes up to 256 MiB")
    policies = {}
    raw_policies = raw.get("policies", {})
    if not isinstance(raw_policies, dict):
        raise ConfigurationError(f"{where}: `policies` is a table of assignments ([policies.NAME])")
    for name, policy in raw_policies.items():
        if name not in offered or not isinstance(policy, dict):
            raise ConfigurationError(f"{where}: [policies.{name}] names no assignment of `assignments`")
        deadline = policy.get("deadline")
        attempts = policy.get("attempts")
        if attempts is not None and (not isinstance(attempts, int) or attempts < 1):
            raise ConfigurationError(f"{where}: [policies.{name}] attempts must be a whole number from 1")
        hidden = policy.get("hidden", "at_once")
        if hidden not in ("at_once", "after_deadline") or (hidden == "after_deadline" and deadline is None):
            raise ConfigurationError(f"{where}: [policies.{name}] hidden is \"at_once\" or \"after_deadline\" (which "
                                     "needs a deadline)")
        policies[name] = _policy(policy, name, where, attempts=attempts, hidden=hidden)
    limits = _limits(raw.get("limits", {}), where)
    frame_ancestors = raw.get("frame_ancestors", [])
    if not isinstance(frame_ancestors, list) or not all(
            isinstance(a, str) and urlsplit(a).scheme in ("http", "https") and urlsplit(a).netloc
            and not urlsplit(a).path.strip("/") for a in frame_ancestors):
        raise ConfigurationError(f"{where}: `frame_ancestors` lists origins such as \"https://lms.example.edu\"")
    config = ServeConfig(
        url=url, data=base / raw.get("data", "serve-data"), assignments=tuple(offered), platforms=tuple(parsed),
        private_key=base / raw.get("private_key", "keys/tool.pem"),
        public_key=base / raw.get("public_key", "keys/tool.pub.pem"), solutions=solutions,
        max_upload_bytes=max_upload, graders=graders, sandbox=str(raw.get("sandbox", "require")),
        trusted_proxy=str(raw.get("trusted_proxy", "")), scheduler=str(raw.get("scheduler", "")),
        policies=policies, limits=limits,
        frame_ancestors=tuple(a.rstrip("/") for a in frame_ancestors))
    ensure_key_pair(config.private_key, config.public_key)
    return config


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into a new file only its owner can read (created with mode 0600, never widened)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


def ensure_key_pair(private: Path, public: Path) -> bool:
    """The tool's RSA 2048 key pair at ``private`` (mode 0600) and ``public``, made once; True when made now. A
    private key readable by others is refused: whoever reads it can sign as the tool."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    if private.exists():
        if private.stat().st_mode & 0o077:
            raise ConfigurationError(f"{private} can be read by others: the tool's private key must be private "
                                     f"(chmod 600 {private})")
        if not public.exists():
            key = serialization.load_pem_private_key(private.read_bytes(), password=None)
            public.parent.mkdir(parents=True, exist_ok=True)
            public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                             serialization.PublicFormat.SubjectPublicKeyInfo))
        return False
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_private(private, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    public.parent.mkdir(parents=True, exist_ok=True)
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return True


def session_secret(data: Path) -> bytes:
    """The key that signs the tool's session cookies, made once (256 random bits, mode 0600) in the data folder, so a
    restart keeps everyone's sessions."""
    path = data / "session-secret"
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # another start made it first
            _write_private(path, secrets.token_bytes(32))
    return path.read_bytes()


def tool_conf(config: ServeConfig) -> Any:
    """pylti1p3's view of the registrations (ToolConfDict), with the tool's key pair for each."""
    from pylti1p3.tool_config import ToolConfDict

    settings: dict[str, list[dict[str, Any]]] = {}
    for platform in config.platforms:
        settings.setdefault(platform.issuer, []).append({
            "default": not settings.get(platform.issuer), "client_id": platform.client_id,
            "auth_login_url": platform.auth_login_url, "auth_token_url": platform.auth_token_url,
            "auth_audience": platform.auth_audience, "key_set_url": platform.key_set_url, "key_set": None,
            "deployment_ids": list(platform.deployment_ids)})
    conf = ToolConfDict(settings)
    private = config.private_key.read_text(encoding="utf-8")
    public = config.public_key.read_text(encoding="utf-8")
    for platform in config.platforms:
        conf.set_private_key(platform.issuer, private, client_id=platform.client_id)
        conf.set_public_key(platform.issuer, public, client_id=platform.client_id)
    return conf
