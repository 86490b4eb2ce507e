"""The page frame every console page pays: base.html around an empty content block.

Over HTTP on one gunicorn (as bench_wizard.py), each sampled alternately with the bare view:
the bare view, the logged-in bare view (session and user reads), the frame for a logged-in
user (top bar, language switch, messages, CSRF and CSP, scripts and styles, context
processors; bench/urls.py) and for a visitor who is not logged in (as the log-in page).
In-process figures and a breakdown by template tag: bench/profile_frame.py.
Run: .venv/bin/python bench/run.py frame
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import console_server, logged_in_client, paired_ms  # noqa: E402


def main() -> None:
    with console_server() as (base, _env):
        client = logged_in_client(base)
        pages = [
            ("logged-in bare view", "/bench/bare-logged-in/"),
            ("frame, logged in", "/bench/frame/"),
            ("frame, not logged in", "/bench/frame-anonymous/"),
        ]
        measured = {name: paired_ms(client, url) for name, url in pages}
        # The anonymous frame without the session cookie (a first visit to the log-in page).
        client.cookies.clear()
        measured["frame, no session"] = paired_ms(client, "/bench/frame-anonymous/")
        floor = measured["logged-in bare view"]
        floor_ratio = floor[0] / floor[1]
        width = max(len(name) for name in measured)
        print(f"{'measurement'.ljust(width)}  median ms  x bare  x logged-in bare")
        for name, (ms, bare) in measured.items():
            ratio = ms / bare
            print(f"{name.ljust(width)}  {ms:9.2f}  {ratio:6.2f}  {ratio / floor_ratio:16.2f}")
        frame = measured["frame, logged in"]
        print(
            f"\nthe frame adds {frame[0] / frame[1] - floor_ratio:.2f}x bare "
            f"(~{frame[0] - floor[0]:.2f} ms) to a logged-in page"
        )


if __name__ == "__main__":
    main()
