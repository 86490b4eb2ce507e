"""The KUBERNETES_* settings read into what the backend uses, checked once at start.

console/settings.py calls `from_settings_values` when `kubernetes` is in CONSOLE_BACKENDS,
so a bad value stops the console at start ("Configuration error: KUBERNETES_..."); the
backend reads the same values again on each call (tests and reloads change them).
Every error message starts with the variable's name.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jobs import spec as S

from .manifests import CLAIM_TYPES, TRAINING_APIS, Accelerator, Cluster

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
POOL_PREFIX = "k8s-"
# DNS-1123 label (namespaces, queue and priority class names are at most this long here).
DNS_LABEL_RE = re.compile(r"^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(
    r"^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$"
)
# An extended resource name: a domain prefix and a name (nvidia.com/gpu, baidu.com/a800_x).
RESOURCE_RE = re.compile(
    r"^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


class ConfigError(ValueError):
    pass


def pool_id(namespace: str) -> str:
    return f"{POOL_PREFIX}{namespace}"


def namespace_of(pool: str) -> str:
    return pool[len(POOL_PREFIX) :] if pool.startswith(POOL_PREFIX) else pool


def items(text: str) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def server_url(value: str, *, service_host: str = "", service_port: str = "") -> str:
    """KUBERNETES_API_URL, or in a pod the address Kubernetes gives it
    (KUBERNETES_SERVICE_HOST/PORT); "" when neither is there."""
    if not value and service_host:
        host = f"[{service_host}]" if ":" in service_host else service_host
        value = f"https://{host}:{service_port or '443'}"
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise ConfigError(
            f"KUBERNETES_API_URL is the API server's http(s) URL "
            f"(e.g. https://10.0.0.1:6443), not {value!r}"
        )
    return value.rstrip("/")


def namespaces(text: str) -> list[str]:
    found = items(text)
    for ns in found:
        # The pool id is k8s-<namespace>, and pool ids are at most 64 characters.
        if not DNS_LABEL_RE.match(ns) or len(pool_id(ns)) > 64:
            raise ConfigError(
                f"KUBERNETES_NAMESPACES is namespace names (lowercase letters, digits and "
                f"hyphens, at most 60), not {ns!r}"
            )
    if len(set(found)) != len(found):
        raise ConfigError("KUBERNETES_NAMESPACES names each namespace once")
    return found


def privileged_namespaces(text: str, allowed: list[str]) -> frozenset[str]:
    """KUBERNETES_PRIVILEGED_NAMESPACES: namespaces of KUBERNETES_NAMESPACES whose jobs may
    run privileged containers."""
    found = items(text)
    for ns in found:
        if ns not in allowed:
            raise ConfigError(
                f"KUBERNETES_PRIVILEGED_NAMESPACES names namespaces of KUBERNETES_NAMESPACES "
                f"({', '.join(allowed)}), not {ns!r}"
            )
    return frozenset(found)


def queues(text: str) -> list[str]:
    found = items(text)
    for queue in found:
        if not DNS_LABEL_RE.match(queue):
            raise ConfigError(
                f"KUBERNETES_QUEUES is Kueue LocalQueue names (lowercase letters, digits and "
                f"hyphens), not {queue!r}"
            )
    return found


def accelerators(text: str) -> dict[str, Accelerator]:
    """ "card-type[=resource][;label=value...],...": e.g.
    "baidu.com/a800_80g_cgpu=nvidia.com/gpu;nvidia.com/gpu.product=NVIDIA-A800-SXM4-80GB"."""
    found: dict[str, Accelerator] = {}
    for item in items(text):
        head, *selectors = (part.strip() for part in item.split(";"))
        card, _eq, resource = (part.strip() for part in head.partition("="))
        resource = resource or card
        pairs = [tuple(part.strip() for part in s.partition("=")[::2]) for s in selectors]
        if (
            not RESOURCE_RE.match(card)
            or not RESOURCE_RE.match(resource)
            or card in found
            or any(not S.LABEL_KEY_RE.match(k) or not S.LABEL_VALUE_RE.match(v) for k, v in pairs)
            or any("=" not in s for s in selectors)
        ):
            raise ConfigError(
                "KUBERNETES_ACCELERATORS is card-type[=resource-name][;node-label=value],... "
                "with each card type once (e.g. baidu.com/a800_80g_cgpu=nvidia.com/gpu;"
                f"nvidia.com/gpu.product=NVIDIA-A800-SXM4-80GB), not {item!r}"
            )
        found[card] = Accelerator(card_type=card, resource=resource, node_selector=tuple(pairs))
    return found


def claims(text: str) -> dict[str, str]:
    """ "type=claim,..." (type pfs, nas or cfs) -> {claim: type}."""
    found: dict[str, str] = {}
    for item in items(text):
        kind, _eq, claim = (part.strip() for part in item.partition("="))
        if kind not in CLAIM_TYPES or not DNS_SUBDOMAIN_RE.match(claim) or claim in found:
            raise ConfigError(
                f"KUBERNETES_VOLUMES is type=claim-name,... with type {'/'.join(CLAIM_TYPES)} "
                f"and each PersistentVolumeClaim once (e.g. pfs=datasets), not {item!r}"
            )
        found[claim] = kind
    return found


def host_paths(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items(text):
        name, _eq, root = (part.strip() for part in item.partition("="))
        if (
            not DNS_LABEL_RE.match(name)
            or S.normalised_mount_path(root) is None
            or root == "/"
            or name in found
        ):
            raise ConfigError(
                "KUBERNETES_HOST_PATHS is name=/absolute/node/folder,... with each name once "
                f"(e.g. scratch=/data/scratch), not {item!r}"
            )
        found[name] = root
    return found


def priority_classes(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items(text):
        priority, _eq, name = (part.strip() for part in item.partition("="))
        if priority not in S.PRIORITIES or not DNS_SUBDOMAIN_RE.match(name):
            raise ConfigError(
                "KUBERNETES_PRIORITY_CLASSES is high|normal|low=PriorityClass name,... "
                f"(e.g. high=training-high), not {item!r}"
            )
        found[priority] = name
    return found


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def tolerations(text: str) -> tuple[dict[str, str], ...]:
    """ "key[=value][:Effect],..." -> tolerations: with a value it must equal it, without one
    the taint's key is enough; without an effect every effect is tolerated."""
    found = []
    for item in items(text):
        head, _colon, effect = (part.strip() for part in item.partition(":"))
        key, eq, value = (part.strip() for part in head.partition("="))
        if (
            not S.LABEL_KEY_RE.match(key)
            or (eq and not (value and S.LABEL_VALUE_RE.match(value)))
            or (_colon and effect not in TAINT_EFFECTS)
        ):
            raise ConfigError(
                "KUBERNETES_TOLERATIONS is key[=value][:NoSchedule|PreferNoSchedule|NoExecute],"
                f"... (e.g. dedicated=training:NoSchedule), not {item!r}"
            )
        toleration = {"key": key, "operator": "Equal" if eq else "Exists"}
        if eq:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        found.append(toleration)
    return tuple(found)


def image_pull_secrets(text: str) -> tuple[str, ...]:
    found = items(text)
    for name in found:
        if not DNS_SUBDOMAIN_RE.match(name):
            raise ConfigError(
                f"KUBERNETES_IMAGE_PULL_SECRETS is Secret names (e.g. regcred), not {name!r}"
            )
    return tuple(found)


def training_api(text: str) -> str:
    """KUBERNETES_TRAINING_API: which Kubeflow API PyTorch jobs are created with."""
    value = (text or "").strip() or "v1"
    if value not in TRAINING_APIS:
        raise ConfigError(
            "KUBERNETES_TRAINING_API is v1 (the training operator's PyTorchJob) or trainer "
            f"(Kubeflow Trainer v2's TrainJob), not {text!r}"
        )
    return value


def read_file(variable: str, path: str, *, what: str) -> str:
    try:
        text = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"{variable}={path} cannot be read: {reason}") from None
    if not text:
        raise ConfigError(f"{variable}={path} is empty ({what})")
    return text


def ca_bundle(path: str) -> None:
    """Checks the CA file holds PEM certificates TLS can use (else every call would fail)."""
    read_file("KUBERNETES_CA_FILE", path, what="PEM certificates")
    try:
        ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(
            f"KUBERNETES_CA_FILE={path} holds no PEM certificates TLS can use: {e}"
        ) from None


@dataclass
class Config:
    server: str
    token: str = field(repr=False)
    token_file: str
    ca_file: str
    namespaces: list[str]
    cluster_name: str
    queues: list[str]
    cluster: Cluster
    cache_seconds: float
    wait_seconds: float
    refresh_wait_seconds: float
    connect_timeout: float
    read_timeout: float
    page_read_timeout: float
    download_read_timeout: float
    metrics_seconds: float = 15.0

    @classmethod
    def from_settings(cls, settings: Any) -> Config:
        """Raises ConfigError naming the variable."""
        server = server_url(settings.KUBERNETES_API_URL)
        if not server:
            raise ConfigError(
                "KUBERNETES_API_URL is not set (and the console does not run in a pod, where "
                "KUBERNETES_SERVICE_HOST would give it)"
            )
        token = settings.KUBERNETES_TOKEN
        token_file = settings.KUBERNETES_TOKEN_FILE
        if not token and not token_file:
            raise ConfigError(
                "KUBERNETES_TOKEN (or KUBERNETES_TOKEN_FILE, or a pod's service account "
                "token) is not set"
            )
        if not token:
            read_file("KUBERNETES_TOKEN_FILE", token_file, what="a bearer token")
        if settings.KUBERNETES_CA_FILE:
            ca_bundle(settings.KUBERNETES_CA_FILE)
        found = namespaces(settings.KUBERNETES_NAMESPACES)
        if not found:
            raise ConfigError("KUBERNETES_NAMESPACES names no namespace")
        queue_names = queues(settings.KUBERNETES_QUEUES)
        hosts = host_paths(settings.KUBERNETES_HOST_PATHS)
        return cls(
            server=server,
            token=token,
            token_file=token_file,
            ca_file=settings.KUBERNETES_CA_FILE,
            namespaces=found,
            cluster_name=settings.KUBERNETES_CLUSTER_NAME or "Kubernetes",
            queues=queue_names or ["default"],
            cluster=Cluster(
                accelerators=accelerators(settings.KUBERNETES_ACCELERATORS),
                claims=claims(settings.KUBERNETES_VOLUMES),
                host_paths=hosts,
                priority_classes=priority_classes(settings.KUBERNETES_PRIORITY_CLASSES),
                kueue=bool(queue_names),
                tolerations=tolerations(settings.KUBERNETES_TOLERATIONS),
                image_pull_secrets=image_pull_secrets(settings.KUBERNETES_IMAGE_PULL_SECRETS),
                privileged_namespaces=privileged_namespaces(
                    settings.KUBERNETES_PRIVILEGED_NAMESPACES, found
                ),
                training_api=training_api(settings.KUBERNETES_TRAINING_API),
            ),
            cache_seconds=settings.KUBERNETES_CACHE_SECONDS,
            wait_seconds=settings.KUBERNETES_INVENTORY_WAIT_SECONDS,
            refresh_wait_seconds=settings.KUBERNETES_REFRESH_WAIT_SECONDS,
            connect_timeout=settings.KUBERNETES_CONNECT_TIMEOUT,
            read_timeout=settings.KUBERNETES_READ_TIMEOUT,
            page_read_timeout=settings.KUBERNETES_PAGE_READ_TIMEOUT,
            download_read_timeout=settings.KUBERNETES_DOWNLOAD_READ_TIMEOUT,
            metrics_seconds=settings.KUBERNETES_METRICS_SECONDS,
        )

    def bearer_token(self) -> str:
        """The token: KUBERNETES_TOKEN, else the file's current content (a pod's projected
        service-account token is rotated by the kubelet, so it is read again each time)."""
        if self.token:
            return self.token
        return read_file("KUBERNETES_TOKEN_FILE", self.token_file, what="a bearer token")

    def key(self) -> tuple[Any, ...]:
        return (self.server, self.ca_file, self.token, self.token_file, self.connect_timeout)
