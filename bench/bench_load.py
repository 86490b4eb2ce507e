"""A small team at once, against `manage.py serve` (gunicorn + worker) on the default SQLite.

N logged-in users (threads, one httpx client each) build drafts through the wizard (every
step, the idle-count and totals partials), submit each draft twice at once and once more
after (a double click and a resend), poll what the pages poll (job list, job status, logs),
and stop or delete some of the jobs, while the worker runs the jobs (`print(1)`, `sleep 2`)
and a reviewer approves jobs of a reviewed queue in the admin. Then it waits for every job
to end and checks the database: one job per submitted draft, the name and command typed,
every job final, no event recorded twice.

With LOAD_KILL (a comma-separated choice of `web`, `worker`, `serve`) it also SIGKILLs,
every LOAD_KILL_EVERY seconds, a gunicorn worker process (gunicorn starts another), the
background worker (`serve` starts another) or `serve` itself (then starts it again on the
same database): requests cut off by a kill are sent again, as a person would, and the same
checks must hold.

Prints figures (requests, statuses, latency percentiles) and every 5xx, timeout or broken
invariant it saw; no timed assertions.

    python bench/bench_load.py                 # 12 users, 60 s
    LOAD_USERS=20 LOAD_SECONDS=90 python bench/bench_load.py
    LOAD_KILL=web,worker,serve python bench/bench_load.py
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, free_port

USERS = int(os.getenv("LOAD_USERS", "12"))
SECONDS = float(os.getenv("LOAD_SECONDS", "60"))
PASSWORD = "load-password-1"
HTMX = {"HX-Request": "true"}
KILL = [k for k in os.getenv("LOAD_KILL", "").split(",") if k]
KILL_EVERY = float(os.getenv("LOAD_KILL_EVERY", "6"))
COMMANDS = ["python3 -c 'print(1)'", "sleep 2", "echo start; sleep 1; echo done"]
FINAL = {"succeeded", "failed", "stopped", "timed_out", "rejected"}

SETUP = f"""
import django; django.setup()
from django.contrib.auth.models import Group, User
User.objects.create_superuser("reviewer", "r@example.com", {PASSWORD!r})
for i in range({USERS}):
    User.objects.create_user(f"user{{i}}", f"user{{i}}@example.com", {PASSWORD!r})
"""

CHECK = """
import django, json, sys; django.setup()
from collections import Counter
from jobs.models import Draft, Job, JobEvent
expected = json.load(open(sys.argv[1]))
problems = []
for draft_id, want in expected["submitted"].items():
    jobs = list(Job.objects.filter(submit_key__startswith=draft_id))
    if draft_id in expected["deleted_drafts"]:
        if len(jobs) > 0:
            problems.append(f"draft {draft_id}: its job was deleted but {len(jobs)} remain")
        continue
    if len(jobs) != 1:
        problems.append(f"draft {draft_id}: {len(jobs)} jobs")
    for job in jobs:
        spec = job.spec
        if spec.get("name") != want["name"] or want["command"] not in spec["jobSpec"]["command"]:
            problems.append(f"{job.public_id}: spec lost what was typed ({spec.get('name')})")
for key, answers in expected["reruns"].items():
    made = Job.objects.filter(submit_key=key).count()
    if made > 1 or (made == 0 and any(a.startswith("/jobs/") and "rerun" not in a
                                      and a != answers[0] for a in answers)):
        problems.append(f"{key}: {made} jobs, answers {answers}")
    if len(set(answers)) > 1:
        problems.append(f"{key}: the two clicks answered {answers}")
for draft_id, want in expected["open"].items():
    draft = Draft.objects.filter(id=draft_id).first()
    if draft is None or draft.data.get("basic", {}).get("name") != [want["name"]]:
        problems.append(f"draft {draft_id}: data lost")
stuck = Counter(j.status for j in Job.objects.exclude(status__in=%(final)r))
if stuck:
    problems.append(f"jobs not final: {dict(stuck)}")
once = ("Created", "Started", "Succeeded", "Stopped", "ReplicaFailed", "Lost", "StartFailed",
        "Approved", "Rejected", "Submitted")
dups = Counter(
    (e.job_id, e.reason) for e in JobEvent.objects.filter(reason__in=once)
)
for (job_id, reason), n in dups.items():
    if n > 1:
        problems.append(f"job {job_id}: event {reason} x{n}")
statuses = Counter(Job.objects.values_list("status", flat=True))
print(json.dumps({"problems": problems, "jobs": Job.objects.count(),
                  "statuses": dict(statuses), "events": JobEvent.objects.count()}))
""".replace("%(final)r", repr(sorted(FINAL)))


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: collections.Counter = field(default_factory=collections.Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: collections.defaultdict(list))
    errors: list[str] = field(default_factory=list)
    submitted: dict[str, dict[str, str]] = field(default_factory=dict)
    open_drafts: dict[str, dict[str, str]] = field(default_factory=dict)
    deleted_drafts: set[str] = field(default_factory=set)
    reruns: dict[str, list[str]] = field(default_factory=dict)

    def record(self, kind: str, response: httpx.Response | None, ms: float, err: str = "") -> None:
        with self.lock:
            if response is None:
                self.statuses[f"{kind} {err}"] += 1
                if err == "timeout" or not KILL:  # with kills, cut-off requests are expected
                    self.errors.append(f"{kind}: {err}")
                return
            self.statuses[f"{kind} {response.status_code}"] += 1
            self.latencies[kind].append(ms)
            if response.status_code >= 500:
                self.errors.append(f"{kind} {response.request.url}: {response.status_code}")


class Session:
    """One person's browser: a logged-in client that records every request."""

    def __init__(self, base: str, username: str, tally: Tally) -> None:
        self.client = httpx.Client(base_url=base, timeout=30, follow_redirects=False)
        self.base = base
        self.tally = tally
        self.get("login page", "/login/")
        for _ in range(30):  # a kill may cut the log-in off too
            r = self.post("login", "/login/", {"username": username, "password": PASSWORD})
            if r is not None:
                assert r.status_code == 302, (username, r.status_code)
                return
            time.sleep(1)
            self.get("login page", "/login/")

    def request(self, kind: str, method: str, url: str, **kwargs: object) -> httpx.Response | None:
        start = time.perf_counter()
        try:
            r = self.client.request(method, url, **kwargs)  # type: ignore[arg-type]
        except httpx.TimeoutException:
            self.tally.record(kind, None, 0, "timeout")
            return None
        except httpx.TransportError as e:
            self.tally.record(kind, None, 0, type(e).__name__)
            return None
        self.tally.record(kind, r, (time.perf_counter() - start) * 1000)
        return r

    def get(self, kind: str, url: str, htmx: bool = False) -> httpx.Response | None:
        return self.request(kind, "GET", url, headers=HTMX if htmx else {})

    def post(self, kind: str, url: str, data: dict[str, str]) -> httpx.Response | None:
        data = {**data, "csrfmiddlewaretoken": self.client.cookies.get("csrftoken", "")}
        return self.request(kind, "POST", url, data=data, headers={"Referer": self.base + url})


def step_data(name: str, command: str, queue: str) -> dict[str, dict[str, str]]:
    return {
        "basic": {
            "name": name,
            "resource_pool": "local",
            "queue": queue,
            "priority": "normal",
            "framework": "PyTorchJob",
            "creation_mode": "custom",
        },
        "image": {
            "image": "registry.example.com/train/pytorch:2.5",
            "entrypoint": "bash",
            "command": command,
            "env_paste": "",
            "env-TOTAL_FORMS": "1",
            "env-INITIAL_FORMS": "0",
            "env-0-name": "TOKEN",
            "env-0-value": "s3cret-value",
            "env-0-secret": "on",
        },
        "resources": {
            "shared_memory_gi": "1",
            "roles-TOTAL_FORMS": "2",
            "roles-INITIAL_FORMS": "0",
            "roles-0-name": "master",
            "roles-0-replicas": "1",
            "roles-1-name": "worker",
            "roles-1-replicas": "1",
        },
        "data": {"mounts-TOTAL_FORMS": "0", "mounts-INITIAL_FORMS": "0"},
        "fault": {},
        "advanced": {"retention_value": "7", "retention_unit": "d", "timeout_minutes": "60"},
        "submission": {"mode": "standalone", "target_queue": queue, "total": "1"},
    }


def build_draft(s: Session, n: int, name: str, command: str, queue: str) -> str | None:
    r = s.post("start", "/create/", {})
    if r is None or r.status_code != 302:
        time.sleep(0.5)
        return None
    draft = r.headers["location"].split("/")[2]
    for step, data in step_data(name, command, queue).items():
        url = f"/create/{draft}/{step}/"
        s.get("step page", url, htmx=random.random() < 0.5)
        if step == "resources":
            s.get("idle", f"/create/{draft}/idle/?row=0&roles-0-replicas=1", htmx=True)
            s.get("totals", f"/create/{draft}/totals/?roles-TOTAL_FORMS=2", htmx=True)
        r = s.post("step post", url, {**data, "action": "next"})
        if r is None:  # cut off by a kill: this draft is left as it is
            return None
        if r.status_code != 302:
            s.tally.errors.append(f"{name}: step {step} answered {r.status_code}")
            return None
    return draft


def submit(s: Session, draft: str, name: str, command: str) -> str | None:
    review = s.get("review", f"/create/{draft}/review/")
    if review is None or review.status_code != 200:
        return None
    match = re.search(r'name="revision" value="([^"]+)"', review.text)
    revision = match.group(1) if match else ""
    url = f"/create/{draft}/submit/"
    answers: list[httpx.Response | None] = []

    def once() -> None:
        answers.append(s.post("submit", url, {"revision": revision}))

    # A double click: the same submit twice at once; then a resend (reload of the POST).
    twins = [threading.Thread(target=once) for _ in range(2)]
    for t in twins:
        t.start()
    for t in twins:
        t.join()
    once()
    for _ in range(30):  # cut off by a kill: sent again until the console answers
        if any(r is not None for r in answers):
            break
        time.sleep(1)
        once()
    locations = {r.headers.get("location") for r in answers if r is not None}
    with s.tally.lock:
        s.tally.submitted[draft] = {"name": name, "command": command}
    jobs = {loc for loc in locations if loc and loc.startswith("/jobs/")}
    if len(jobs) != 1 or len(locations) != 1:
        s.tally.errors.append(f"{name}: submits answered {sorted(map(str, locations))}")
    return next(iter(jobs)).split("/")[2] if jobs else None


def user_loop(base: str, i: int, deadline: float, tally: Tally) -> None:
    s = Session(base, f"user{i}", tally)
    if not s.client.cookies.get("sessionid"):
        return
    n = 0
    while time.monotonic() < deadline:
        n += 1
        name = f"u{i}-n{n}"
        command = random.choice(COMMANDS)
        queue = "review" if random.random() < 0.2 else "default"
        draft = build_draft(s, n, name, command, queue)
        if draft is None:
            continue
        if random.random() < 0.15:  # left half-done: must still hold what was typed
            with tally.lock:
                tally.open_drafts[draft] = {"name": name}
            continue
        job = submit(s, draft, name, command)
        if job is None:
            continue
        for _ in range(3):
            s.get("job list poll", "/", htmx=True)
            s.get("job live poll", f"/jobs/{job}/live/", htmx=True)
            s.get("job logs poll", f"/jobs/{job}/logs/?replica=master-0", htmx=True)
            time.sleep(0.3)
        page = s.get("job page", f"/jobs/{job}/")
        roll = random.random()
        if roll < 0.25:
            twice(s, "stop", f"/jobs/{job}/stop/", {})
        elif roll < 0.4:
            answers = twice(s, "delete", f"/jobs/{job}/delete/", {"confirmed": "1"})
            if any(r is not None and r.headers.get("location") == "/" for r in answers):
                with tally.lock:
                    tally.deleted_drafts.add(draft)
        elif roll < 0.5 and page is not None:
            key = re.search(r'name="request_key" value="([^"]*)"', page.text)
            if key:  # Run again, double-clicked: one new job
                data = {"request_key": key.group(1)}
                answers = twice(s, "rerun", f"/jobs/{job}/rerun/", data)
                with tally.lock:
                    tally.reruns[f"rerun-{job}-{key.group(1)}"] = sorted(
                        str(r.headers.get("location")) for r in answers if r is not None
                    )


def twice(s: Session, kind: str, url: str, data: dict[str, str]) -> list[httpx.Response | None]:
    """The same POST twice at once (a double click)."""
    answers: list[httpx.Response | None] = []
    threads = [
        threading.Thread(target=lambda: answers.append(s.post(kind, url, data))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def reviewer_loop(base: str, users_done: threading.Event, tally: Tally) -> None:
    s = Session(base, "reviewer", tally)
    while True:
        r = s.get("admin list", "/admin/jobs/job/?status__exact=pending_review")
        ids = re.findall(r'name="_selected_action" value="(\d+)"', r.text if r else "")
        if users_done.is_set() and not ids:  # until nothing waits for review
            return
        if ids:
            s.get("admin job", f"/admin/jobs/job/{ids[0]}/change/")
            s.request(
                "admin approve",
                "POST",
                "/admin/jobs/job/",
                data={
                    "action": "approve_jobs",
                    "_selected_action": ids,
                    "post": "yes",
                    "csrfmiddlewaretoken": s.client.cookies.get("csrftoken", ""),
                },
                headers={"Referer": base + "/admin/jobs/job/"},
            )
        time.sleep(1)


def console_env(var: str, port: int, extra: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "CONSOLE_VAR_DIR": var,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DEBUG": "0",
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "LOCAL_ACCELERATORS": "baidu.com/a800_80g_cgpu=8",
        "LOCAL_VOLUMES": f"scratch={var}/volume",
        "LOCAL_QUEUES": "default,review",
        "REVIEW_POLICY": "queues",
        "REVIEW_QUEUES": "review",
        "LOCAL_STOP_GRACE_SECONDS": "2",
        "LOG_LEVEL": "WARNING",
        **extra,
    }


def start_console(env: dict[str, str]) -> subprocess.Popen:
    """`manage.py serve` on env's database, once it answers."""
    log = open(Path(env["CONSOLE_VAR_DIR"], "serve.log"), "ab")  # noqa: SIM115
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{env['PORT']}/login/", timeout=2)
            return server
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError("console did not start") from None
            time.sleep(0.3)


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@dataclass
class Console:
    env: dict[str, str]
    server: subprocess.Popen
    kills: collections.Counter = field(default_factory=collections.Counter)

    def kill_one(self, what: str) -> None:
        children = children_of(self.server.pid)
        if what == "serve":
            self.server.kill()
            self.server.wait()
            # Its children get SIGTERM from the kernel (PR_SET_PDEATHSIG); start again once
            # they have let go of the port and the worker lock, as an operator would.
            deadline = time.monotonic() + 60
            while any(cmdline(pid) for pid in children) and time.monotonic() < deadline:
                time.sleep(0.2)
            self.server = start_console(self.env)
        elif what == "worker":
            pids = [p for p in children if b"manage.py\x00worker" in cmdline(p)]
            if not pids:
                return
            os.kill(pids[0], signal.SIGKILL)
        else:
            masters = [p for p in children if b"gunicorn" in cmdline(p)]
            pids = [p for m in masters for p in children_of(m)]
            if not pids:
                return
            os.kill(random.choice(pids), signal.SIGKILL)
        self.kills[what] += 1


def chaos_loop(console: Console, deadline: float) -> None:
    while time.monotonic() + KILL_EVERY < deadline:
        time.sleep(KILL_EVERY)
        console.kill_one(random.choice(KILL))


def wait_final(env: dict, seconds: float) -> None:
    script = (
        "import django, time; django.setup()\n"
        "from jobs.models import Job\n"
        f"end = time.monotonic() + {seconds}\n"
        f"while Job.objects.exclude(status__in={sorted(FINAL)!r}).exists()"
        " and time.monotonic() < end:\n"
        "    time.sleep(0.5)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)


def check(env: dict, tally: Tally, var: str) -> dict:
    path = Path(var, "expected.json")
    path.write_text(
        json.dumps(
            {
                "submitted": tally.submitted,
                "open": tally.open_drafts,
                "deleted_drafts": sorted(tally.deleted_drafts),
                "reruns": tally.reruns,
            }
        )
    )
    out = subprocess.run(
        [sys.executable, "-c", CHECK, str(path)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else 0.0


def run(users: int = USERS, seconds: float = SECONDS, extra: dict[str, str] | None = None) -> None:
    var = tempfile.mkdtemp(prefix="bench-load-")
    port = free_port()
    env = console_env(var, port, extra or {})
    Path(var, "volume").mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True)
    console = Console(env, start_console(env))
    base = f"http://127.0.0.1:{port}"
    tally = Tally()
    try:
        deadline = time.monotonic() + seconds
        threads = [
            threading.Thread(target=user_loop, args=(base, i, deadline, tally))
            for i in range(users)
        ]
        if KILL:
            threads.append(threading.Thread(target=chaos_loop, args=(console, deadline)))
        users_done = threading.Event()
        reviewer = threading.Thread(target=reviewer_loop, args=(base, users_done, tally))
        started = time.monotonic()
        for t in [*threads, reviewer]:
            t.start()
        for t in threads:
            t.join()
        users_done.set()
        reviewer.join(timeout=120)
        elapsed = time.monotonic() - started
        wait_final(env, 60)
        outcome = check(env, tally, var)
    finally:
        os.killpg(console.server.pid, signal.SIGTERM)
        console.server.wait(timeout=30)
    log = Path(var, "serve.log").read_text(errors="replace")
    tracebacks = log.count("Traceback")
    total = sum(tally.statuses.values())
    print(f"{users} users + 1 reviewer for {elapsed:.0f} s against manage.py serve (SQLite)")
    if KILL:
        print(f"SIGKILLed: {dict(console.kills)}")
    print(f"requests: {total} ({total / elapsed:.1f}/s); drafts submitted: {len(tally.submitted)}")
    print(f"jobs: {outcome['jobs']} {outcome['statuses']}; events: {outcome['events']}")
    print(f"{'request':18} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for kind, values in sorted(tally.latencies.items()):
        print(
            f"{kind:18} {len(values):5d} {statistics.median(values):8.1f} "
            f"{percentile(values, 0.95):8.1f} {max(values):8.1f}"
        )
    print("statuses:", dict(sorted(tally.statuses.items())))
    print(f"server log: {tracebacks} tracebacks ({var}/serve.log)")
    problems = tally.errors + outcome["problems"]
    print(f"problems: {len(problems)}")
    for problem in problems[:40]:
        print("  ", problem)


if __name__ == "__main__":
    run()
