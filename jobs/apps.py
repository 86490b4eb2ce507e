from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = _("Training jobs")

    def ready(self) -> None:
        from django.conf import settings
        from django.contrib.auth.signals import user_logged_in
        from django.db.models.signals import post_migrate, post_save, pre_delete

        from . import (
            checks,  # noqa: F401  (registers the start-up checks)
            languages,  # noqa: F401  (connects the log-in receiver: the user's language)
            throttle,  # noqa: F401  (connects the failed-login receiver)
            usage,  # noqa: F401  (connects the deleted jobs' usage receiver)
        )
        from .actions import secret_given_up
        from .api_keys import password_saved
        from .http import typed_logged_out_dropped
        from .models import DeletedJob
        from .review import ensure_reviewers_group
        from .wizard_views import step_posted_logged_out_dropped

        # A wizard step sent after its log-in ended is kept for its draft's owner only.
        user_logged_in.connect(
            step_posted_logged_out_dropped, dispatch_uid="jobs.wizard_views.logged_in"
        )
        # So is a form's text (an import, an API key's name) sent after its log-in ended.
        user_logged_in.connect(typed_logged_out_dropped, dispatch_uid="jobs.http.logged_in")
        post_migrate.connect(ensure_reviewers_group, sender=self)
        # After the reviewers group: the checks that read the database, on its new schema.
        post_migrate.connect(
            checks.said_after_migrating, sender=self, dispatch_uid="jobs.checks.after_migrating"
        )
        # A deleted job's record going with a Secret still to remove says so in the log.
        pre_delete.connect(
            secret_given_up, sender=DeletedJob, dispatch_uid="jobs.actions.secret_given_up"
        )
        # A password set, by whatever path, revokes its owner's API keys (jobs.api_keys).
        post_save.connect(
            password_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="jobs.password_saved"
        )
