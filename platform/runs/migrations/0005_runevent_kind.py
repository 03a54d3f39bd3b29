from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0004_run_attempt_token_expiry"),
    ]

    operations = [
        migrations.AddField(
            model_name="runevent",
            name="kind",
            field=models.CharField(choices=[("state", "State"), ("job", "Job")], default="state", max_length=8),
        ),
    ]
