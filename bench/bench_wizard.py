"""The wizard's step pages and htmx partials against the bare view, on one real server.

Targets: each step page <= 2x the bare view, each partial <= 1.5x. Each page is sampled
alternately with the bare view (see paired_ms); the last column divides by a logged-in view
that does nothing, to show what is the page's own work and what every logged-in page pays.
Run: .venv/bin/python bench/run.py wizard
     BENCH_PAGES="review,mount row" .venv/bin/python bench/run.py wizard   (those pages only,
     each name containing one of the texts; the logged-in bare view is always measured)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import console_server, logged_in_client, paired_ms  # noqa: E402

DRAFT_ID = "5b0c0d2e-9a41-4d6c-8a0e-000000000001"
A800 = "baidu.com/a800_80g_cgpu"

# A draft with every step done (PyTorch, two labels, 1 master + 2 workers, one mount, two envs).
SETUP = f"""
from django.contrib.auth.models import User
from django.utils.datastructures import MultiValueDict
from jobs import wizard as W
from jobs.models import Draft

owner = User.objects.get(username="bench")
draft = Draft.objects.create(id="{DRAFT_ID}", owner=owner, data={{}})
steps = {{
    "basic": {{"name": "bench-job", "resource_pool": "local", "queue": "default", "priority": "normal",
               "framework": "PyTorchJob", "creation_mode": "custom", "label-TOTAL_FORMS": "2",
               "label-INITIAL_FORMS": "0", "label-0-key": "project", "label-0-value": "llm",
               "label-1-key": "exp", "label-1-value": "lr-sweep"}},
    "image": {{"image": "registry.example.com/train/pytorch:2.5", "entrypoint": "bash",
               "command": "torchrun train.py", "env-TOTAL_FORMS": "2", "env-INITIAL_FORMS": "0",
               "env-0-name": "LR", "env-0-value": "3e-4", "env-1-name": "TOKEN", "env-1-value": "s3cret",
               "env-1-secret": "on"}},
    "resources": {{"shared_memory_gi": "10", "roles-TOTAL_FORMS": "2", "roles-INITIAL_FORMS": "0",
                   "roles-0-name": "master", "roles-0-replicas": "1", "roles-0-use_accelerator": "on",
                   "roles-0-accelerator_type": "{A800}", "roles-0-accelerators": "1",
                   "roles-1-name": "worker", "roles-1-replicas": "2", "roles-1-use_accelerator": "on",
                   "roles-1-accelerator_type": "{A800}", "roles-1-accelerators": "1"}},
    "data": {{"storage_enabled": "on", "mounts-TOTAL_FORMS": "1", "mounts-INITIAL_FORMS": "0",
              "mounts-0-type": "hostpath", "mounts-0-name": "scratch", "mounts-0-mount_path": "/workspace",
              "mounts-0-access": "rw"}},
    "fault": {{"hang_detection": "on", "hang_minutes": "30"}},
    "advanced": {{"retention_value": "7", "retention_unit": "d", "timeout_minutes": "43200"}},
    "submission": {{"mode": "standalone", "target_queue": "default", "total": "1", "concurrency": "1"}},
}}
for step, data in steps.items():
    outcome = W.step_post(draft=draft, step=step, post=MultiValueDict({{k: [v] for k, v in data.items()}}))
    assert outcome.forms is None, (step, outcome.forms.form.errors)
"""

STEPS = ["basic", "image", "resources", "data", "fault", "advanced", "submission", "review"]
HTMX = {"HX-Request": "true"}
# What every console page pays first (session and user queries); see bench/urls.py.
LOGGED_IN_BARE_URL = "/bench/bare-logged-in/"
# e.g. BENCH_ENV=DATABASE_CONN_MAX_AGE=60 to measure with persistent database connections.
EXTRA_ENV = dict(
    item.split("=", 1) for item in os.getenv("BENCH_ENV", "").split(",") if "=" in item
)
# e.g. BENCH_PAGES="review,AIAK section" to measure a change to those pages only.
ONLY = [text for text in os.getenv("BENCH_PAGES", "").split(",") if text]


def main() -> None:
    extra_env = {"LOCAL_ACCELERATORS": f"{A800}=8", "LOCAL_VOLUMES": "scratch=/tmp", **EXTRA_ENV}
    with console_server(extra_env, setup=SETUP) as (base, _env):
        client = logged_in_client(base)
        draft = f"/create/{DRAFT_ID}"
        pages = [
            ("logged-in bare view", LOGGED_IN_BARE_URL, None),
            ("drafts list", "/create/", None),
        ]
        pages += [(f"step {step}", f"{draft}/{step}/", None) for step in STEPS]
        fragments = [
            (f"step {step} (htmx fragment)", f"{draft}/{step}/", HTMX)
            for step in ("image", "resources")
        ]
        partials = [
            (
                "partial idle count",
                f"{draft}/idle/?row=1&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
                "&roles-1-accelerators=1&roles-1-replicas=2",
                HTMX,
            ),
            (
                "partial role totals",
                f"{draft}/totals/?roles-TOTAL_FORMS=2&roles-0-use_accelerator=on"
                f"&roles-0-accelerator_type={A800}&roles-0-accelerators=1&roles-0-replicas=1"
                f"&roles-1-use_accelerator=on&roles-1-accelerator_type={A800}"
                "&roles-1-accelerators=1&roles-1-replicas=2",
                HTMX,
            ),
            (
                "partial AIAK preview",
                f"{draft}/aiak/?creation_mode=aiak&training_mode=SFT&training_method=full&aiak_template=llama2-7b",
                {**HTMX, "HX-Target": "aiak-preview"},
            ),
            ("partial queue options", f"{draft}/queues/?resource_pool=local", HTMX),
            ("partial example", f"{draft}/example/?example=MPIJob", HTMX),
            (
                "partial mount row (type switched)",
                f"{draft}/mount-row/?row=1&mounts-1-type=hostpath&mounts-1-source_path=/ssd1/data"
                "&mounts-1-mount_path=/mnt/data&mounts-1-access=ro",
                HTMX,
            ),
        ]
        measured = []
        for name, url, headers in pages + fragments + partials:
            if ONLY and url != LOGGED_IN_BARE_URL and not any(text in name for text in ONLY):
                continue
            ms, bare = paired_ms(client, url, headers=headers)
            measured.append((name, ms, ms / bare))
        floor = measured[0][2]  # the logged-in bare view is measured first
        width = max(len(name) for name, _, _ in measured)
        print(f"{'measurement'.ljust(width)}  median ms  x bare  x logged-in bare")
        worst = {"step": 0.0, "partial": 0.0}
        for name, ms, ratio in measured:
            print(f"{name.ljust(width)}  {ms:9.2f}  {ratio:6.2f}  {ratio / floor:16.2f}")
            if name.startswith(("step", "partial")):
                kind = "partial" if name.startswith("partial") else "step"
                worst[kind] = max(worst[kind], ratio)
        print(
            f"\nworst step page {worst['step']:.2f}x (target <= 2x), "
            f"worst partial {worst['partial']:.2f}x (target <= 1.5x); "
            f"a logged-in view that does nothing is already {floor:.2f}x"
        )


if __name__ == "__main__":
    main()
