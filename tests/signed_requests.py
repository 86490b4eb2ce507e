"""Requests to the console's AIHC-compatible API signed by hand, as a script with Baidu's SDK
signs them, for the tests that need what AihcClient does not send: an Accept-Language, a
body that is not JSON, a header set of their own. One place builds the signature, so every
such test signs as the others do."""

from __future__ import annotations

import time
from collections.abc import Iterable

import httpx

from jobs.aihc import signer

CONSOLE = "http://testserver"
# What the SDKs' create, list and stop calls sign (Baidu's pool and queue calls sign host only).
SDK_SIGNED = ("host", "x-bce-date")


def signed_headers(
    api_key,
    *,
    method: str,
    path: str,
    query: Iterable[tuple[str, str]],
    headers: dict[str, str] | None = None,
    signed: Iterable[str] | None = SDK_SIGNED,
    host: str = "testserver",
    timestamp: str = "",
) -> dict[str, str]:
    """Host, x-bce-date and `headers`, then an Authorization for `method path?query` made with
    `api_key` (an ApiKey and its secret) over the `signed` names (None: the SDK's default set),
    signed at `timestamp` (now when not given)."""
    key, secret = api_key
    timestamp = timestamp or signer.canonical_time(time.time())
    sent = {"Host": host, "x-bce-date": timestamp, **(headers or {})}
    sent["Authorization"] = signer.authorization(
        access_key=key.access_key_id,
        secret_key=secret,
        method=method,
        path=path,
        params=list(query),
        headers=sent,
        timestamp=timestamp,
        signed_header_names=None if signed is None else list(signed),
    )
    return sent


def signed_request(
    wsgi: httpx.WSGITransport,
    api_key,
    *,
    method: str,
    path: str = "/api/v1/aijobs",
    query: Iterable[tuple[str, str]] = (("resourcePoolId", "local"),),
    headers: dict[str, str] | None = None,
    timestamp: str = "",
    **sent,
) -> httpx.Response:
    """`method path?query` signed as the SDKs sign it, with `headers` (an Accept-Language, a
    Content-Type), through the console's WSGI application; `sent` is httpx's json= or
    content=."""
    query = list(query)
    with httpx.Client(transport=wsgi, base_url=CONSOLE) as http:
        return http.request(
            method,
            path,
            params=query,
            headers=signed_headers(
                api_key, method=method, path=path, query=query, headers=headers, timestamp=timestamp
            ),
            **sent,
        )
