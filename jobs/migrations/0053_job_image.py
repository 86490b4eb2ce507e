# The admin's job search finds the image too (qa98: "who runs nvcr.io/...?" found nothing):
# each job's image address (Job.image), filled here for the jobs there are from their stored
# specs, as Job.save() fills it for new ones; `job_search` holds it too, so a word is still
# looked for in that index alone, not in every job's row with its spec. On PostgreSQL, where
# pg_trgm was made (0032), also a trigram index of the image as the search compares it, like
# the name's. Reversed, the column and that index go and job_search is as 0032 made it.

from django.db import migrations, models

# Jobs read, and written, at a time (their specs held in memory meanwhile), as 0030.
READ = 2000
TRIGRAM_INDEX = "job_image_trgm"


def fill_images(apps, schema_editor):
    """Each job's image, from its stored spec: one UPDATE per batch of jobs (a CASE on the
    job's id, bulk_update's), however many images they run. fix106: one UPDATE per distinct
    image in each batch was as many as jobs with a tag per build, 100,000 in one transaction."""
    # The console's own function, not a copy frozen here: the column holds what save() puts.
    from jobs.spec import stored_image

    Job = apps.get_model("jobs", "Job")
    last = 0
    while True:
        rows = list(Job.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "spec")[:READ])
        if not rows:
            return
        last = rows[-1][0]
        # A job without one keeps the column's default, "".
        filled = [Job(pk=pk, image=image) for pk, spec in rows if (image := stored_image(spec))]
        # SQLite splits a batch only past its limit on a statement's parameters (3 a job; by
        # default 32,766); PostgreSQL has none.
        Job.objects.bulk_update(filled, ["image"], batch_size=READ)


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
