"""LTI 1.3 through pylti1p3: its launch data kept in the serve database, its HTTP calls bounded in time, what a
verified launch says (who, which course, which role, where scores go), and a score sent with Assignment and Grade
Services.

pylti1p3 verifies the id_token: its signature against the platform's key set (fetched from the registration's
key_set_url), the issuer and client id against the registrations, the deployment id, the message's claims, the
expiry, the OIDC state (a cookie set at login) and that the nonce is one this tool issued. On top of it the tool
takes each nonce once (``ServeStore.use_nonce``): a launch posted again, by a replay or a reload, is refused."""

from __future__ import annotations

import json
from typing import Any

import requests
from pylti1p3.launch_data_storage.base import LaunchDataStorage

from grader.serve.store import ServeStore

HTTP_TIMEOUT_S = 10.0
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
TARGET = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
INSTRUCTOR_ROLES = ("http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
                    "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
                    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
                    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
                    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant")
LEARNER_ROLES = ("http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",
                 "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student")


class StoredLaunchData(LaunchDataStorage[Any]):
    """pylti1p3's launch data storage on the serve database: the OIDC nonce and state parameters between login and
    launch, and the verified launches, kept server-side (a Flask session cookie would outgrow 4 KB with a launch's
    claims). Not tied to a session cookie: the state itself is tied to the browser by pylti1p3's state cookie."""

    def __init__(self, store: ServeStore) -> None:
        super().__init__()
        self.store = store

    def get_session_cookie_name(self) -> None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        return self.store.get_value(self._prepare_key(key))

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        self.store.put_value(self._prepare_key(key), value, exp)

    def check_value(self, key: str) -> bool:
        return self.store.get_value(self._prepare_key(key)) is not None


class BoundedSession(requests.Session):
    """A requests session whose every call has a time limit: pylti1p3 passes none, and a platform that does not
    answer must not hold a grading thread or the score sender."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", HTTP_TIMEOUT_S)
        return super().request(method, url, *args, **kwargs)


def role_of(roles: list[str]) -> str | None:
    """"instructor", "learner" or None (a role this tool offers nothing to: an observer, a guest)."""
    if any(r in INSTRUCTOR_ROLES for r in roles):
        return "instructor"
    if any(r in LEARNER_ROLES for r in roles):
        return "learner"
    return None


def ags_claim(body: dict[str, Any]) -> dict[str, Any]:
    claim = body.get(AGS) or {}
    return {k: claim[k] for k in ("scope", "lineitem", "lineitems") if k in claim}


def send_score(conf: Any, issuer: str, client_id: str, ags: dict[str, Any], payload: dict[str, Any],
               *, session: requests.Session | None = None) -> tuple[bool, int | None, str]:
    """Post one score with pylti1p3's AssignmentsGradesService to the line item of the launch's AGS claim (or, where
    the platform gave only its line items' address, the line item of this assignment, made if missing). Returns
    (accepted, HTTP status, the platform's answer or the failure); never raises for the platform's faults."""
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.exception import LtiException, LtiServiceException
    from pylti1p3.grade import Grade
    from pylti1p3.lineitem import LineItem
    from pylti1p3.service_connector import ServiceConnector

    registration = conf.find_registration_by_params(issuer, client_id)
    if registration is None:
        return False, None, f"no registration for issuer {issuer} and client id {client_id} in the configuration"
    connector = ServiceConnector(registration, requests_session=session or BoundedSession())
    service = AssignmentsGradesService(connector, ags)
    grade = (Grade().set_score_given(payload["scoreGiven"]).set_score_maximum(payload["scoreMaximum"])
             .set_activity_progress(payload["activityProgress"]).set_grading_progress(payload["gradingProgress"])
             .set_timestamp(payload["timestamp"]).set_user_id(payload["userId"]))
    if payload.get("comment"):
        grade.set_comment(payload["comment"])
    lineitem = None
    if not ags.get("lineitem"):
        lineitem = (LineItem().set_tag("attention-grader").set_resource_id(payload["assignment"])
                    .set_label(payload["assignment"]).set_score_maximum(payload["scoreMaximum"]))
    try:
        answer = service.put_grade(grade, lineitem)
    except requests.JSONDecodeError:  # raised only once the platform said yes (2xx), with a body that is not JSON
        return True, 200, "accepted (the answer was not JSON)"
    except LtiServiceException as exc:  # the platform's refusal: its status and body
        response = getattr(exc, "response", None)
        status = response.status_code if response is not None else None
        body = response.text if response is not None else str(exc)
        # 409: the platform holds a score with a later timestamp (a later upload's): this one is rightly not applied
        return status == 409, status, body[:2000]
    except (LtiException, requests.RequestException, ValueError, KeyError) as exc:
        return False, None, f"{type(exc).__name__}: {exc}"[:2000]
    return True, 200, json.dumps(answer.get("body"))[:2000] if isinstance(answer, dict) else str(answer)[:2000]
