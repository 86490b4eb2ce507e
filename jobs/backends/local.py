"""The embedded local runner (pool "local"): runs each replica as a process on this machine."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from .base import AcceleratorStock, Backend, BackendError, Pool, Volume

POOL_ID = "local"
NVIDIA_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True)
class HostVolume:
    name: str
    root: Path


def parse_pairs(value: str) -> list[tuple[str, str]]:
    pairs = []
    for item in value.split(","):
        if "=" in item:
            key, _, val = item.partition("=")
            pairs.append((key.strip(), val.strip()))
    return pairs


@cache
def detected_accelerators() -> dict[str, int]:
    """Cards per type: from nvidia-smi when present, otherwise LOCAL_ACCELERATORS."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=name", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        names = [line.strip() for line in out.splitlines() if line.strip()]
        if names:
            return {NVIDIA_RESOURCE: len(names)}
    return {
        name: int(count)
        for name, count in parse_pairs(settings.LOCAL_ACCELERATORS)
        if count.isdigit()
    }


def host_volumes() -> list[HostVolume]:
    return [HostVolume(name, Path(root)) for name, root in parse_pairs(settings.LOCAL_VOLUMES)]


def cards_in_use() -> Counter[str]:
    """Cards held by local jobs that are running (or starting/stopping)."""
    from jobs.models import ACTIVE_STATUSES, Job

    used: Counter[str] = Counter()
    for spec in Job.objects.filter(backend="local", status__in=ACTIVE_STATUSES).values_list(
        "spec", flat=True
    ):
        for role in (spec.get("console") or {}).get("roles", []):
            for res in role.get("resources", []):
                if res.get("name") not in ("cpu", "memory"):
                    used[res["name"]] += int(role.get("replicas", 0)) * int(res.get("quantity", 0))
    return used


class LocalBackend(Backend):
    name = "local"

    def pools(self) -> list[Pool]:
        used = cards_in_use()
        stock = [
            AcceleratorStock(type=name, total=total, idle=max(total - used[name], 0))
            for name, total in sorted(detected_accelerators().items())
        ]
        return [
            Pool(
                id=POOL_ID,
                name="本机 Local",
                backend=self.name,
                queues=["default"],
                accelerators=stock,
                volumes=[
                    Volume(type="hostpath", name=v.name, label=str(v.root)) for v in host_volumes()
                ],
                storage_types=["hostpath"],
                as_of=timezone.now(),
            )
        ]

    def submit(self, job):  # type: ignore[no-untyped-def]
        raise BackendError("The local runner arrives with the local-runner issue.")

    def stop(self, job):  # type: ignore[no-untyped-def]
        raise BackendError("The local runner arrives with the local-runner issue.")

    def delete(self, job):  # type: ignore[no-untyped-def]
        raise BackendError("The local runner arrives with the local-runner issue.")

    def sync(self, job):  # type: ignore[no-untyped-def]
        return None

    def logs(self, job, replica, *, tail=None, since=None):  # type: ignore[no-untyped-def]
        return []


def backend() -> LocalBackend:
    return LocalBackend()
