"""Chaos for the local runner's newer parts: a real `manage.py worker` run as root with
LOCAL_JOB_NETWORK=isolated-outbound (a namespace holder and slirp4netns per job, moved into
the job's cgroups) and LOCAL_JOB_UID_BASE (each user's jobs as a uid of their own), killed
with SIGKILL at random moments (seeded: the seed is printed, `CHAOS_SEED=<n>` repeats a run)
and started again in its place each time, with LOCAL_JOB_UID_BASE as it was or changed,
while jobs start, run, fail once and restart under fault tolerance, are stopped, time out
and are deleted, and while Hang analysis captures are in flight; then stopped cleanly
(SIGTERM) right after a job was submitted, as it starts that job, and started again.
Meanwhile a running job's slirp4netns and then its holder are killed from outside (README:
the job keeps running and says so once, OutboundLost).

Then what README promises ("What is guaranteed when workers die", "The network", "Each
user's jobs as a user of their own") is checked, scanning /proc, the jobs' parent cgroup,
the mount table and the run folder: every job ended as it should, none launched twice or run
twice at once, every replica of an attempt run as the uid the attempt started with, holders
and slirp4netns in their job's network cgroup, no process (shim, job, holder, slirp4netns,
py-spy), network namespace, cgroup, mount or /tmp folder left, the cards given back, every
capture asked for stored or gone with its job.

One worker place (run directory) only: takeovers between two places are
tests/test_worker_chaos.py's. Each replica's command is that file's: a lock on
`<job>-<rank>` for its whole life (a second copy writes `DUP-...`), its own count of its
starts, a line `<job>-<rank>-<attempt>-<pid>-<uid>` per start, in files of its own job,
then a Python child that sleeps (so that captures have a Python process to read)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from jobs import cgroups

from .runner_helpers import CARD, processes_with, remove_cgroups_of
from .test_worker import ROOT, query, wait_for
from .test_worker_chaos import Workers, cards_in_use

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="jobs run as users of their own only as root"),
    pytest.mark.skipif(
        not os.access("/usr/bin/slirp4netns", os.X_OK),
        reason="slirp4netns is not installed (apt-get install slirp4netns)",
    ),
    pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap is not installed"),
]

BASE = 1_600_000_000
OTHER_BASE = 1_700_000_000
# Seconds a holder may stay out of its job's cgroup (a worker restarting meanwhile).
MOVED_WITHIN = 10
HEARTBEAT = 1
STALE = 4
CARDS = 6

SUBMIT = """
import django, json, sys
django.setup()
from django.contrib.auth.models import User
from jobs import spec as S
from jobs.services import jobs_submit
for job in json.loads(sys.argv[1]):
    owner, _ = User.objects.get_or_create(username=job["owner"])
    roles = [S.Role("master", 1, accelerator_type=sys.argv[2], accelerators=1)]
    if job["replicas"] == 2:
        roles.append(S.Role("worker", 1, accelerator_type=sys.argv[2], accelerators=1))
    ft = job["fault_tolerance"]
    spec = S.JobSpec(name=job["name"], resource_pool_id="local", image="pytorch:2",
        command=job["command"], roles=roles, timeout_minutes=job["timeout"],
        datasources=[S.Datasource("hostpath", "work", mount_path="/workspace")],
        fault_tolerance=ft,
        fault_tolerance_config=S.FaultToleranceConfig(fault_tolerance_limit=2) if ft else None)
    for _ in range(2):  # a double click: one job
        [made] = jobs_submit(owner=owner, spec=spec, submit_key=job["name"])
"""

# What a user does on a job's page: stop it, delete it, or ask for its call stacks.
ACT = """
import django, sys
django.setup()
from jobs.actions import job_delete, job_stop
from jobs.models import Job
from jobs.stacks import capture_requested
job = Job.objects.get(name=sys.argv[2])
if sys.argv[1] == "stop":
    print(job_stop(job=job, actor=job.owner))
elif sys.argv[1] == "delete":
    print(job_delete(job=job))
else:
    try:
        print(capture_requested(job=job, actor=job.owner).pk)
    except Exception as exc:
        print("refused", exc)
"""


def command(name: str, *, replicas: int, sleep: float, fail_first: bool, fail: bool) -> str:
    lines = [
        # umask 0: a later attempt may run as another uid (the base changed), and appends.
        f"umask 0; J={name}; R=$RANK; W=/workspace",
        "exec 9>>$W/lock-$J-$R",
        'flock -n 9 || { echo "DUP-$J-$R-$$" >> $W/lines-$J; exit 99; }',
        "A=$(( $(cat $W/att-$J-$R 2>/dev/null || echo 0) + 1 )); echo $A > $W/att-$J-$R",
        'echo "$J-$R-$A-$$-$(id -u)" >> $W/lines-$J',
    ]
    if fail_first:
        lines.append(
            f'if [ "$A" = 1 ]; then until [ "$(grep -c "^$J-[0-9]-1-" $W/lines-$J)" -ge'
            f' {replicas} ]; do sleep 0.05; done; [ "$R" = 0 ] && exit 3; sleep 60; fi'
        )
    lines.append(f'/usr/bin/python3 -c "import time; time.sleep({sleep:.1f})"')
    if fail:
        lines.append('[ "$R" = 0 ] && exit 3')
    return "\n".join(lines)


def plan(rng: random.Random) -> list[dict]:
    """Ten jobs of two users: one times out (its one-minute limit, submitted first), one is
    stopped and one deleted while they run (the test does both), one fails for good, three
    fail once and restart under fault tolerance, the rest run a few seconds."""
    kinds = ["timeout", "stop", "delete", "fail", "fail_first", "fail_first", "fail_first"]
    kinds += ["plain"] * 3
    jobs = []
    for n, kind in enumerate(kinds):
        name = f"isojob{n:02d}"
        long = kind in ("timeout", "stop", "delete")
        replicas = 1 if long else rng.choice((1, 2))
        jobs.append(
            {
                "name": name,
                "owner": ("alice", "bob")[n % 2],
                "kind": kind,
                "replicas": replicas,
                "timeout": 1,
                "fault_tolerance": kind == "fail_first",
                "expected": {
                    "timeout": "timed_out",
                    "stop": "stopped",
                    "delete": None,
                    "fail": "failed",
                }.get(kind, "succeeded"),
                "attempts": 2 if kind == "fail_first" else 1,
                "command": command(
                    name,
                    replicas=replicas,
                    sleep=300 if long else rng.uniform(2, 6),
                    fail_first=kind == "fail_first",
                    fail=kind == "fail",
                ),
            }
        )
    return jobs


def nsfs_mounts() -> set[str]:
    found = set()
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "nsfs":
            found.add(fields[4])
    return found


def programs(name: str) -> list[int]:
    """Live processes whose program (comm) is `name`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
    return found


def age(pid: int) -> float:
    """Seconds since the process started."""
    start = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - start / os.sysconf("SC_CLK_TCK")


def misplaced_network_helpers(runs: Path) -> list[tuple[int, str, str]]:
    """(pid, start, what) of holders (and their slirp4netns) over two seconds old that are
    not in their job's network cgroup (README, "Its cgroup": moved there once the holder is
    ready; by the worker that adopts it, if the one that spawned it was killed first)."""
    wrong = []
    for pid in processes_with(str(runs)):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if b"netns_holder" not in Path(f"/proc/{pid}/cmdline").read_bytes() or age(pid) < 2:
                continue
            helpers = [p for p in programs("slirp4netns") if os.getpgid(p) == pid and age(p) >= 2]
            for each in (pid, *helpers):
                paths = {}
                for line in Path(f"/proc/{each}/cgroup").read_text().splitlines():
                    _, controllers, path = line.split(":", 2)
                    for controller in controllers.split(","):
                        paths[controller] = path
                memory = paths.get("memory", paths.get(""))  # cgroup v1, else v2
                # A process that has exited (a zombie not reaped yet) shows in the root.
                if not memory.endswith("/network") and started(each) is not None:
                    comm = Path(f"/proc/{each}/comm").read_text().strip()
                    wrong.append((each, started(each), f"{comm} {each} in {memory}"))
    return wrong


def started(pid: int) -> str | None:
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return None if stat[0] == "Z" else stat[19]
    return None


def helpers_of_this_console(runs: Path, workers: Workers) -> set[tuple[int, str]]:
    """(pid, start) of the live slirp4netns of this run folder's holders and the py-spy the
    test's workers run."""
    holders = set()
    for pid in processes_with(str(runs)):
        with contextlib.suppress(OSError):
            if b"netns_holder" in Path(f"/proc/{pid}/cmdline").read_bytes():
                holders.add(pid)
    mine = {proc.pid for proc in workers.world["workers"]}
    found = set()
    for name, parents in (("slirp4netns", holders), ("py-spy", mine)):
        for pid in programs(name):
            with contextlib.suppress(OSError, IndexError):
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) in parents or int(stat[2]) in parents:  # parent or group
                    found.add((pid, stat[19]))
    return found


@pytest.fixture
def place(tmp_path):
    """The worker's world: a database, a run folder and a volume in a folder the jobs' users
    may enter (tmp_path's parents are root's alone), the volume world-writable with the sticky
    bit (each job's files are its user's). Kills and removes whatever a failed run left."""
    top = Path(tempfile.mkdtemp(prefix="console-chaos18-"))
    top.chmod(0o755)
    vol = top / "vol"
    vol.mkdir()
    vol.chmod(0o1777)
    var = tmp_path / "var"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(var),
        "LOCAL_VOLUMES": f"work={vol}",
        "WORKER_POLL_SECONDS": "0.1",
        "LOCAL_STOP_GRACE_SECONDS": "1",
        "LOG_LEVEL": "WARNING",
        "LOCAL_JOB_NETWORK": "isolated-outbound",
        "LOCAL_JOB_UID_BASE": str(BASE),
        "WORKER_HEARTBEAT_SECONDS": str(HEARTBEAT),
        "WORKER_STALE_SECONDS": str(STALE),
        "LOCAL_ACCELERATORS": f"{CARD}={CARDS}",
        "LOCAL_DISK_MIN_FREE_GB": "0",
        "LOCAL_DISK_EVICT_FREE_GB": "0",
    }
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    workers: list[subprocess.Popen] = []
    state = {"env": env, "db": var / "console.sqlite3", "vol": vol, "workers": workers}
    state["top"] = top
    yield state
    for proc in workers:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in processes_with(str(top)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with sqlite3.connect(state["db"]) as db:
        job_ids = [public_id for (public_id,) in db.execute("SELECT public_id FROM jobs_job")]
    remove_cgroups_of(job_ids)
    shutil.rmtree(top, ignore_errors=True)


def test_a_worker_killed_at_random_with_isolated_outbound_jobs_run_as_their_users_leaves_nothing(
    place, tmp_path
):
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(10**6))
    print(f"chaos seed {seed} (CHAOS_SEED={seed} repeats it)")
    rng = random.Random(seed)
    world = place
    runs = world["top"] / "runs"
    world["env"]["LOCAL_RUN_DIR"] = str(runs)
    vol = world["vol"]
    jobs = plan(rng)
    by_kind = {job["kind"]: job for job in jobs}
    workers = Workers(world, tmp_path)
    workers.places = {"a": runs}
    overlaps: list[str] = []
    nsfs_before = nsfs_mounts()
    # Seen out of place: (pid, start) -> (first seen, last seen, what). A holder adopted
    # after a kill is out of place until the restarted worker launches the job's replicas
    # (seconds on a busy machine), and a process ending is shown in the root cgroup a moment.
    misplaced: dict[tuple[int, str], tuple[float, float, str]] = {}
    # slirp4netns and py-spy processes of this test's jobs and workers, as seen while it ran
    # (other consoles on this machine may run their own meanwhile): (pid, start).
    seen: set[tuple[int, str]] = set()
    ticks = [0]
    limits = cgroups.current()
    captures_asked: list[str] = []

    def watch(seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            held: Counter[tuple[str, int]] = Counter()
            for _public_id, devices in cards_in_use(world):
                for card, indices in devices.items():
                    held.update((card, index) for index in indices)
            overlaps.extend(f"{card}#{i}" for (card, i), n in held.items() if n > 1)
            ticks[0] += 1
            if ticks[0] % 5 == 0:  # the slower scans of /proc, twice a second
                seen.update(helpers_of_this_console(runs, workers))
                if limits.active:
                    now = time.monotonic()
                    for pid, start, what in misplaced_network_helpers(runs):
                        first = misplaced.get((pid, start), (now,))[0]
                        misplaced[(pid, start)] = (first, now, what)
            if time.monotonic() >= deadline:
                return
            time.sleep(0.1)

    def run(script: str, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", script, *args],
            cwd=ROOT,
            env=world["env"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def status(name: str) -> str | None:
        rows = query(world, "SELECT status FROM jobs_job WHERE name = ?", name)
        return rows[0][0] if rows else None

    def running_names() -> list[str]:
        return [n for (n,) in query(world, "SELECT name FROM jobs_job WHERE status = 'running'")]

    def restart() -> None:
        # Started again with LOCAL_JOB_UID_BASE as it was or changed: an attempt's replicas
        # all run as the uid it started with, whichever worker launches them.
        world["env"]["LOCAL_JOB_UID_BASE"] = str(rng.choice((BASE, OTHER_BASE)))
        workers.start("a")

    def kill_worker() -> None:
        proc = workers.procs["a"]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    # The round's acts, shuffled: each after a random pause, while the worker is killed at
    # random moments around them.
    acts = ["capture", "capture", "capture", "delete", "slirp"]
    rng.shuffle(acts)
    # The holder after slirp4netns, both before the job is stopped.
    acts.insert(rng.randint(acts.index("slirp") + 1, len(acts)), "holder")
    acts.append("stop")
    done: list[str] = []
    killed: list[tuple[str, int]] = []
    gone_id = ""
    try:
        restart()
        wait_for(lambda: workers.active() == "a", what="the worker to take the lease")
        run(SUBMIT, json.dumps(jobs[:5]), CARD)
        for n, act in enumerate(acts):
            watch(rng.uniform(0.2, 2.5))
            if n == 2:
                run(SUBMIT, json.dumps(jobs[5:]), CARD)
            if act == "capture":
                running = sorted(running_names())
                if running:
                    name = rng.choice(running)
                    out = run(ACT, "capture", name)
                    if not out.startswith("refused"):
                        captures_asked.append(name)
                # Killed while it is in flight (py-spy reads each process, up to 10 s).
                watch(rng.uniform(0, 0.6))
            elif act in ("stop", "delete"):
                job = by_kind[act]
                wait_for(lambda j=job: status(j["name"]) == "running", timeout=60)
                if act == "stop" and any(n for _, n in killed):
                    # Its network killed (and the worker since): said before it is stopped.
                    wait_for(
                        lambda j=job: (
                            query(
                                world,
                                "SELECT COUNT(*) FROM jobs_jobevent e JOIN jobs_job j"
                                " ON e.job_id = j.id WHERE j.name = ? AND e.reason = 'OutboundLost'",
                                j["name"],
                            )
                            == [(1,)]
                        ),
                        timeout=60,
                        what="the lost outbound network to be said",
                    )
                if act == "delete":
                    [(gone_id,)] = query(
                        world, "SELECT public_id FROM jobs_job WHERE name = ?", job["name"]
                    )
                run(ACT, act, job["name"])
            else:
                # slirp4netns or the holder of the job that runs until stopped, killed from
                # outside (README: the job keeps running, as with `isolated`).
                job = by_kind["stop"]
                wait_for(lambda j=job: status(j["name"]) == "running", timeout=60)
                [(public_id,)] = query(
                    world, "SELECT public_id FROM jobs_job WHERE name = ?", job["name"]
                )
                holders = set()
                for pid in processes_with(f"{public_id}/attempt-"):
                    with contextlib.suppress(OSError):
                        if b"netns_holder" in Path(f"/proc/{pid}/cmdline").read_bytes():
                            holders.add(pid)
                victims = holders
                if act == "slirp":
                    victims = set()
                    for pid in programs("slirp4netns"):
                        with contextlib.suppress(OSError):
                            if os.getpgid(pid) in holders:
                                victims.add(pid)
                for pid in victims:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                killed.append((act, len(victims)))
            done.append(act)
            # The worker, killed at a random moment after each act and started again.
            watch(rng.uniform(0, 1.5))
            kill_worker()
            done.append("kill")
            watch(rng.uniform(0, 0.8))
            restart()
        # A clean stop right after a submit: the worker is starting that job (its holder,
        # slirp4netns, cgroups, shims) as SIGTERM arrives; then it is started again.
        late = {**jobs[-1], "name": "isojob99", "kind": "plain", "expected": "succeeded"}
        late["command"] = command(
            "isojob99", replicas=late["replicas"], sleep=2, fail_first=False, fail=False
        )
        jobs.append(late)
        wait_for(lambda: workers.active() == "a", timeout=20, what="the worker")
        run(SUBMIT, json.dumps([late]), CARD)
        watch(rng.uniform(0, 0.4))
        workers.procs["a"].send_signal(signal.SIGTERM)
        assert workers.procs["a"].wait(timeout=30) == 0
        done.append("term")
        restart()
        print(f"chaos: {done}, captures of {captures_asked}, killed {killed}")

        def all_final() -> bool:
            statuses = dict(query(world, "SELECT name, status FROM jobs_job"))
            return all(
                statuses.get(j["name"]) == j["expected"]
                if j["expected"]
                else j["name"] not in statuses
                for j in jobs
            ) and all(
                s in ("succeeded", "failed", "stopped", "timed_out") for s in statuses.values()
            )

        wait_for(all_final, timeout=120, what="every job to end")
        # What ended jobs left is removed over the next ticks.
        wait_for(
            lambda: (
                not any((runs / "discarded").iterdir()) if (runs / "discarded").exists() else True
            ),
            timeout=20,
            what="the discarded folders to be removed",
        )
        watch(1)
    except BaseException:
        print(workers.tails())
        print(query(world, "SELECT name, status FROM jobs_job"))
        raise

    rows = query(world, "SELECT id, name, public_id, status, restarts, owner_id FROM jobs_job")
    by_name = {r[1]: r for r in rows}
    assert sorted(by_name) == sorted(j["name"] for j in jobs if j["expected"])
    events = Counter(query(world, "SELECT job_id, reason FROM jobs_jobevent"))
    runs_of = {
        name: (attempt, uid)
        for name, attempt, uid in query(
            world,
            "SELECT j.name, r.attempt, r.run_uid FROM jobs_localrun r"
            " JOIN jobs_job j ON r.job_id = j.id",
        )
    }
    every_id = [r[2] for r in rows]
    deleted = by_kind["delete"]["name"]
    for job in jobs:
        name = job["name"]
        # (The deleted job may be deleted before its command wrote anything: seed 80611.)
        written = vol / f"lines-{name}"
        lines = written.read_text().split() if job["expected"] or written.exists() else []
        assert not [line for line in lines if line.startswith("DUP-")], (name, lines)
        assert processes_with(f"J={name};") == [], name
        if job["expected"] is None:
            continue
        job_id, _, public_id, final, restarts, owner_id = by_name[name]
        assert final == job["expected"], name
        # The job whose slirp4netns was killed says so once; no other job does.
        lost = 1 if job["kind"] == "stop" and any(n for _, n in killed) else 0
        assert events[(job_id, "OutboundLost")] == lost, name
        assert events[(job_id, "Created")] == 1, name
        assert events[(job_id, "Started")] == 1, name
        attempt, uid = runs_of[name]
        if job["kind"] in ("fail_first", "plain"):
            assert attempt == job["attempts"] == restarts + 1, name
        # Each start of each replica as the uid the job started with: its owner's.
        # Each attempt's replicas as one uid (its owner's, under the base of the worker that
        # started it), the last one's as recorded.
        assert uid in (BASE + owner_id, OTHER_BASE + owner_id), name
        uids = {
            a: {line.split("-")[-1] for line in lines if line.split("-")[2] == a}
            for a in {line.split("-")[2] for line in lines}
        }
        assert all(len(u) == 1 for u in uids.values()), (name, lines)
        assert uids[str(attempt)] == {str(uid)}, (name, lines)
        assert set().union(*uids.values()) <= {str(BASE + owner_id), str(OTHER_BASE + owner_id)}
        starts = Counter(tuple(line.split("-")[1:3]) for line in lines)
        for rank in range(job["replicas"]):
            ran = sorted(int(a) for (r, a), c in starts.items() if r == str(rank) for _ in range(c))
            assert ran == list(range(1, attempt + 1)), (name, rank, ran)
        assert processes_with(public_id) == [], name
        # No /tmp of an ended job left (its logs and state stay, as long as the job).
        assert not list((runs / public_id).glob("attempt-*/tmp")), name
        assert not list((runs / public_id).glob("attempt-*/*/tmp")), name
    # The deleted job's folder went with it.
    assert gone_id and not (runs / gone_id).exists()
    assert processes_with(gone_id) == []
    # Nothing of any job left: no shim, holder, slirp4netns or py-spy, no namespace, cgroup
    # or mount.
    assert processes_with(str(runs)) == []
    seen.update(helpers_of_this_console(runs, workers))
    assert [pid for pid, start in seen if started(pid) == start] == []
    # A network namespace outlives its processes only while a process holds it or a file is
    # bound to it: no process of the run is left (above), no mount in its folder, no nsfs
    # mount (a namespace bound to a file) that was not there before.
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(world["top"]) not in mounts
    assert nsfs_mounts() <= nsfs_before
    kept_out = [what for first, last, what in misplaced.values() if last - first >= MOVED_WITHIN]
    assert not kept_out, (kept_out, sorted(misplaced.values()))
    if limits.active:
        left = cgroups.job_ids_with_cgroups(limits)
        assert not left & set(every_id), left
    assert not overlaps, sorted(set(overlaps))
    assert cards_in_use(world) == []
    # Every capture asked for is stored (or went with its job): none left pending, none for
    # a job that is gone.
    pending = query(world, "SELECT job_id FROM jobs_stackcapture WHERE finished_at IS NULL")
    assert pending == []
    assert query(
        world,
        "SELECT COUNT(*) FROM jobs_stackcapture c LEFT JOIN jobs_job j ON c.job_id = j.id"
        " WHERE j.id IS NULL",
    ) == [(0,)]
    assert deleted not in by_name
    longest = max((last - first for first, last, _ in misplaced.values()), default=0)
    print(f"seed {seed}: {len(jobs)} jobs, acts {done}, out of place at most {longest:.1f} s")
