# The admin's job search finds the image too (qa98: "who runs nvcr.io/...?" found nothing):
# each job's image address (Job.image), filled here for the jobs there are from their stored
# specs, as Job.save() fills it for new ones; `job_search` holds it too, so a word is still
# looked for in that index alone, not in every job's row with its spec. On PostgreSQL, where
# pg_trgm was made (0032), also a trigram index of the image as the search compares it, like
# the name's. Reversed, the column and that index go and job_search is as 0032 made it.

from collections import defaultdict

from django.db import migrations, models

# Jobs read at a time (their specs held in memory meanwhile) and ids per UPDATE, as 0030.
READ = 2000
WRITE = 500
TRIGRAM_INDEX = "job_image_trgm"


def fill_images(apps, schema_editor):
    """Each job's image, from its stored spec: one UPDATE per distinct image in each batch of
    jobs, not one per job (a team runs a few dozen images)."""
    # The console's own function, not a copy frozen here: the column holds what save() puts.
    from jobs.spec import stored_image

    Job = apps.get_model("jobs", "Job")
    last = 0
    while True:
        rows = list(Job.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "spec")[:READ])
        if not rows:
            return
        last = rows[-1][0]
        by_image: dict[str, list[int]] = defaultdict(list)
        for pk, spec in rows:
            by_image[stored_image(spec)].append(pk)
        for image, pks in by_image.items():
            if not image:
                continue  # the column's default already
            for start in range(0, len(pks), WRITE):
                Job.objects.filter(pk__in=pks[start : start + WRITE]).update(image=image)


def add_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            return  # 0032 could not make it: the search reads the rows for the image
        cursor.execute(
            f"CREATE INDEX IF NOT EXISTS {TRIGRAM_INDEX} ON jobs_job "
            "USING gin ((UPPER(image::text)) gin_trgm_ops)"
        )


def drop_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {TRIGRAM_INDEX}")


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0052_deleted_job_group_again"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="image",
            field=models.CharField(
                blank=True, default="", editable=False, max_length=512, verbose_name="image"
            ),
        ),
        migrations.RunPython(fill_images, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="job", name="job_search"),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(fields=["name", "owner", "created_at", "image"], name="job_search"),
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index),
    ]
