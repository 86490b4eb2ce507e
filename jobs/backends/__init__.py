"""The backends a job can run on, and the small interface the console talks to.

Each resource pool belongs to one backend. `settings.CONSOLE_BACKENDS` lists the enabled
ones; the embedded local runner ("local") is enabled by default.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from django.conf import settings

from .base import (
    AcceleratorStock,
    Backend,
    BackendError,
    NoLog,
    Pool,
    RequestPreview,
    Volume,
    no_log_yet,
    request_json,
)

__all__ = [
    "AcceleratorStock",
    "Backend",
    "BackendError",
    "NoLog",
    "Pool",
    "RequestPreview",
    "Volume",
    "enabled_backends",
    "get_backend",
    "all_pools",
    "configured",
    "find_pool",
    "unconfigured_remote",
    "no_log_yet",
    "request_json",
]

# Backend name -> module defining `backend()`.
BACKEND_MODULES = {
    "local": "jobs.backends.local",
    "aihc": "jobs.backends.aihc",
    "kubernetes": "jobs.backends.kubernetes",
}


@cache
def _load(name: str) -> Backend:
    module = import_module(BACKEND_MODULES[name])
    instance: Backend = module.backend()
    return instance


def get_backend(name: str) -> Backend:
    if name not in BACKEND_MODULES:
        raise BackendError(f"Unknown backend {name!r}")
    return _load(name)


def enabled_backends() -> list[Backend]:
    return [get_backend(name) for name in settings.CONSOLE_BACKENDS if name in BACKEND_MODULES]


# A remote platform's name, as people read it.
PLATFORM_NAMES = {"aihc": "AIHC", "kubernetes": "Kubernetes"}


def configured(name: str) -> bool:
    """Whether this console can reach backend `name`'s platform: its settings can be used
    (Backend.settings_problem). A remote backend whose settings cannot (never set up, or its
    credentials or API server taken away) has its jobs followed by nothing: no sync reads
    their status and their stops reach nothing (qa114), so staff end them with Mark as lost
    (jobs.review.markable_lost). CONSOLE_BACKENDS need not list it: the worker follows the
    jobs of a backend taken out of that list while its settings are there
    (jobs.worker.Worker.remote_backends)."""
    return name == "local" or get_backend(name).settings_problem() is None


def unconfigured_remote() -> list[str]:
    """The remote backends this console cannot reach now (configured)."""
    return [name for name in BACKEND_MODULES if name != "local" and not configured(name)]


def all_pools() -> list[Pool]:
    pools: list[Pool] = []
    for backend in enabled_backends():
        pools.extend(backend.pools())
    return pools


def inventory_problems() -> list[str]:
    """Why an enabled platform's pools cannot be read now, one text each, for staff's notice
    (templates/jobs/_inventory_notice.html): a pool list that just misses its platform's
    pools does not say that the platform is broken (qa94)."""
    return [p for backend in enabled_backends() if (p := backend.inventory_problem())]


def find_pool(pool_id: str) -> Pool | None:
    for pool in all_pools():
        if pool.id == pool_id:
            return pool
    return None
