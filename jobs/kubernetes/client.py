"""A thin httpx client for the Kubernetes API server: bearer token, the cluster's CA.

Reads are retried with exponential backoff on connection errors, timeouts, 500 and 503;
creates, patches and deletes never are (the backend decides what to do when one got no
answer: the deterministic object name makes looking first cheap). Failures become
`KubeError`, carrying the API server's Status (reason, code, message); the token is never
in a message, a log line or a repr.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, BinaryIO

import httpx
from django.utils.translation import gettext_lazy

from jobs.backends.base import (
    CONNECTION_CLOSED,
    DOWNLOAD_TOO_LONG,
    BackendError,
    DownloadTooLong,
    PlatformRetries,
    connection_closed,
    request_json,
    send_by,
)
from jobs.texts import binary_size

logger = logging.getLogger("jobs.kubernetes")

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"


class KubeError(BackendError):
    """A call failed: the Status `reason` (AlreadyExists, NotFound, Invalid, Forbidden...)
    is the error code, `status` the HTTP status."""

    def __init__(self, message: str, *, reason: str = "", status: int = 0, cause: str = ""):
        super().__init__(message, code=reason)
        self.reason = reason
        self.status = status
        self.cause = cause

    def __str__(self) -> str:
        details = ", ".join(
            p for p in (self.reason, self.cause, f"HTTP {self.status}" if self.status else "") if p
        )
        return f"{self.message} ({details})" if details else self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class KubeUnavailable(KubeError):
    """The request never reached the API server (connection refused, DNS, TLS), or it
    refused the console's token (401, reason Unauthorized): no call can be carried out."""


class KubeTimeout(KubeError):
    """No answer: not in time, or the server closed the connection without answering (reason
    CONNECTION_CLOSED). A create or delete may or may not have happened."""


def kube_time(stamp: Any) -> datetime | None:
    """An RFC 3339 time of the API (metav1.Time, MicroTime) as an aware datetime, or None."""
    if not isinstance(stamp, str) or not stamp.strip():
        return None
    try:
        when = datetime.fromisoformat(stamp.strip())
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


class KubeClient(PlatformRetries):
    """One API server, one identity. Thread-safe (httpx.Client is)."""

    retry_logger = logger
    retry_log = "Kubernetes %s %s failed (%s); retrying in %.2fs"

    def __init__(
        self,
        *,
        server: str,
        token: str,
        ca_file: str = "",
        connect_timeout: float = 5.0,
        read_timeout: float = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        deadline: float | None = None,
        call_seconds: float | None = None,
    ):
        """`deadline` (monotonic): every call, its tries and the reading of its answer
        included, ends by then (a whole-log download: jobs.backends.base.send_by).
        `call_seconds`: each call, its connection, tries and whole answer included, is given
        up this many seconds after it began, as one that got no answer (KubeTimeout
        "Timeout"): a page's Stop or Delete, which a server sending its answer a few bytes
        at a time held past every read timeout (review 46: 30 pieces 0.2 s apart held a
        Stop 5.9 s with a read timeout of 0.3 s). A client has one or the other."""
        self.server = server.rstrip("/")
        self._token = token
        self.retries = retries
        self.deadline = deadline
        self.call_seconds = call_seconds
        self.backoff = backoff
        self.sleep = sleep
        self.timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        verify: ssl.SSLContext | bool = True
        if ca_file:
            verify = ssl.create_default_context(cafile=ca_file)
        self._http = httpx.Client(
            timeout=self.timeout,
            transport=transport,
            verify=verify,
            follow_redirects=False,
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"KubeClient({self.server!r})"

    @property
    def token(self) -> str:
        return self._token

    @token.setter
    def token(self, rotated: str) -> None:
        """The token the next calls send (a rotated token file's: jobs.backends.kubernetes
        `_setup`). A call already sent keeps the one it was sent with, its tries included,
        as the token before stays valid until it expires."""
        self._token = rotated

    def close(self) -> None:
        self._http.close()

    # -- transport -----------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Iterable[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = JSON,
        idempotent: bool,
        text: bool = False,
        into: BinaryIO | None = None,
    ) -> Any:
        """Sends one request; the decoded JSON object (or the text, `text=True`; written to
        `into` instead, its answer then "")."""
        params = [(k, str(v)) for k, v in params if v is not None]
        headers = {"Authorization": f"Bearer {self._token}", "Accept": JSON}
        content = None
        if body is not None:
            content = request_json(body).encode("utf-8")  # the review's text, byte for byte
            headers["Content-Type"] = content_type
        if text:
            headers["Accept"] = "text/plain, */*"
        response = self._answer(
            method,
            path,
            idempotent=idempotent,
            send=lambda deadline: send_by(
                self._http,
                self._http.build_request(
                    method, f"{self.server}{path}", params=params, headers=headers, content=content
                ),
                deadline=deadline,
                into=into,
                page=self.call_seconds is not None,
            ),
        )
        return self._decode(response, text=text)

    @staticmethod
    def _transport_error(exc: httpx.TransportError) -> KubeError:
        reason = type(exc).__name__
        if isinstance(exc, DownloadTooLong):
            return KubeTimeout(
                gettext_lazy("The Kubernetes API server was still sending it, %(received)s in")
                % {"received": binary_size(exc.received)},
                reason=DOWNLOAD_TOO_LONG,
            )
        if "CERTIFICATE_VERIFY_FAILED" in str(exc):
            return KubeUnavailable(
                gettext_lazy(
                    "The Kubernetes API server's certificate is not trusted (KUBERNETES_CA_FILE)"
                ),
                reason="CertificateNotTrusted",
                cause=reason,
            )
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return KubeUnavailable(
                gettext_lazy("The Kubernetes API server could not be reached"),
                reason="Unreachable",
                cause=reason,
            )
        if connection_closed(exc):
            return KubeTimeout(
                gettext_lazy("The Kubernetes API server closed the connection without answering"),
                reason=CONNECTION_CLOSED,
                cause=reason,
            )
        return KubeTimeout(
            gettext_lazy("The Kubernetes API server did not answer in time"),
            reason="Timeout",
            cause=reason,
        )

    @staticmethod
    def _decode(response: httpx.Response, *, text: bool) -> Any:
        if response.is_success:
            if text:
                return response.text
            try:
                data = response.json() if response.content else {}
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise KubeError(
                    gettext_lazy(
                        "The Kubernetes API server answered with something that is not a JSON object."
                    ),
                    reason="InvalidResponse",
                    status=response.status_code,
                )
            return data
        if response.status_code == 401:
            # The console's own token (expired, or rotated without KUBERNETES_TOKEN_FILE): no
            # call is carried out, whichever job asks, as with a CA not trusted; so not the
            # job's refusal (qa103: every job submitted meanwhile was Submission failed).
            raise KubeUnavailable(
                gettext_lazy(
                    "The console's Kubernetes token was refused: renew KUBERNETES_TOKEN_FILE"
                ),
                reason="Unauthorized",
                status=401,
            )
        try:
            data = response.json()
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        raise KubeError(
            str(data.get("message") or "")
            or response.reason_phrase
            or gettext_lazy("The Kubernetes API server refused the request."),
            reason=str(data.get("reason") or "") or f"HTTP{response.status_code}",
            status=response.status_code,
        )

    # -- calls ---------------------------------------------------------------------

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST; never retried (a create that got no answer is looked for by name)."""
        return self.request(
            "POST", path, params=[("fieldValidation", "Strict")], body=body, idempotent=False
        )

    def get(self, path: str, **params: str) -> dict[str, Any]:
        return self.request("GET", path, params=params.items(), idempotent=True)

    def list(
        self, path: str, *, label_selector: str = "", field_selector: str = ""
    ) -> list[dict[str, Any]]:
        params = []
        if label_selector:
            params.append(("labelSelector", label_selector))
        if field_selector:
            params.append(("fieldSelector", field_selector))
        data = self.request("GET", path, params=params, idempotent=True)
        items = data.get("items")
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.request(
            "PATCH",
            path,
            params=[("fieldValidation", "Strict")],
            body=body,
            content_type=MERGE_PATCH,
            idempotent=False,
        )

    def delete(self, path: str, *, propagation: str = "Background") -> dict[str, Any]:
        return self.request(
            "DELETE", path, params=[("propagationPolicy", propagation)], idempotent=False
        )

    def pod_log(
        self,
        namespace: str,
        pod: str,
        *,
        container: str = "",
        tail: int | None = None,
        since: datetime | None = None,
        into: BinaryIO | None = None,
    ) -> list[str]:
        """The container's log lines; with `into`, written there (UTF-8) and none returned."""
        params: list[tuple[str, str]] = []
        if container:
            params.append(("container", container))
        if tail is not None:
            params.append(("tailLines", str(tail)))
        if since is not None:
            params.append(("sinceTime", since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")))
        text = self.request(
            "GET",
            f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
            params=params,
            idempotent=True,
            text=True,
            into=into,
        )
        return text.splitlines()
