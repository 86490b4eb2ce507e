"""Settings for benchmarks: the console's own, plus a bare view to compare against."""

from __future__ import annotations

import os

from console.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"

# bench_login.py's baseline server: Django's own default hashers (PBKDF2 first).
if os.environ.get("BENCH_DJANGO_DEFAULT_HASHERS") == "1":
    from django.conf import global_settings

    PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
