"""The README's bce-auth-v1 example, run as written against a running console."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from jobs.api_keys import api_key_create
from jobs.models import Job, JobStatus

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example() -> str:
    text = README.read_text()
    match = re.search(r"<!-- api-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README has no API example"
    return match.group(1)


def test_the_readme_example_creates_a_job_once_and_describes_it(live_server, alice, tmp_path):
    key, secret = api_key_create(owner=alice)
    script = tmp_path / "create_job.py"
    script.write_text(readme_example())
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CONSOLE_URL": live_server.url,
        "CONSOLE_AK": key.access_key_id,
        "CONSOLE_SK": secret,
    }

    runs = [
        subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )
        for _ in range(2)
    ]

    for run in runs:
        assert run.returncode == 0, run.stderr
    [job] = Job.objects.filter(owner=alice)  # the second run's clientToken found the first
    assert job.name == "hello-from-a-script"
    assert job.status == JobStatus.QUEUED
    assert runs[0].stdout == f"created {job.public_id}\nstatus Pending\n"
    assert runs[1].stdout == runs[0].stdout
