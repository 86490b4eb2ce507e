"""README.md is the users' and operators' manual: its contents list must lead somewhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def github_anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation other than `-` dropped (letters
    of any script, digits and `_` kept), spaces as `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings() -> list[tuple[int, str]]:
    return [(len(m[1]), m[2]) for m in re.finditer(r"^(#{2,3}) (.+)$", README, re.M)]


def contents_links() -> list[tuple[str, str]]:
    block = README.split("## Contents\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\s*- \[(.+)\]\(#(.+)\)$", block, re.M)


def test_every_contents_link_leads_to_a_heading_of_the_readme():
    anchors = {github_anchor(text) for _, text in headings()}
    links = contents_links()
    assert links
    assert [target for _, target in links if target not in anchors] == []


def test_every_section_and_subsection_is_in_the_contents():
    listed = {text for text, _ in contents_links()}
    missing = [text for _, text in headings() if text != "Contents" and text not in listed]
    assert missing == []


def test_every_link_of_the_readme_leads_to_a_heading_or_a_file_of_the_checkout():
    # Anywhere in README, not only in the contents: an in-page link to a heading, or a file
    # of the checkout (bench/README.md, where the benchmarks' history went).
    anchors = {github_anchor(text) for _, text in headings()}
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert "bench/README.md" in links
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        if link.startswith(("http://", "https://")):
            continue
        if not path:
            found = anchor in anchors
        elif not (ROOT / path).exists():
            found = False
        elif not anchor:
            found = True
        else:  # a heading of that file
            text = (ROOT / path).read_text(encoding="utf-8")
            found = anchor in {github_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}
        if not found:
            broken.append(link)
    assert broken == []


def test_every_section_the_readme_refers_to_by_name_is_a_heading_or_a_paragraph_title():
    # README refers to its parts in words (see "Health checks", under "Alerts"), not links:
    # each must still name a heading or a paragraph's bold or italic title, or a start of one
    # ("Scripts and SDKs" for its heading with "(AIHC-compatible API)").
    def words(text: str) -> str:
        return " ".join(text.split())

    titles = {words(text) for _, text in headings()} | {
        words(title)
        for title in re.findall(r"^\s*(?:- )?(?:\*\*([^*]+)\*\*|\*([^*]+)\*)", README, re.M)
        for title in title
        if title
    }
    named = {words(name) for name in re.findall(r"\b(?:[Ss]ee|under) \"([A-Za-z][^\"]*)\"", README)}
    assert {"Health checks", "Alerts", "Mark as lost"} <= named
    assert sorted(n for n in named if not any(t.startswith(n) for t in titles)) == []


# --- Drift between README and the code -------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_SOURCE = (ROOT / "console" / "settings.py").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")

# console/settings.py's helpers that read a variable of the environment (`os.getenv` too: the
# Kubernetes token is read without stripping). `envsecret("X")` also reads `X_FILE`.
ENV_HELPERS = (
    "env",
    "envbool",
    "envint",
    "envfloat",
    "envlist",
    "envsecret",
    "envfolder",
    "getenv",
)

# Read by console/settings.py but not a setting of the console, so in no table (each with why).
NOT_SETTINGS = {
    # Set by Kubernetes itself in every pod; README's Kubernetes section names them as the
    # default of KUBERNETES_API_URL.
    "KUBERNETES_SERVICE_HOST": "set by Kubernetes in a pod",
    "KUBERNETES_SERVICE_PORT": "set by Kubernetes in a pod",
}


COMPUTED = object()  # a default worked out at start (VAR_DIR, the disk's size...)


def settings_read() -> dict[str, object]:
    """Every variable console/settings.py reads through its helpers, with the default the call
    gives when that is a constant (or arithmetic of constants), else `COMPUTED`."""
    found: dict[str, object] = {}
    for node in ast.walk(ast.parse(SETTINGS_SOURCE)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        helper = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        first = node.args[0]
        if helper not in ENV_HELPERS or not isinstance(first, ast.Constant):
            continue
        default: object = None
        if len(node.args) > 1:
            try:  # 14 * 24 * 3600 is a constant too; a name (VAR_DIR, PORT...) is not
                default = eval(compile(ast.Expression(node.args[1]), "settings", "eval"), {})
            except NameError:
                default = COMPUTED
        found.setdefault(first.value, default)
        if helper == "envsecret":
            found.setdefault(f"{first.value}_FILE", None)
    return found


def settings_tables() -> list[tuple[list[str], str]]:
    """The rows of README's settings tables (| `VARIABLE` ... | default | meaning |): the
    variables the first cell names and the default cell."""
    rows = re.findall(r"^\| (`[A-Z][A-Z0-9_]+`[^|]*) \| ([^|]*) \| .*\|$", README, re.M)
    return [(re.findall(r"`([A-Z][A-Z0-9_]+)`", names), default) for names, default in rows]


def test_every_variable_the_settings_read_is_in_a_settings_table_of_the_readme():
    documented = {name for names, _ in settings_tables() for name in names}
    read = settings_read()
    assert len(read) > 80  # the parse found the settings at all
    assert sorted(set(read) - documented - set(NOT_SETTINGS)) == []


def test_every_variable_in_the_readme_settings_tables_is_read_by_the_settings():
    read = settings_read()
    documented = {name for names, _ in settings_tables() for name in names}
    assert sorted(documented - set(read)) == []
    assert sorted(set(NOT_SETTINGS) - set(read)) == [], "stale entries of NOT_SETTINGS"


WORDS = {"false": "no", "true": "yes"}  # an off switch in a sentence: "no TLS"


def said(value: object) -> str:
    """A default as README's tables write it: on/off switches as off/on, numbers as written."""
    if value in ("false", "true"):
        return {"false": "off", "true": "on"}[value]  # type: ignore[index]
    return str(value)


def test_the_defaults_in_the_readme_settings_tables_are_the_settings_defaults():
    read = settings_read()
    wrong = []
    for names, cell in settings_tables():
        parts = [part.strip() for part in cell.split(", ")]
        paired = len(parts) == len(names)
        for index, name in enumerate(names):
            default = read.get(name)
            if default is None or default == "" or default is COMPUTED:
                continue  # unset, or worked out at start (the disk's size, VAR_DIR...)
            text = parts[index] if paired else cell
            if paired or len(names) == 1:
                first = text.replace("`", "").split()[0]
                if first != said(default):
                    wrong.append((name, cell, default))
            # In a sentence ("unset: mail is printed to the console; port 25, no TLS").
            elif not any(
                re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", text)
                for word in (said(default), WORDS.get(str(default), said(default)))
            ):
                wrong.append((name, cell, default))
    assert wrong == []


def make_targets() -> set[str]:
    """The Makefile's targets, $(VENV) written out as `.venv`."""
    venv = re.search(r"^VENV := (\S+)$", MAKEFILE, re.M)[1]  # type: ignore[index]
    names = re.findall(r"^([^\s:#=][^:=]*?):(?!=)", MAKEFILE, re.M)
    return {name.replace("$(VENV)", venv) for line in names for name in line.split()}


def test_every_make_target_the_readme_names_is_in_the_makefile():
    named = set(re.findall(r"(?<![\w-])make ((?:\.venv/)?\.?[a-z][\w./-]*)", README))
    # "make a ...", "make it ..." in prose are no targets: only those written as code count.
    named &= {
        target
        for code in re.findall(r"`[^`\n]+`|```.*?```", README, re.S)
        for target in re.findall(r"(?<![\w-])make ((?:\.venv/)?\.?[a-z][\w./-]*)", code)
    }
    assert {"run", "test", "test-postgres", "bench", ".venv/.installed"} <= named
    assert sorted(named - make_targets()) == []


# Paths of this machine, or of a Kubernetes API server, that README names: not the console's.
NOT_CONSOLE_PATHS = re.compile(
    r"/(abs|absolute|apis|bin|boot|data|dev|etc|lib\w*|mnt|opt|path|proc|root|run|sbin|srv|sys"
    r"|tmp|usr|var|workspace)(/|$)"
)
# Placeholders README writes in the console's paths, and a value each may take.
PLACEHOLDERS = {
    "<id>": "j-0123456789ab",
    "{jobId}": "j-0123456789ab",
    "{podName}": "j-0123456789ab-master-0",
    "{resourcePoolId}": "local",
    "{queueName}": "default",
}

# README's words for "any path under it", which the API's catch-all answers.
ANY_PATH = {"/api/v1/", "/api/v1/…"}


def console_paths() -> set[str]:
    """The console's paths README names: in code (`/account/keys/`), or after its address
    (http://127.0.0.1:8000/...)."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", README):
        found |= set(re.findall(r"(?:^|(?<=[\s(=]))(/[^\s`'\")]*)", span))
    found |= set(
        re.findall(r"https?://(?:127\.0\.0\.1|localhost)(?::\d+|:\$PORT)?(/[^\s`'\")]*)", README)
    )
    return {path for path in found if not NOT_CONSOLE_PATHS.match(path)}


def test_every_path_of_the_console_the_readme_names_resolves():
    from django.urls import Resolver404, resolve

    paths = console_paths()
    assert {"/healthz", "/account/keys/", "/create/import/", "/api/v1/aijobs"} <= paths
    unresolved = []
    for written in sorted(paths):
        path = re.split(r"[?\[]", written, maxsplit=1)[0].rstrip(".,;:")
        # "Under a sub-path" writes the console's paths under its example's prefix.
        path = path.removeprefix("/ai-console").removeprefix("/") or "/"
        path = path if path.startswith("/") else f"/{path}"
        for placeholder, value in PLACEHOLDERS.items():
            path = path.replace(placeholder, value)
        try:
            match = resolve(path)
        except Resolver404:
            unresolved.append(written)
            continue
        # The admin's catch-alls (any other path: a 404, or a redirect to an object's page) have
        # no name; the API's answers any other path with NotFound.
        if match.url_name in (None, "api-not-served") and written not in ANY_PATH:
            unresolved.append(written)
    assert unresolved == []


def test_every_file_of_the_checkout_the_readme_names_exists():
    named = set(
        re.findall(
            r"(?<![\w/.-])((?:tests|jobs|console|bench|templates|static|\.ci)/[\w./-]*[\w/])",
            README,
        )
    )
    assert {"tests/test_worker_chaos.py", "jobs/spec.py", ".ci/run"} <= named
    # A template is named as Django finds it (jobs/wizard/field.html), under templates/.
    missing = [
        name
        for name in sorted(named)
        if not (ROOT / name).exists() and not (ROOT / "templates" / name).exists()
    ]
    assert missing == []


def test_the_job_states_block_is_the_state_machine():
    from django.utils import translation

    from jobs.models import TRANSITIONS, JobStatus

    block = README.split("### Job states\n", 1)[1].split("```\n", 2)[1]
    with translation.override("en"):  # README writes the English names
        labels = {str(status.label): status for status in JobStatus}
    written = {}
    for line in block.splitlines():
        if "->" in line:
            source, targets = line.split("->")
            targets = targets.split("(")[0]
            written[labels[source.strip()]] = {labels[t.strip()] for t in targets.split("|")}
        elif line.endswith(": final"):
            for name in line.removesuffix(": final").split(","):
                written[labels[name.strip()]] = set()
    assert written == {status: set(targets) for status, targets in TRANSITIONS.items()}


def numbers_said() -> list[str]:
    """Passages of README that state a number the code defines, written from the code's
    constant: a change to either (the constant, or README's wording of it) fails the test."""
    from django.conf import settings

    from jobs import (
        actions,
        api_keys,
        api_views,
        log_filters,
        logs,
        monitoring,
        plain_secrets,
        pools,
        services,
        shim,
        stacks,
        summary,
        tensorboard,
        views,
        wizard_import,
        worker,
    )
    from jobs import spec as S
    from jobs.backends import aihc, kubernetes, remote
    from jobs.management.commands import serve

    stale = re.search(r"envfloat\(\"WORKER_STALE_SECONDS\", max\((\d+),", SETTINGS_SOURCE)[1]  # type: ignore[index]
    first, most = (f"{serve.WORKER_RESTART_FIRST_DELAY:g}", f"{serve.WORKER_RESTART_MAX_DELAY:g}")
    healthy = {60: "a minute"}.get(
        int(serve.WORKER_HEALTHY_SECONDS), f"{serve.WORKER_HEALTHY_SECONDS:g} s"
    )
    pause, pause_max = kubernetes.SUBMIT_PAUSE
    catch_up = {3600: "an hour"}.get(aihc.USAGE_CATCH_UP, f"{aihc.USAGE_CATCH_UP} s")
    return [
        # The job spec: a secret typed into the command.
        f"(one of {plain_secrets.SECRET_VALUE_MIN_CHARS} characters or more: shorter ones match ordinary words)",
        f"an `sk-…` key has {plain_secrets.SK_RUN_CHARS} letters and digits in a row",
        # Two commands: serve starts a dying worker again.
        f"(after {first} s, doubling up to {most} s while it keeps dying within {healthy} of its start)",
        f"({first} s, doubling up to {most} s)",
        # Health checks and backups: the worker's default staleness.
        f"`WORKER_STALE_SECONDS`, {stale} by default",
        f"`WORKER_STALE_SECONDS` old ({stale} s by default)",
        # The job spec.
        f"(default {S.DEFAULT_SHARED_MEMORY_GI}Gi, AIHC's default)",
        f"**timeout** (default {S.DEFAULT_TIMEOUT_MINUTES // (24 * 60)} days)",
        f"every value of {shim.MIN_MASKED_LENGTH} or more characters is replaced",
        f"at most {S.MAX_ENVS} environment variables and {S.MAX_DATASOURCES} mounts",
        f"and at most {S.MAX_LABELS} labels",
        f"at most {S.MAX_ROLES} roles (a custom job's",
        f"per running replica (the first {monitoring.USAGE_SHOWN}; with more",
        f"for the first {summary.SHOWN_REPLICAS} replicas, as the job's page lists them",
        f"the first {summary.SHOWN_REPLICAS} replicas (the rest counted)",
        f"up to {S.MAX_REPLICAS} replicas each",
        f"at most {S.MAX_ALERT_EMAILS} email addresses and {S.MAX_ALERT_WEBHOOKS} webhooks",
        # The wizard: mount paths refused (the system directories, whose programs they hide).
        "the system directories themselves ("
        + ", ".join(f"`{d}`" for d in sorted(S.SYSTEM_DIRECTORIES))
        + ") are refused",
        # Import from a request, and the API's bodies.
        f"(at most {wizard_import.MAX_IMPORT_BYTES // 1024} KB;",
        f"(nested more than {api_views.MAX_JSON_DEPTH} levels deep, as the API refuses it;",
        f"nested more than {api_views.MAX_JSON_DEPTH} levels deep (a job body needs six)",
        f"for your last {wizard_import.KEPT_PAGES} such pages",
        f"(at most {services.FIELDS_NAMED} paths named",
        # Hang analysis.
        f"at most once every {stacks.MANUAL_EVERY_SECONDS} seconds per job",
        f"most {stacks.PROCESSES_PER_REPLICA} a replica, the lowest pids",
        f"Each process's reads are bounded to {stacks.PROCESS_SECONDS:g} s (its native read to "
        f"{stacks.NATIVE_SECONDS:g} s of them, its Python-only one, if that fails, to the rest) and "
        f"a capture to {stacks.TOTAL_SECONDS:g} s",
        f"or takes longer than its {stacks.NATIVE_SECONDS:g} s, that process is read again",
        f"the newest {stacks.CAPTURES_KEPT} per job",
        # Searching a log, and the page's lines.
        f"and {logs.SEARCH_CONTEXT} lines either side (0 to {logs.SEARCH_MAX_CONTEXT},",
        f"It shows the newest {logs.SEARCH_MAX_MATCHES} matching lines",
        f"a job of more than {views.LOG_TABS_MAX} replicas picks one from a list grouped by role",
        f"stops there, or after {logs.SEARCH_SECONDS:g} seconds",
        f"A pattern is at most {logs.SEARCH_MAX_PATTERN} characters",
        f"over {logs.SEARCH_MAX_REPEATS:,} pieces",
        f"a line is cut at {logs.SHOWN_LINE_CHARS:,} characters on the page",
        f"whole lines, each some {logs.DOWNLOAD_PIECE_CHARS // 1024} KB (a piece a line",
        f"(kept in memory up to {kubernetes.DOWNLOAD_SPOOL_BYTES // 2**20} MB, in the system's",
        f"(a pass looks at {shim.TMP_WALK_MAX_ENTRIES:,} files at most",
        f"its message cut at {log_filters.HOST_LINE_CHARS} characters",
        # Monitoring and training metrics.
        f"a small sparkline of the last {monitoring.SPARK_POINTS} samples",
        f"the newest {shim.USAGE_FULL_SAMPLES} are kept as they came",
        f"request reads for at most {tensorboard.READ_SECONDS:g} s",
        f"A tag keeps at most {tensorboard.MAX_POINTS} points",
        f"at most {tensorboard.MAX_TAGS} tags are shown",
        f"One read lists at most {tensorboard.MAX_ENTRIES:,} entries",
        f"{tensorboard.MAX_DIRS:,} folders and {tensorboard.MAX_FILES} event files",
        f"its first {tensorboard.MAX_TAG_CHARS} characters (then `…`)",
        f"its first {tensorboard.MAX_EVENT_VALUES:,} values are read",
        # The job list and the pools page.
        f"(the count the page's own query makes), {views.PAGE_SIZE} a page",
        f"(the first {pools.OWN_JOBS_SHOWN} per queue;",
        f"by their last known name (below) with their ID, or else their ID, "
        f'marked "（已不再提供）" / "(no longer offered)" (the words the pools page uses for a '
        f"queue no longer offered, one wording for both), the ID and the mark in one pair of the "
        f'reader\'s brackets: "旧训练池（cce-old，已不再提供）" / "旧训练池 (cce-old, no longer '
        f'offered)", "cce-old（已不再提供）" (at most {pools.USED_POOLS_LISTED};',
        # Alerts: a task a killed db_worker left Running.
        f"Once it has been Running for {worker.STALE_TASK_MINUTES} minutes (`STALE_TASK_MINUTES`",
        f"within the mail server's {settings.MAIL_TIMEOUT_SECONDS} s (`MAIL_TIMEOUT_SECONDS` in "
        "`console/settings.py`, the SMTP timeout each exchange is given), about "
        f"{worker.longest_delivery().total_seconds() // 60:.0f} minutes by default)",
        f"and two mails of up to {worker.MAIL_EXCHANGES} exchanges",
        f"{S.MAX_ALERT_WEBHOOKS} webhooks each resolved",
        # Stop or delete several jobs.
        f"at most {actions.MAX_SELECTED} a request",
        # API keys and signatures.
        f"most {api_keys.MAX_ACTIVE_KEYS} active keys",
        f"{api_keys.DEFAULT_EXPIRY_DAYS} days is preselected",
        f"expiration period (at most {api_keys.MAX_EXPIRATION_SECONDS} s)",
        f"or more than {api_keys.CLOCK_SKEW_SECONDS} s ahead of the server's clock",
        f"from 1 s to {api_views.MAX_TIME_STEP // (24 * 3600)} days, default {api_views.DEFAULT_TIME_STEP // 60} minutes as on AIHC",
        # AIHC: how far back a metrics read reaches.
        f"each asking the last {aihc.USAGE_WINDOW // 60} minutes (or 4 intervals, if longer; or "
        f"back to the worker's last read of the job, up to {catch_up}",
        # Kubernetes: remote jobs are submitted and synced in turns, in a thread of their own.
        f"The remote thread takes turns: about {worker.REMOTE_TICK_SECONDS:g} s (`REMOTE_TICK_SECONDS`",
        f"has not got to its next job for {worker.REMOTE_STUCK_SECONDS / 60:g} minutes is said",
        f"again every {worker.REMOTE_STUCK_SECONDS / 60:g} minutes while it lasts",
        f"A remote thread stuck for {worker.REMOTE_STUCK_SECONDS / 60:g} minutes is said",
        f"waits up to {worker.REMOTE_JOIN_SECONDS:g} s (`REMOTE_JOIN_SECONDS`",
        f"a sync leaves alone for {remote.STUCK_SUBMITTING.total_seconds() / 60:g} minutes",
        # Kubernetes: an unreachable API server pauses submits.
        f"submits {pause:g} s, doubling up to {pause_max / 60:g} minutes; after {kubernetes.MAX_UNANSWERED_CREATES} creates",
    ]


def test_the_numbers_the_readme_states_are_the_codes():
    text = re.sub(r"\s+", " ", README)
    assert [passage for passage in numbers_said() if passage not in text] == []


def test_the_default_memory_reserve_is_the_readmes_10_percent_at_least_2_gb_at_most_half():
    from jobs.cgroups import reserve_bytes

    gib = 1024**3
    assert "10% of the memory the worker has" in README
    assert "at least 2, at most half" in README
    assert reserve_bytes(100 * gib, None) == 10 * gib  # 10%
    assert reserve_bytes(8 * gib, None) == 2 * gib  # at least 2 GB
    assert reserve_bytes(3 * gib, None) == int(1.5 * gib)  # at most half
    assert reserve_bytes(100 * gib, 4) == 4 * gib  # a setting wins


def test_the_defaults_the_readme_gives_in_its_prose_are_the_settings_defaults():
    """`WORKER_HEARTBEAT_SECONDS` (5 s), `LOGIN_FAILURES_PER_IP` (20), `LOCAL_MAX_PROCESSES`
    (4096; ...): a default said beside a setting's name outside the tables."""
    read = settings_read()
    text = re.sub(r"\s+", " ", README)
    said_here = re.findall(
        r"`([A-Z][A-Z0-9_]+)`,? \((\d[\d,.]*?)[,.]?(?= s\b| GB\b| MB\b|[);,])", text
    )
    checked = [
        (name, value) for name, value in said_here if isinstance(read.get(name), int | float)
    ]
    assert len(checked) >= 6  # the parse found them at all
    assert [
        (name, value) for name, value in checked if float(value.replace(",", "")) != read[name]
    ] == []


def test_the_downgrade_paragraph_says_what_reversing_each_migration_drops():
    """'Every migration can be reversed ...' lists, migration by migration, what going back
    drops: a new migration of jobs must say it there too."""
    paragraph = README.split("Every migration can be reversed", 1)[1].split("\n\n", 1)[0]
    named = {int(number) for number in re.findall(r"\b00(\d\d)\b", paragraph)}
    migrations = sorted(
        int(path.name[:4]) for path in (ROOT / "jobs" / "migrations").glob("0[0-9][0-9][0-9]_*.py")
    )
    # 0001 is the first (nothing older to go back to); 0002 changes display names and choices
    # only, and drops nothing.
    drops_nothing = {1, 2}
    assert [n for n in migrations if n not in drops_nothing and n not in named] == []


@pytest.mark.parametrize("var_dir", [None, "data/console"])
def test_the_readmes_backup_commands_run_as_written_on_a_fresh_install(tmp_path, var_dir):
    # A fresh install has no var/volumes until a job mounts one: the block, pasted as a
    # script that stops at the first failure, must still reach its end (it stopped at tar).
    # With CONSOLE_VAR_DIR set the commands back up that folder (qa89: they named var/).
    import os
    import sqlite3
    import subprocess
    import sys

    block = re.search(r"```sh\n(umask 077 .*?)```", README, re.S)[1]  # type: ignore[index]
    # PostgreSQL's line is for a PostgreSQL install, which this is not.
    script = "set -e\n" + "\n".join(
        line for line in block.splitlines() if not line.startswith(("pg_dump", "#"))
    )
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    var = tmp_path / (var_dir or "var")
    (var / "runs").mkdir(parents=True)
    sqlite3.connect(var / "console.sqlite3").execute("CREATE TABLE t (x)")
    (var / "secret_key").write_text("k")
    env = {name: value for name, value in os.environ.items() if name != "CONSOLE_VAR_DIR"}
    if var_dir:
        env["CONSOLE_VAR_DIR"] = str(var)

    done = subprocess.run(
        ["sh", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True
    )

    assert (done.returncode, done.stderr) == (0, "")
    copy = sqlite3.connect(tmp_path / "backup" / "console.sqlite3")
    assert copy.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
    assert (tmp_path / "backup" / "secret_key").read_text() == "k"
    assert (tmp_path / "backup" / "runs.tar.gz").exists()
    assert not (tmp_path / "backup" / "volumes.tar.gz").exists()


def catalogue(path: Path) -> dict[str, set[str]]:
    """A .po file's translations: each msgid (and msgid_plural) with its msgstr(s)."""
    text = re.sub(r'"\n"', "", path.read_text(encoding="utf-8"))
    found: dict[str, set[str]] = {}
    for m in re.finditer(r'^msgid "(.*)"\nmsgstr "(.*)"$', text, re.M):
        found.setdefault(m[1], set()).add(m[2])
    for m in re.finditer(
        r'^msgid "(.*)"\nmsgid_plural "(.*)"\n((?:msgstr\[\d\] ".*"\n)+)', text, re.M
    ):
        for translated in re.findall(r'msgstr\[\d\] "(.*)"', m[3]):
            found.setdefault(m[1], set()).add(translated)
            found.setdefault(m[2], set()).add(translated)
    return found


def test_the_chinese_labels_the_readme_gives_with_their_english_are_translations_of_it():
    # README names a page's button or link in Chinese with its English in brackets,
    # **修改密码** (Change password): both must be what the pages say, so a renamed button
    # (in either language) is renamed in README too. The admin's own words come from Django.
    import django

    translations = catalogue(ROOT / "jobs" / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po")
    django_locale = Path(django.__file__).parent
    for app in ("conf", "contrib/admin", "contrib/auth"):
        path = django_locale / app / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
        for msgid, translated in catalogue(path).items():
            translations.setdefault(msgid, set()).update(translated)
    lowered: dict[str, set[str]] = {}
    for msgid, translated in translations.items():
        lowered.setdefault(msgid.lower(), set()).update(translated)

    text = re.sub(r"\s+", " ", README)
    pairs = re.findall(r"\*\*([^*a-zA-Z]*[\u4e00-\u9fff][^*]*)\*\* \(\*?([A-Z][^()*]*?)\*?\)", text)
    assert len(pairs) > 40  # the parse found them at all
    wrong = []
    for chinese, english in pairs:
        # "(Review, staff only)", "(Expires after: 30 days, ...)": the label is what comes first.
        said = {english, re.split(r"[,;:] ", english, maxsplit=1)[0]}
        said = {re.sub(r"<(\w+)>", r"%(\1)s", s) for s in said}  # Back to job <name>
        chinese = re.sub(r"<(\w+)>", r"%(\1)s", chinese)
        if not any(chinese in lowered.get(s.lower(), ()) for s in said):
            wrong.append((chinese, english))
    assert wrong == []
