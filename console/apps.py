from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_tasks_db.apps import TasksAppConfig


class TasksConfig(TasksAppConfig):
    """django-tasks-db, named in the admin in the page's language (its own name is a plain
    English string). Its tasks are the alert deliveries (jobs/tasks.py)."""

    verbose_name = _("Background tasks")
