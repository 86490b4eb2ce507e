"""Job.deletes_at: when the worker deletes a finished local job for its retention period,
stored when the job ends (qa107: the worker read every finished local job's spec a minute to
find those due). Filled here for the jobs that have ended, as jobs.worker.deletes_at works it
out: a local job that succeeded, failed or timed out, with a retention period."""

import re
from datetime import timedelta

from django.conf import settings
from django.db import migrations, models

RETENTION_RE = re.compile(r"^([1-9][0-9]*)([mhd])\Z")
RETENTION_MINUTES = {"m": 1, "h": 60, "d": 24 * 60}
BATCH = 2000


def fill_deletes_at(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    minute = settings.JOB_MINUTE_SECONDS
    ended = (
        Job.objects.using(schema_editor.connection.alias)
        .filter(
            backend="local",
            status__in=["succeeded", "failed", "timed_out"],
            finished_at__isnull=False,
            spec__has_key="retentionPeriod",
        )
        .only("pk", "finished_at", "spec")
        .order_by("pk")
    )
    batch = []
    for job in ended.iterator(chunk_size=BATCH):
        spec = job.spec if isinstance(job.spec, dict) else {}
        match = RETENTION_RE.match(str(spec.get("retentionPeriod", "")))
        if not match:
            continue
        keep = int(match.group(1)) * RETENTION_MINUTES[match.group(2)]
        job.deletes_at = job.finished_at + timedelta(seconds=keep * minute)
        batch.append(job)
        if len(batch) >= BATCH:
            Job.objects.using(schema_editor.connection.alias).bulk_update(batch, ["deletes_at"])
            batch = []
    if batch:
        Job.objects.using(schema_editor.connection.alias).bulk_update(batch, ["deletes_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0059_job_status_created_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="deletes_at",
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True),
        ),
        migrations.RunPython(fill_deletes_at, migrations.RunPython.noop),
    ]
