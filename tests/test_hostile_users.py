"""QA round 41: a logged-in user (and an anonymous one) attacking the web pages and the API.

Each test is one attack; those that held stay as tests so that they keep holding."""

from __future__ import annotations

import pytest
from django.test import Client

from jobs.models import LoginFailure

# "İ" (capital I with a dot above) is the one letter whose lower case is two characters.
DOTTED_CAPITALS = "İ" * 150


def test_a_150_character_name_that_lowercases_longer_is_a_failed_log_in_not_a_500(alice):
    r = Client().post("/login/", {"username": DOTTED_CAPITALS, "password": "guess"})

    assert r.status_code == 200
    [failure] = LoginFailure.objects.all()
    assert len(failure.username) <= 150
