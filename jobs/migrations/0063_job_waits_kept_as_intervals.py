# Each wait to run again is kept as its own interval (JobWait), in place of 0062's one later
# start (card_time_from), so a wait is left out of the period it fell in (review58).
#
# Forward: 0062's total of a job's (or a deleted job's record's) finished waits is kept as one
# wait from its first start, which is where 0062 took it from: the figures of months already
# closed do not change (when the waits really were is not recorded). A job waiting now keeps
# its wait from waiting_since (to its finish, for one a stale move ended while it waited). A
# job that went back to Queued before 0062 (not local, started, not finished, Queued) has a
# wait opened at its last change (updated_at): it was not counted as waiting before.
# Backward: the waits summed into card_time_from again, an open one into waiting_since.

from datetime import timedelta

import django.db.models.deletion
from django.db import migrations, models


def waits_kept_as_intervals(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    UsageRecord = apps.get_model("jobs", "UsageRecord")
    JobWait = apps.get_model("jobs", "JobWait")
    waits = []
    for job in Job.objects.exclude(card_time_from=None).exclude(started_at=None).iterator():
        if job.card_time_from > job.started_at:
            waits.append(JobWait(job=job, began_at=job.started_at, ended_at=job.card_time_from))
    for job in Job.objects.exclude(waiting_since=None).iterator():
        waits.append(JobWait(job=job, began_at=job.waiting_since, ended_at=job.finished_at))
    unrecorded = (
        Job.objects.filter(status="queued", waiting_since=None, finished_at=None)
        .exclude(started_at=None)
        .exclude(backend="local")
    )
    for job in unrecorded.iterator():
        waits.append(JobWait(job=job, began_at=max(job.updated_at, job.started_at)))
    for record in UsageRecord.objects.exclude(card_time_from=None).iterator():
        if record.card_time_from > record.started_at:
            waits.append(
                JobWait(
                    usage_record=record,
                    began_at=record.started_at,
                    ended_at=min(record.card_time_from, record.ended_at),
                )
            )
    JobWait.objects.bulk_create(waits, batch_size=500)


def waits_summed_again(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    UsageRecord = apps.get_model("jobs", "UsageRecord")
    JobWait = apps.get_model("jobs", "JobWait")
    for wait in JobWait.objects.filter(ended_at=None).exclude(job=None):
        Job.objects.filter(pk=wait.job_id).update(waiting_since=wait.began_at)
    totals: dict[tuple[str, int], timedelta] = {}
    for wait in JobWait.objects.exclude(ended_at=None):
        key = ("job", wait.job_id) if wait.job_id else ("record", wait.usage_record_id)
        totals[key] = totals.get(key, timedelta(0)) + max(
            wait.ended_at - wait.began_at, timedelta(0)
        )
    for (kind, pk), waited in totals.items():
        model = Job if kind == "job" else UsageRecord
        row = model.objects.filter(pk=pk).first()
        if row is not None and row.started_at is not None:
            model.objects.filter(pk=pk).update(card_time_from=row.started_at + waited)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0062_card_time_leaves_out_waits_to_run_again"),
    ]

    operations = [
        migrations.CreateModel(
            name="JobWait",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("began_at", models.DateTimeField(editable=False)),
                ("ended_at", models.DateTimeField(blank=True, editable=False, null=True)),
                (
                    "job",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="waits",
                        to="jobs.job",
                    ),
                ),
                (
                    "usage_record",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="waits",
                        to="jobs.usagerecord",
                    ),
                ),
            ],
            options={
                "verbose_name": "wait to run again",
                "verbose_name_plural": "waits to run again",
                "ordering": ["began_at", "id"],
            },
        ),
        migrations.RunPython(waits_kept_as_intervals, waits_summed_again),
        migrations.RemoveField(model_name="job", name="card_time_from"),
        migrations.RemoveField(model_name="job", name="waiting_since"),
        migrations.RemoveField(model_name="usagerecord", name="card_time_from"),
    ]
