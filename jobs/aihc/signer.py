"""bce-auth-v1 request signing (Baidu Cloud's authentication for the AIHC OpenAPI).

The algorithm, as Baidu's docs and SDKs define it:

    authStringPrefix = bce-auth-v1/{ak}/{timestamp}/{expirationSeconds}
    signingKey       = hex(HMAC-SHA256(sk, authStringPrefix))
    canonicalRequest = METHOD \\n UriEncodeExceptSlash(path) \\n canonicalQuery \\n canonicalHeaders
    signature        = hex(HMAC-SHA256(signingKey as ASCII, canonicalRequest))
    Authorization    = {authStringPrefix}/{signedHeaders}/{signature}

An empty `signedHeaders` means the default set: host, content-length, content-type,
content-md5 and every x-bce-* header (headers with empty values are skipped).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

AUTH_VERSION = "bce-auth-v1"
DEFAULT_EXPIRATION_SECONDS = 1800
_DEFAULT_SIGNED = frozenset({"host", "content-length", "content-type", "content-md5"})
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def uri_encode(value: str, *, keep_slash: bool = False) -> str:
    """RFC 3986 encoding: unreserved characters stay, every other UTF-8 byte is %XX."""
    out = []
    for byte in value.encode("utf-8"):
        if byte in _UNRESERVED or (keep_slash and byte == ord("/")):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def canonical_time(moment: datetime | float) -> str:
    """UTC timestamp as yyyy-mm-ddThh:mm:ssZ."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def canonical_query(params: Iterable[tuple[str, str]]) -> str:
    """Every parameter except `authorization`, encoded as key=value, sorted, joined by &.

    This is also the query string the client sends, so what is signed is what is sent.
    """
    items = [
        f"{uri_encode(key)}={uri_encode(value)}"
        for key, value in params
        if key.lower() != "authorization"
    ]
    return "&".join(sorted(items))


def headers_to_sign(headers: Mapping[str, str], names: Iterable[str] | None) -> dict[str, str]:
    """The headers that take part in the signature, keyed by lower-case name."""
    lowered = {k.strip().lower(): str(v).strip() for k, v in headers.items()}
    if names is None:
        return {
            k: v
            for k, v in lowered.items()
            if v and (k in _DEFAULT_SIGNED or k.startswith("x-bce-"))
        }
    wanted = {n.strip().lower() for n in names}
    return {k: v for k, v in lowered.items() if k in wanted}


def canonical_headers(signed: Mapping[str, str]) -> str:
    return "\n".join(sorted(f"{uri_encode(k)}:{uri_encode(v)}" for k, v in signed.items()))


def canonical_request(
    method: str, path: str, params: Iterable[tuple[str, str]], signed: Mapping[str, str]
) -> str:
    uri = uri_encode(path or "/", keep_slash=True)
    return "\n".join([method.upper(), uri, canonical_query(params), canonical_headers(signed)])


def _hmac_hex(key: str, message: str) -> str:
    return hmac.new(key.encode("utf-8"), message.encode("utf-8"), hashlib.sha256).hexdigest()


def signing_key(secret_key: str, auth_prefix: str) -> str:
    return _hmac_hex(secret_key, auth_prefix)


def authorization(
    *,
    access_key: str,
    secret_key: str,
    method: str,
    path: str,
    params: Iterable[tuple[str, str]],
    headers: Mapping[str, str],
    timestamp: str,
    expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    signed_header_names: Iterable[str] | None = None,
) -> str:
    """The Authorization header value for one request.

    `signed_header_names=None` signs the default set and leaves signedHeaders empty, as
    Baidu's own sample does; a list signs exactly those headers and names them.
    """
    prefix = f"{AUTH_VERSION}/{access_key}/{timestamp}/{expiration_seconds}"
    signed = headers_to_sign(headers, signed_header_names)
    names = "" if signed_header_names is None else ";".join(sorted(signed))
    request = canonical_request(method, path, params, signed)
    signature = _hmac_hex(signing_key(secret_key, prefix), request)
    return f"{prefix}/{names}/{signature}"
