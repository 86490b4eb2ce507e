"""Runs every benchmark under bench/ (files named bench_*.py), one after another."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

for script in sorted(HERE.glob("bench_*.py")):
    if len(sys.argv) > 1 and not any(arg in script.name for arg in sys.argv[1:]):
        continue
    print(f"\n== {script.name}")
    runpy.run_path(str(script), run_name="__main__")
