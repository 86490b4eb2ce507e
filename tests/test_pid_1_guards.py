"""Never pid 1 (review64): os.killpg(1, sig) is kill(-1, sig), every process the sender may
signal (as root, the machine's). jobs.runner.live_shim never takes pid 1 for a replica's
shim, by its `pid` file or by the lock held open, and jobs.network._kill never signals pid 1
nor its group.

Honest only where pid 1 is what the guard spares: in a pid namespace of the test's own
(unshare), pid 1 is the sentinel below, which leads its own process group and holds the
replica's lock open, as a shim would. So, without the guards, live_shim names it and _kill
sends kill(-1, SIGKILL), which reaches the sentinel's bystander (never the machine's pid 1 or
any process outside the namespace). Skipped without root and unshare."""

from __future__ import annotations

import os
import shutil

import pytest

from .runner_helpers import printed_as_pid_1

# pid 1 of the namespace: leads a process group of its own (as a network holder leads its
# group, so _kill would take the group), holds the lock open, runs a bystander and then the
# look (argv[1]), each in a session of its own, and says what the look said and whether the
# bystander was reached.
SENTINEL = """
import os, subprocess, sys
from pathlib import Path
if os.getpid() != 1:
    sys.exit("not pid 1 of a namespace of its own: nothing is looked at")
os.setsid()
state = Path(sys.argv[2])
lock = open(state / "lock")
bystander = subprocess.Popen(
    [sys.executable, "-c", "import time; print(1, flush=True); time.sleep(100000)"],
    stdout=subprocess.PIPE,
    start_new_session=True,
)
assert bystander.stdout.readline()
look = subprocess.run(
    [sys.executable, "-c", sys.argv[1], str(state)],
    start_new_session=True, capture_output=True, text=True,
)
assert look.returncode == 0, look.stderr
reached = "bystander reached" if bystander.poll() is not None else "bystander spared"
bystander.kill()
print(look.stdout.strip(), reached, sep="; ", flush=True)
"""

LIVE_SHIM_LOOK = """
import sys
from pathlib import Path
import django
django.setup()
from jobs.runner import live_shim
state = Path(sys.argv[1])
(state / "pid").write_text("1")
by_pid_file = live_shim(state)
(state / "pid").unlink()
by_lock = live_shim(state)
print(f"by its pid file: {by_pid_file}, by the lock: {by_lock}")
"""

KILL_LOOK = """
import django
django.setup()
from jobs import network, runner
print(f"_kill: {network._kill(1, runner.process_start(1), children=None)}")
"""


def looked_at_in_a_pid_namespace(look: str, tmp_path) -> str:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a pid namespace whose pid 1 is the test's")
    state = tmp_path / "runs" / "job" / "attempt-1" / "master-0"
    state.mkdir(parents=True)
    (state / "lock").touch()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "LOCAL_RUN_DIR": str(tmp_path / "runs"),
    }
    return printed_as_pid_1(SENTINEL, look, str(state), env=env)


def test_live_shim_never_takes_pid_1_for_a_replicas_shim_even_holding_its_lock(tmp_path):
    said = looked_at_in_a_pid_namespace(LIVE_SHIM_LOOK, tmp_path)

    assert said == "by its pid file: None, by the lock: None; bystander spared"


def test_the_network_holders_kill_never_signals_pid_1_or_its_group(tmp_path):
    said = looked_at_in_a_pid_namespace(KILL_LOOK, tmp_path)

    assert said == "_kill: None; bystander spared"
