from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0003_run_metrics_version"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="attempt",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="run",
            name="ingest_token_expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
