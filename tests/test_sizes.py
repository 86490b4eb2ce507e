"""Sizes in binary units as the console writes them (jobs.texts.binary_size)."""

from __future__ import annotations

from django.utils import translation

from jobs.texts import binary_size


def test_sizes_read_in_the_unit_they_round_to():
    """1,048,575 bytes read "1024.0 KiB" (review68): rounded to one decimal it is 1.0 MiB."""
    with translation.override("en"):
        said = [binary_size(n) for n in (512, 1536, 1_048_575, 1_048_576, 50 * 1024**3)]

    assert said == ["512\xa0B", "1.5\xa0KiB", "1.0\xa0MiB", "1.0\xa0MiB", "50.0\xa0GiB"]
