"""A course platform for the tests of ``grader serve``: lti1p3platform (an LTI 1.3 platform library by others: OIDC
login, signed launch messages, the access-token endpoint and Assignment and Grade Services) behind a small Flask app,
served by waitress on 127.0.0.1 in a thread.

What the library leaves to its host is written here: where its users are (``users``; a user's ``context``, the
course they launch from, is CONTEXT unless it says another), what its launch form does (returned as JSON, which the
test's browser then posts to the tool, as the platform's auto-submitted form would), and its gradebook (``scores``,
every score AGS accepted, in order). Its faults, for the tests that need them: a launch signed by another key under
the platform's own key id (``forged``), one expired (``expired``), and score posts refused with 503 until
``refuse_scores`` reaches 0."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
import jwt
import lti1p3platform
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, Response, redirect, request
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService
from waitress.server import create_server

from grader.serve.server import serve_until

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
CLIENT_ID = "grader-tool"
DEPLOYMENT_ID = "deployment-1"
CONTEXT = "course-101"
# lti1p3platform's launch page (its framework.templates module loads it with pkg_resources, gone from setuptools).
LAUNCH_PAGE = jinja2.Environment(autoescape=True, loader=jinja2.FileSystemLoader(
    Path(lti1p3platform.__file__).parent / "framework" / "templates")).get_template("launch.html")


def new_key() -> tuple[str, str]:
    """An RSA 2048 key pair as PEM texts (private, public)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class FlaskPlatformRequest(Request):
    """lti1p3platform's view of a Flask request (as its Django and FastAPI adapters build theirs)."""

    def build_metadata(self, flask_request: Any) -> TRequest:
        return {"method": flask_request.method, "form_data": flask_request.form.to_dict(),
                "get_data": flask_request.args.to_dict(), "headers": flask_request.headers,
                "content_type": flask_request.content_type, "path": flask_request.path,
                "json": flask_request.get_json(silent=True)}


class PlatformConf(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self.the_registration: Registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self.the_registration


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> Response:
        return redirect(url)


class Launch(LTIAdvantageMessageLaunchAbstract):
    html = False

    def render_launch_form(self, launch_data: dict[str, Any], **kwargs: Any) -> Response:
        if self.html:  # for a real browser: lti1p3platform's own launch page, which posts its form at once
            return Response(LAUNCH_PAGE.render(**launch_data), mimetype="text/html")
        # For the tests' HTTP client, the same form as data: the test posts it to the tool.
        return Response(json.dumps(launch_data), mimetype="application/json")


@dataclass
class CoursePlatform:
    """The platform served: its address, its registration of the tool, its users and its gradebook."""

    url: str = ""
    tool_url: str = ""
    private_key: str = ""
    public_key: str = ""
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    score_posts: int = 0
    refuse_scores: int = 0
    score_gate: threading.Event | None = None  # set: a score post waits until it is (at most 30 s) before answering
    forger_key: str = ""
    server: Any = None
    thread: threading.Thread | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)

    def registration(self, assignment: str) -> Registration:
        return (Registration().set_iss(self.url).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT_ID)
                .set_oidc_login_url(f"{self.tool_url}/lti/login")
                .set_launch_url(f"{self.tool_url}/lti/launch/{assignment}")
                .set_tool_key_set_url(f"{self.tool_url}/lti/jwks")
                .set_platform_public_key(self.public_key).set_platform_private_key(self.private_key))

    def conf(self, assignment: str = "attention_scoring") -> PlatformConf:
        return PlatformConf(registration=self.registration(assignment))

    def lineitems_url(self) -> str:
        return f"{self.url}/ags/{CONTEXT}/lineitems"

    def course_url(self, user: str, assignment: str) -> str:
        """The course's page with the assignment in a frame (for a real browser)."""
        return f"{self.url}/course?{urlencode({'user': user, 'assignment': assignment})}"

    def start_url(self, user: str, assignment: str, mode: str = "ok") -> str:
        """Where a user's click on the assignment's link in the course goes first."""
        return f"{self.url}/start?{urlencode({'user': user, 'assignment': assignment, 'mode': mode})}"

    def close(self) -> None:
        self.stopping.set()
        if self.thread is not None:
            self.thread.join(10)
            assert not self.thread.is_alive(), "the test platform did not stop"

    def serve(self) -> None:
        """Until ``close``, as the tool serves (the tool keeps its connections to the token and score addresses
        alive: waitress's own ``run`` would wait for them to time out)."""
        serve_until(self.server, self.stopping.is_set)

    def scores_for(self, user: str) -> list[dict[str, Any]]:
        with self.lock:
            return [s for s in self.scores if s["userId"] == user]


class PlatformAgs(AssignmentsGradesService):
    """AGS on the platform's side: lti1p3platform checks each call's access token and scope; the line items and the
    gradebook are this platform's."""

    platform: CoursePlatform

    def find_lineitems(self, page: int = 1, limit: int | None = None, line_item_id: str | None = None,
                       resource_link_id: str | None = None, resource_id: str | None = None,
                       tag: str | None = None) -> Any:
        return {"content": [], "has_next": False, "next": None}

    def find_lineitem(self, line_item_id: str) -> Any:
        return {"id": f"{self.platform.lineitems_url()}/{line_item_id}", "scoreMaximum": 100, "label": line_item_id}

    def create_lineitem(self, creation_data: Any) -> Any:
        raise LineItemNotFoundException("this platform makes one line item per link itself")

    def update_lineitem(self, update_data: Any) -> Any:
        raise LineItemNotFoundException("no line items are changed here")

    def delete_lineitem(self, line_item_id: str) -> None:
        raise LineItemNotFoundException("no line items are deleted here")

    def update_score(self, line_item_id: str, score: Any) -> UpdateScoreStatus:
        with self.platform.lock:
            self.platform.scores.append({**score, "lineitem": line_item_id})
        return UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None,
                    user_id: str | None = None) -> Any:
        with self.platform.lock:
            found = [s for s in self.platform.scores if s["lineitem"] == line_item_id]
        return {"content": found, "has_next": False, "next": None}


def _answer(response: Any) -> Response:
    body = "" if response.result is None else json.dumps(response.result)
    if response.result is None and response.code < 400:
        body = json.dumps({"status": response.message})
    return Response(body or json.dumps({"error": response.message}), status=response.code,
                    mimetype=response.media_type)


def platform_app(platform: CoursePlatform) -> Flask:
    app = Flask("test_platform")

    @app.get("/start")
    def start() -> Response:
        user, assignment, mode = request.args["user"], request.args["assignment"], request.args.get("mode", "ok")
        login = Login(FlaskPlatformRequest(request), platform.conf(assignment))
        login.set_lti_message_hint(hint=json.dumps({"assignment": assignment, "mode": mode}))
        login.set_launch_url(f"{platform.tool_url}/lti/launch/{assignment}")
        return login.initiate_login(user)

    @app.get("/course")
    def course() -> Response:
        """The course's page of the assignment, with the tool in its frame, as Moodle's "Embed" shows it."""
        start = f"/start?{urlencode({**request.args.to_dict(), 'mode': 'html'})}"
        return Response(f'<!doctype html><title>Course</title><link rel="icon" href="data:,"><h1>Attention 101</h1>'
                        f'<iframe src="{escape(start)}" title="assignment" width="1000" height="700"></iframe>',
                        mimetype="text/html")

    @app.route("/auth", methods=["GET", "POST"])
    def auth() -> Response:
        hint = json.loads(request.values["lti_message_hint"])
        user = platform.users[request.values["login_hint"]]
        launch = Launch(FlaskPlatformRequest(request), platform.conf(hint["assignment"]))
        launch.html = hint["mode"] == "html"
        launch.set_launch_url(f"{platform.tool_url}/lti/launch/{hint['assignment']}")
        launch.set_user_data(user["sub"], [user["role"]], full_name=user.get("name"))
        launch.set_launch_context_claim(user.get("context", CONTEXT), context_title="Attention 101")
        launch.set_resource_link_claim(f"link-{hint['assignment']}", title=hint["assignment"])
        launch.set_ags(platform.lineitems_url(), f"{platform.lineitems_url()}/{hint['assignment']}",
                       allow_creating_lineitems=False)
        if hint["mode"] == "expired":
            launch.set_id_token_expiration(-120)
        if hint["mode"] != "forged":
            return launch.lti_launch()
        # Forged: the same message signed with another key, under the platform's own key id.
        launch._registration = launch._platform_config.get_registration()
        launch.validate_preflight_response(launch.get_preflight_response())
        message, state = launch.get_launch_data()
        message.update({"iat": int(time.time()), "exp": int(time.time()) + 300})
        kid = launch._registration.get_kid()
        token = jwt.encode(message, platform.forger_key, algorithm="RS256", headers={"kid": kid})
        return Response(json.dumps({"id_token": token, "state": state, "launch_url": launch._redirect_url}),
                        mimetype="application/json")

    @app.get("/jwks")
    def jwks() -> Response:
        conf = platform.conf()
        conf.get_registration()
        return Response(json.dumps(conf.get_jwks()), mimetype="application/json")

    @app.post("/token")
    def token() -> Response:
        conf = platform.conf()
        conf.get_registration()
        try:
            answer = conf.get_access_token(request.form.to_dict())
        except Exception as exc:
            return Response(json.dumps({"error": "invalid_client", "error_description": str(exc)}), status=400,
                            mimetype="application/json")
        return Response(json.dumps(answer), mimetype="application/json")

    @app.post("/ags/<context>/lineitems/<item>/scores")
    def scores(context: str, item: str) -> Response:
        if platform.score_gate is not None:
            platform.score_gate.wait(30)
        with platform.lock:
            platform.score_posts += 1
            if platform.refuse_scores > 0:
                platform.refuse_scores -= 1
                return Response(json.dumps({"error": "busy"}), status=503, mimetype="application/json")
        conf = platform.conf()
        conf.get_registration()
        service = PlatformAgs(FlaskPlatformRequest(request), conf, platform.lineitems_url(),
                              f"{platform.lineitems_url()}/{item}", allow_creating_lineitems=False)
        service.platform = platform
        return _answer(service.handle_resp(service.handle_update_score, line_item_id=item))

    return app


def start_platform(tool_url: str, *, host_name: str = "127.0.0.1") -> CoursePlatform:
    """The platform on 127.0.0.1 at a port of the system's choosing, serving in a thread; ``host_name``: the name
    its address uses ("localhost" puts it on another site than a tool at 127.0.0.1, as a course platform is)."""
    private, public = new_key()
    platform = CoursePlatform(tool_url=tool_url, private_key=private, public_key=public, forger_key=new_key()[0])
    platform.server = create_server(platform_app(platform), host="127.0.0.1", port=0, threads=4,
                                    ident="test platform")
    platform.url = f"http://{host_name}:{platform.server.effective_port}"
    platform.thread = threading.Thread(target=platform.serve, name="test-platform", daemon=True)
    platform.thread.start()
    return platform
