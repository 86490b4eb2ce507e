# The status reason search's SQLite index (job_search_reason), made by 0066's own SQL, declared
# in Job.Meta.indexes too (review67): Django knew nothing of it, so a later migration that
# remakes the table on SQLite (SQLite's AlterField copies the table into a new one, with the
# indexes Django knows of) would have dropped it unsaid, and the admin's search read every
# job's row with its spec again. The index is already there, on SQLite (0066), so nothing is
# made: Django's record of the table alone changes. Not on PostgreSQL, where 0066 made a
# trigram index instead (a B-tree entry there holds at most about 2,700 bytes; a reason may be
# longer). No row changes; reversed, Django forgets it again and 0066's reverse drops it.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0067_job_finished_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="job",
                    index=models.Index(
                        fields=["name", "owner", "created_at", "image", "status_reason"],
                        name="job_search_reason",
                    ),
                ),
            ],
        ),
    ]
