from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from jobs import job_users
from jobs.worker import run_forever


class Command(BaseCommand):
    help = (
        "Runs the background worker: dispatches and supervises local jobs, submits and syncs "
        "remote ones, delivers alerts, deletes expired jobs. Stop with Ctrl-C or SIGTERM; "
        "running jobs keep running and are adopted by the next worker."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--no-tasks",
            action="store_true",
            help="Do not run django tasks (alert delivery) in this process.",
        )

    def handle(self, *args: Any, no_tasks: bool = False, **options: Any) -> None:
        # LOCAL_JOB_UID_BASE set where jobs cannot run as their owners' users: the worker
        # stops here, saying why, rather than run them as its own user or fail each one.
        problems = job_users.problems()
        if problems:
            raise CommandError(
                "local jobs cannot run as their owners' users (LOCAL_JOB_UID_BASE; see "
                'README, "Each user\'s jobs as a user of their own"):\n- ' + "\n- ".join(problems)
            )
        stop = threading.Event()

        def request_stop(*_: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        run_forever(stop, tasks=not no_tasks)
