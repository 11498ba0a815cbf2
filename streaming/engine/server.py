"""The engine's control interface: JSON over HTTP on 127.0.0.1, one token per engine.

    GET  /v1/health                          the engine: pid, master, how many deployments
    GET  /v1/deployments                     every deployment it hosts, with its state
    POST /v1/deployments                     start one: {pipeline, version, options, run_id,
                                             claim_within_s (a launch's early start)}
    GET  /v1/deployments/<id>?since=<n>      its state and its reports numbered n and later
    POST /v1/deployments/<id>/stop           stop it at a batch boundary
    POST /v1/shutdown                        stop every deployment, then the engine

Every request carries ``Authorization: Bearer <token>`` (``streaming.engine.address``). An error
is ``{"error": ..., "code": ...}`` with status 400 (a request the engine refuses: the message
says what to fix), 401, 404 or 409 (the deployment runs for another client).
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from pydantic import ValidationError

from streaming.engine.engine import Engine, EngineBusyError, UnknownDeploymentError
from streaming.engine.hosted import DeploymentRequest, HostedDeployment
from streaming.errors import KappaError
from streaming.run.options import RunOptions

log = logging.getLogger(__name__)
PREFIX = "/v1"
# The longest a reader of a deployment's reports is kept waiting for one.
MAX_WAIT_S = 30.0


def deployment_view(
    hosted: HostedDeployment, since: int | None = None, wait_s: float = 0.0
) -> dict[str, Any]:
    """What the deployment is; with ``since``, its reports from that number on, waiting up to
    ``wait_s`` for one (or for a change of state) when there is none yet."""
    if since is not None:
        events, following = hosted.events.since(since, wait_s, lambda: not hosted.active)
        return {**hosted.describe(), "events": events, "next": following}
    return hosted.describe()


def parse_request(body: dict[str, Any]) -> DeploymentRequest:
    """A start request, validated: a bad one is refused with what to fix."""
    try:
        options = RunOptions.model_validate(body.get("options") or {})
    except ValidationError as exc:
        raise KappaError(f"invalid deployment options: {exc}".replace("\n", " ")) from None
    pipeline, version = body.get("pipeline"), body.get("version")
    if not isinstance(pipeline, str) or not isinstance(version, str):
        msg = "a deployment request names its pipeline and version"
        raise KappaError(msg)
    from streaming.define.names import validate_pipeline_name, validate_version

    run_id, claim_within_s = body.get("run_id"), body.get("claim_within_s")
    if claim_within_s is not None and (
        not isinstance(claim_within_s, int | float) or claim_within_s <= 0 or not run_id
    ):
        msg = "claim_within_s is a number of seconds above 0, for a request with a run_id"
        raise KappaError(msg)
    return DeploymentRequest(
        validate_pipeline_name(pipeline),
        validate_version(version),
        options,
        run_id if isinstance(run_id, str) else None,
        None if claim_within_s is None else float(claim_within_s),
    )


def checked_names(pipeline: str, *versions: str) -> tuple[str, ...]:
    """A pipeline's and versions' names from a request's path, refused unless they are names
    (they become paths under the home)."""
    from streaming.define.names import validate_pipeline_name, validate_version

    return (validate_pipeline_name(pipeline), *(validate_version(v) for v in versions))


class EngineServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, engine: Engine, host: str, port: int, token: str, on_shutdown: Callable[[], None]
    ) -> None:
        self.engine = engine
        self.token = token
        self.on_shutdown = on_shutdown
        super().__init__((host, port), _Handler)

    def serve_in_background(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="engine-http", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: EngineServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: clients poll often
        log.debug(format, *args)

    def do_GET(self) -> None:
        self._answer(self._get)

    def do_POST(self) -> None:
        self._answer(self._post)

    def _answer(self, route: Callable[[list[str], dict[str, list[str]]], Any]) -> None:
        if not self._authorised():
            self._send(HTTPStatus.UNAUTHORIZED, {"error": "a valid engine token is required"})
            return
        url = urlparse(self.path)
        parts = [p for p in url.path.removeprefix(PREFIX).split("/") if p]
        try:
            self._send(HTTPStatus.OK, route(parts, parse_qs(url.query)))
        except UnknownDeploymentError as exc:
            self._send(HTTPStatus.NOT_FOUND, {"error": str(exc)})
        except EngineBusyError as exc:
            self._send(HTTPStatus.CONFLICT, {"error": str(exc)})
        except (KappaError, ValueError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc)})

    def _get(self, parts: list[str], query: dict[str, list[str]]) -> Any:
        engine = self.server.engine
        if parts == ["health"]:
            return engine.describe()
        if parts == ["deployments"]:
            return [deployment_view(h) for h in engine.deployments()]
        if len(parts) == 2 and parts[0] == "deployments":
            since = int(query.get("since", ["0"])[0])
            wait_s = min(max(float(query.get("wait_s", ["0"])[0]), 0.0), MAX_WAIT_S)
            return deployment_view(engine.get(parts[1]), since, wait_s)
        raise UnknownDeploymentError(f"no such resource: {self.path}")

    def _post(self, parts: list[str], query: dict[str, list[str]]) -> Any:
        engine = self.server.engine
        if parts == ["deployments"]:
            return deployment_view(engine.submit(parse_request(self._body())))
        if len(parts) == 3 and parts[0] == "deployments" and parts[2] == "stop":
            return deployment_view(engine.stop(parts[1]))
        if len(parts) == 3 and parts[0] == "quality":
            return engine.validate(*checked_names(parts[1], parts[2]))
        if parts == ["shutdown"]:
            self.server.on_shutdown()
            return {"stopping": True}
        raise UnknownDeploymentError(f"no such resource: {self.path}")

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "").removeprefix("Bearer ")
        return hmac.compare_digest(given.encode(), self.server.token.encode())

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not isinstance(body, dict):
            msg = "the request body must be a JSON object"
            raise ValueError(msg)
        return body

    def _send(self, status: HTTPStatus, payload: Any) -> None:
        data = json.dumps(payload, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
