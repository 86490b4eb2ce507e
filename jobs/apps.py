from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Training jobs")

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from . import (
            throttle,  # noqa: F401  (connects the failed-login receiver)
            usage,  # noqa: F401  (connects the deleted jobs' usage receiver)
        )
        from .review import ensure_reviewers_group

        post_migrate.connect(ensure_reviewers_group, sender=self)
