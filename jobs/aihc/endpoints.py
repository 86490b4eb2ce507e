"""Where AIHC answers and which API generations it has: plain data and one pure function,
importable from console/settings.py, which checks AIHC_REGION/AIHC_ENDPOINT at start."""

from __future__ import annotations

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


def endpoint_for(*, region: str = "", endpoint: str = "") -> str:
    """The base URL: an explicit endpoint wins, else the region's HTTPS host."""
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"AIHC endpoint {endpoint!r} is not an http(s) URL")
        return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    if region not in REGION_HOSTS:
        known = ", ".join(REGION_HOSTS)
        raise ValueError(f"Unknown AIHC region {region!r}; use one of {known} or an endpoint")
    return f"https://{REGION_HOSTS[region]}"
