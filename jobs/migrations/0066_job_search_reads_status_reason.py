# The admin's job search finds a job by its status reason too (qa114: `OOMKilled` found none of
# the 5 jobs that ended so), still without reading each job's row with its spec (left21):
# - SQLite: `job_search_reason`, job_search's columns and the status reason, from which the
#   search reads every column it compares. Not in Job.Meta.indexes: on PostgreSQL a B-tree
#   entry holds at most about 2,700 bytes, and a reason may be longer (a reviewer's reason of
#   1,000 Chinese characters is 3,000), so the job's save would fail there.
# - PostgreSQL, where pg_trgm was made (0032): a trigram index of the reason as the search
#   compares it, like the name's and the image's, built CONCURRENTLY (fix156): jobs are
#   written while it is built, where a plain CREATE INDEX held off every write to the table
#   for the whole build (minutes on a big one). CONCURRENTLY runs outside a transaction only,
#   hence atomic = False (one statement each way; SQLite's is one too). A concurrent build
#   that fails (cancelled, the server stopped) leaves an invalid index of that name, which
#   IF NOT EXISTS would take as made: it is dropped first, and the next `migrate` builds it.
#   Made the same as before, so a database that applied this migration has nothing to redo.
# No row changes; reversed, the index goes. Declared to Django on SQLite by 0068 (review67).

from django.db import migrations

SQLITE_INDEX = "job_search_reason"
TRIGRAM_INDEX = "job_status_reason_trgm"


def add_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        if vendor == "sqlite":
            cursor.execute(
                f'CREATE INDEX IF NOT EXISTS "{SQLITE_INDEX}" ON "jobs_job" '
                '("name", "owner_id", "created_at", "image", "status_reason")'
            )
        elif vendor == "postgresql":
            cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
            if cursor.fetchone() is None:
                return  # 0032 could not make it: the search reads the rows for the reason
            cursor.execute(
                "SELECT 1 FROM pg_index JOIN pg_class ON pg_class.oid = pg_index.indexrelid "
                "WHERE pg_class.relname = %s AND NOT pg_index.indisvalid",
                [TRIGRAM_INDEX],
            )
            if cursor.fetchone() is not None:  # a concurrent build that failed left it
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {TRIGRAM_INDEX}")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {TRIGRAM_INDEX} ON jobs_job "
                "USING gin ((UPPER(status_reason)) gin_trgm_ops)"
            )


def drop_index(apps, schema_editor):
    name = {"sqlite": SQLITE_INDEX, "postgresql": TRIGRAM_INDEX}.get(
        schema_editor.connection.vendor
    )
    concurrently = "CONCURRENTLY " if name == TRIGRAM_INDEX else ""
    if name is not None:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f'DROP INDEX {concurrently}IF EXISTS "{name}"')


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction only

    dependencies = [
        ("jobs", "0065_tear_down_sigterm_due"),
    ]

    operations = [migrations.RunPython(add_index, drop_index)]
