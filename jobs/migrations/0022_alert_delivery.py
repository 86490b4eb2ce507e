# The hourly bound on alert emails extended to webhooks (ALERT_WEBHOOKS_PER_HOUR): the rows it
# counts, AlertMail, become AlertDelivery with a channel; the emails already counted keep
# counting (channel "email").

from django.conf import settings
from django.db import migrations, models


def forget_webhook_deliveries(apps, schema_editor):
    """Reversing: the older release counts every row as an email; webhook rows would take
    its hourly emails."""
    apps.get_model("jobs", "AlertDelivery").objects.filter(channel="webhook").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0021_api_key_create_key"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(model_name="alertmail", name="alertmail_owner_time"),
        migrations.RenameModel(old_name="AlertMail", new_name="AlertDelivery"),
        migrations.AddField(
            model_name="alertdelivery",
            name="channel",
            field=models.CharField(
                choices=[("email", "email"), ("webhook", "webhook")],
                default="email",
                max_length=8,
            ),
        ),
        migrations.RunPython(migrations.RunPython.noop, forget_webhook_deliveries),
        migrations.AddIndex(
            model_name="alertdelivery",
            index=models.Index(
                fields=["owner", "channel", "sent_at"], name="alertdelivery_owner_time"
            ),
        ),
    ]
