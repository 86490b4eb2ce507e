from django.db import migrations


def withdraw(apps, schema_editor):
    """Jobs their owner stopped while they waited for review, before 0005: their review
    state stayed Pending for good, listing them among the reviews still to do. Since 0005 a
    stop makes it Withdrawn; these become so too."""
    Job = apps.get_model("jobs", "Job")
    Job.objects.filter(status="stopped", review_state="pending").update(review_state="withdrawn")


def unwithdraw(apps, schema_editor):
    """Back to Pending, the state releases before 0005 leave such a job in."""
    Job = apps.get_model("jobs", "Job")
    Job.objects.filter(status="stopped", review_state="withdrawn").update(review_state="pending")


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0005_review_withdrawn"),
    ]

    operations = [
        migrations.RunPython(withdraw, unwithdraw),
    ]
