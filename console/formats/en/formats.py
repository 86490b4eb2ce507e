# The admin's date-time columns (a quota's or a key's times, the log entries') as the job
# list writes its own, "2026-12-07 14:26" in either language (qa98: "Dec. 7, 2026, 2:26 p.m."
# and "2026年12月7日 14:30" beside it). The console's own pages give their formats in full.
from __future__ import annotations

DATETIME_FORMAT = "Y-m-d H:i"
SHORT_DATETIME_FORMAT = "Y-m-d H:i"
