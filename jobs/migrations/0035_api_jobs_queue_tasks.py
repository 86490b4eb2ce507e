# Local jobs the v1/v2 CreateJob made before sched26 without a submission mode were stored as
# standalone jobs (the spec's default). Since sched26 such a create is a queue task of one
# (AIHC queues a job it cannot start, seed 001), and a standalone job starts before every
# queue task and makes everything behind it wait while it cannot start, which these jobs,
# never admitted against the idle cards, were not made for (left26). Those not started yet
# (Queued, or Pending review) become queue tasks of one, as the API stores them now.
#
# How they are told apart: the API's submit keys begin "api-" (since the API came, b07bf35),
# and a queue task it made has a group and a ":<n>" suffix; a standalone job it made has
# neither. What cannot be told: a body that said console.submission.mode "standalone" itself
# (stored the same); before sched26 the API admitted it as any other create, so it waited in
# its queue then, as it will again. Reversed, they are standalone again (the converted ones
# are the API's grouped jobs whose key has no ":<n>"), and their groups go.

from django.db import migrations

API_KEY = "api-"
NOT_STARTED = ("queued", "pending_review")
BATCH = 500


def _submission(spec):
    console = spec.get("console") if isinstance(spec, dict) else None
    submission = console.get("submission") if isinstance(console, dict) else None
    return submission if isinstance(submission, dict) else None


def to_queue_tasks(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    JobGroup = apps.get_model("jobs", "JobGroup")
    candidates = Job.objects.filter(
        backend="local",
        status__in=NOT_STARTED,
        group__isnull=True,
        submit_key__startswith=API_KEY,
    ).order_by("pk")
    for job in candidates.iterator(chunk_size=BATCH):
        spec = job.spec
        submission = _submission(spec)
        if submission is not None and submission.get("mode") not in (None, "", "standalone"):
            continue
        if not isinstance(spec, dict) or not isinstance(spec.get("console", {}), dict):
            continue  # a spec this version cannot read: the scheduler fails it, as before
        console = spec.setdefault("console", {})
        console["submission"] = {"mode": "queue", "total": 1, "concurrency": 1}
        job.spec = spec
        job.group = JobGroup.objects.create(
            owner_id=job.owner_id, name=job.name, total=1, concurrency=1
        )
        job.group_index = 1
        job.save(update_fields=["spec", "group", "group_index"])


def to_standalone(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    JobGroup = apps.get_model("jobs", "JobGroup")
    converted = (
        Job.objects.filter(submit_key__startswith=API_KEY, group__isnull=False)
        .exclude(submit_key__contains=":")
        .order_by("pk")
    )
    groups = []
    for job in converted.iterator(chunk_size=BATCH):
        spec = job.spec
        if isinstance(_submission(spec), dict):
            spec["console"]["submission"] = {"mode": "standalone", "total": 1, "concurrency": 1}
        groups.append(job.group_id)
        job.spec = spec
        job.group = None
        job.group_index = None
        job.save(update_fields=["spec", "group", "group_index"])
    JobGroup.objects.filter(pk__in=groups).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0034_deleted_job"),
    ]

    operations = [
        migrations.RunPython(to_queue_tasks, to_standalone),
    ]
