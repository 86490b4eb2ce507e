from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Creates the first superuser when none exists, from DJANGO_SUPERUSER_USERNAME / "
        "_PASSWORD / _EMAIL; without a password one is generated and printed once."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return
        username = os.getenv("DJANGO_SUPERUSER_USERNAME") or "admin"
        email = os.getenv("DJANGO_SUPERUSER_EMAIL") or ""
        password = os.getenv("DJANGO_SUPERUSER_PASSWORD")
        if User.objects.filter(username=username).exists():
            # An ordinary account of that name: never promoted behind anyone's back, and no
            # IntegrityError stopping `make run` before the console starts.
            self.stderr.write(
                f"No superuser exists and the user {username!r} is not one. Make one with "
                "`manage.py createsuperuser`, or set DJANGO_SUPERUSER_USERNAME to a new name."
            )
            return
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email=email, password=password)
        if generated:
            # Printed once, to the terminal only; it is not stored anywhere in clear.
            self.stdout.write(
                self.style.WARNING(
                    f"Created superuser {username!r} with password {password!r}. "
                    "Change it after logging in."
                )
            )
        else:
            self.stdout.write(f"Created superuser {username!r}.")
