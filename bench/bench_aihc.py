"""The wizard's live partials on an AIHC pool whose API is slow (every inventory call takes
0.5 s): the idle-card count and the queue list must cost about what a local pool's do,
and AIHC must be asked at most once per cache period however often the page polls."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BARE_URL, console_server, logged_in_client, median_ms, report  # noqa: E402
from tests.fake_aihc import FakeAihc  # noqa: E402

A800 = "baidu.com/a800_80g_cgpu"
POOL = "cce-bench"
DRAFT = "0f6c3a52-8d2b-4f57-9c1e-5b7d2f1e9a10"
CACHE_SECONDS = 5
SLOW_SECONDS = 0.5

SETUP = f"""
from django.contrib.auth.models import User
from jobs.models import Draft
Draft.objects.create(id={DRAFT!r}, owner=User.objects.get(username="bench"),
                     data={{"basic": {{"resource_pool": [{POOL!r}]}}}})
"""


def main() -> None:
    fake = FakeAihc().start()
    fake.add_pool(POOL, "bench pool", queues=("default", "research"), gpus={A800: (64, 24)})
    for op in ("DescribeResourcePools", "DescribeQueues"):
        fake.delay_next(op, SLOW_SECONDS, times=10**6)
    env = {
        "CONSOLE_BACKENDS": "local,aihc",
        "AIHC_ENDPOINT": fake.url,
        "AIHC_ACCESS_KEY": fake.access_key,
        "AIHC_SECRET_KEY": fake.secret_key,
        "AIHC_CACHE_SECONDS": str(CACHE_SECONDS),
        "LOCAL_ACCELERATORS": f"{A800}=8",
    }
    idle = (
        f"/create/{DRAFT}/idle/?row=0&roles-0-use_accelerator=on"
        f"&roles-0-accelerator_type={A800}&roles-0-accelerators=8&roles-0-replicas=2"
    )
    queues = f"/create/{DRAFT}/queues/?resource_pool={POOL}"
    local_queues = f"/create/{DRAFT}/queues/?resource_pool=local"
    try:
        with console_server(env, SETUP) as (base, _env):
            client = logged_in_client(base)
            # First load waits for AIHC once: 64 cards, 24 used.
            assert "40" in client.get(idle).text
            start = time.monotonic()
            bare = median_ms(client, BARE_URL)
            rows = [("bare view", bare, 1.0)]
            for name, url in (
                ("idle partial (AIHC pool)", idle),
                ("queue partial (AIHC pool)", queues),
                ("queue partial (local pool)", local_queues),
            ):
                ms = median_ms(client, url)
                rows.append((name, ms, ms / bare))
            elapsed = time.monotonic() - start
            calls = len(fake.calls("DescribeResourcePools"))
    finally:
        fake.stop()
    report(rows)
    allowed = math.ceil(elapsed / CACHE_SECONDS) + 1
    print(
        f"AIHC pool-list calls during {elapsed:.1f}s of polling: {calls} "
        f"(cache {CACHE_SECONDS}s, at most {allowed}; each call took {SLOW_SECONDS}s)"
    )


if __name__ == "__main__":
    main()
