"""Run.queued_at and Run.dispatched_at, for the run queue (runs.queue): a stored run's
place in its team's line is when it was created."""
import django.utils.timezone
from django.db import migrations, models


def queued_when_created(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    Run.objects.update(queued_at=models.F("created_at"))


class Migration(migrations.Migration):

    dependencies = [("runs", "0005_runevent_kind")]

    operations = [
        migrations.AddField(model_name="run", name="queued_at",
                            field=models.DateTimeField(default=django.utils.timezone.now)),
        migrations.AddField(model_name="run", name="dispatched_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.RunPython(queued_when_created, migrations.RunPython.noop),
    ]
