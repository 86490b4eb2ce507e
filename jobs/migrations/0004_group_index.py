from django.db import migrations, models


def number_the_tasks(apps, schema_editor):
    """Existing queue tasks get the number they were created with: the `:n` their submit key
    ends with (0-based), or, without one, their order in the group."""
    Job = apps.get_model("jobs", "Job")
    seen: dict[int, int] = {}
    tasks = Job.objects.exclude(group_id=None).order_by("group_id", "id")
    for job in tasks.only("id", "group_id", "submit_key").iterator():
        seen[job.group_id] = seen.get(job.group_id, 0) + 1
        index = seen[job.group_id]
        suffix = (job.submit_key or "").rpartition(":")[2]
        if suffix.isdigit():
            index = int(suffix) + 1
        Job.objects.filter(pk=job.pk).update(group_index=index)


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0003_recorded_text_sources"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="group_index",
            field=models.PositiveIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(number_the_tasks, migrations.RunPython.noop),
    ]
