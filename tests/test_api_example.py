"""The README's bce-auth-v1 examples (v1 and v2), run as written against a running console."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from jobs.api_keys import api_key_create
from jobs.models import Job, JobStatus

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example(marker: str = "api-example") -> str:
    text = README.read_text()
    match = re.search(rf"<!-- {marker} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"the README has no {marker} block"
    return match.group(1)


def run_twice(example: str, live_server, owner, tmp_path) -> list[subprocess.CompletedProcess]:
    key, secret = api_key_create(owner=owner)
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CONSOLE_URL": live_server.url,
        "CONSOLE_AK": key.access_key_id,
        "CONSOLE_SK": secret,
    }
    return [
        subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )
        for _ in range(2)
    ]


def test_the_readme_example_creates_a_job_once_and_describes_it(live_server, alice, tmp_path):
    runs = run_twice(readme_example(), live_server, alice, tmp_path)

    for run in runs:
        assert run.returncode == 0, run.stderr
    [job] = Job.objects.filter(owner=alice)  # the second run's clientToken found the first
    assert job.name == "hello-from-a-script"
    assert job.status == JobStatus.QUEUED
    assert runs[0].stdout == f"created {job.public_id}\nstatus Pending\n"
    assert runs[1].stdout == runs[0].stdout


def test_the_readme_v2_example_creates_a_job_once_describes_and_stops_it(
    live_server, alice, tmp_path
):
    runs = run_twice(readme_example("api-example-v2"), live_server, alice, tmp_path)

    for run in runs:
        assert run.returncode == 0, run.stderr
    [job] = Job.objects.filter(owner=alice)  # the second run's clientToken found the first
    assert job.name == "hello-from-v2"
    assert job.status == JobStatus.STOPPED
    assert runs[0].stdout == f"created {job.public_id}\nstatus Pending\nstopped {job.public_id}\n"
    # Run again, the create finds the same job, which the first run stopped.
    assert runs[1].stdout == runs[0].stdout.replace("Pending", "ManualTermination")


def test_both_examples_run_on_the_python_of_an_older_machine_too(live_server, alice, tmp_path):
    # Found in QA: they used datetime.UTC (Python 3.11), so a script machine with Ubuntu
    # 22.04's Python 3.10 (or a cluster's 3.8) failed with AttributeError before any request.
    # Their syntax must be 3.8's, and they run with what 3.11 added to datetime taken away.
    import ast

    key, secret = api_key_create(owner=alice)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CONSOLE_URL": live_server.url,
        "CONSOLE_AK": key.access_key_id,
        "CONSOLE_SK": secret,
    }
    for marker in ("api-example", "api-example-v2"):
        example = readme_example(marker)
        ast.parse(example, feature_version=(3, 8))
        script = tmp_path / f"{marker}.py"
        script.write_text(example)
        as_on_python_3_10 = (
            "import datetime, runpy, sys; del datetime.UTC; "
            "runpy.run_path(sys.argv[1], run_name='__main__')"
        )
        run = subprocess.run(
            [sys.executable, "-c", as_on_python_3_10, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("created ")


def test_both_examples_say_in_one_line_that_the_console_cannot_be_reached(tmp_path):
    # Found in QA (qa94): with the console down each printed a 30-line URLError traceback.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "CONSOLE_URL": "http://127.0.0.1:9",  # nothing listens on the discard port
        "CONSOLE_AK": "0" * 32,
        "CONSOLE_SK": "0" * 32,
    }
    for marker in ("api-example", "api-example-v2"):
        script = tmp_path / f"{marker}.py"
        script.write_text(readme_example(marker))

        run = subprocess.run(
            [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
        )

        assert run.returncode == 1
        assert run.stderr == "Cannot reach http://127.0.0.1:9: [Errno 111] Connection refused\n"
