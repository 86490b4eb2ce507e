"""A command and variables as big as the spec takes, run for real by the local runner: what the
spec allows must start (session 52: a 200 KB command, allowed, failed with "Argument list too
long")."""

from __future__ import annotations

import pytest

from jobs import spec as S
from jobs.models import JobStatus
from jobs.worker import Worker

from .runner_helpers import log_text, make_spec, run_until, runner_settings, status_of, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")


def test_the_longest_command_and_the_most_environment_the_spec_takes_run(alice):
    ending = '\necho "ran $TOLD"'
    command = "#" * (S.MAX_ARGUMENT_BYTES - len(ending.encode())) + ending
    assert len(command.encode()) == S.MAX_ARGUMENT_BYTES
    # Seven variables of 128,003 bytes (32,000 characters of 4 bytes, under the 32 K
    # characters a value takes): with the command, just under 1 MiB in all.
    values = [S.Env(f"V{i}", "😀" * 32_000) for i in range(7)]
    spec = make_spec(command, envs=[*values, S.Env("TOLD", "told")])
    assert not S.validate(spec)

    job = submit(alice, spec)
    run_until(Worker(), lambda: status_of(job) in {JobStatus.SUCCEEDED, JobStatus.FAILED})

    assert status_of(job) == JobStatus.SUCCEEDED
    assert "ran told" in log_text(job, "master-0")
