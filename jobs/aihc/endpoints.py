"""Where AIHC answers and which API generations it has: plain data and one pure function,
importable from console/settings.py, which checks AIHC_REGION/AIHC_ENDPOINT at start."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

V1 = "v1"
V2 = "v2"
API_VERSIONS = (V1, V2)

# [aihc] configure.py and the AIHC endpoint page agree on these hosts.
REGION_HOSTS = {
    "cn-beijing": "aihc.bj.baidubce.com",
    "cn-guangzhou": "aihc.gz.baidubce.com",
    "cn-suzhou": "aihc.su.baidubce.com",
    "cn-baoding": "aihc.bd.baidubce.com",
    "cn-wuhan": "aihc.fwh.baidubce.com",
    "cn-yangquan": "aihc.yq.baidubce.com",
}

# A host name (urlsplit gives it lowercased): dot-separated labels of letters, digits and
# inner hyphens (underscores too, as some internal names have). Without it, a typo taken as https://<it> ("http//host", "%host%") passed the
# start and failed at every call (qa46).
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?")


def _is_host(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return bool(_HOST_NAME.fullmatch(name))
    return True


def endpoint_for(*, region: str = "", endpoint: str = "") -> str:
    """The base URL: an explicit endpoint wins, else the region's HTTPS host."""
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        try:
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        except ValueError:
            raise ValueError(f"AIHC endpoint {endpoint!r} has no valid port") from None
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or not _is_host(parts.hostname)
            or parts.path.startswith("//")  # "http//host": the colon left out
        ):
            raise ValueError(f"AIHC endpoint {endpoint!r} is not an http(s) URL")
        return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    if region not in REGION_HOSTS:
        known = ", ".join(REGION_HOSTS)
        raise ValueError(f"Unknown AIHC region {region!r}; use one of {known} or an endpoint")
    return f"https://{REGION_HOSTS[region]}"
