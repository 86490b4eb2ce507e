"""Settings for benchmarks: the console's own, plus a bare view to compare against."""

from __future__ import annotations

from console.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
