"""Run.name, Run.tags and Run.note: a run can be named, tagged and annotated (issue 17)."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("runs", "0006_run_queue_times")]

    operations = [
        migrations.AddField(model_name="run", name="name", field=models.CharField(blank=True, max_length=200)),
        migrations.AddField(model_name="run", name="tags", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name="run", name="note", field=models.TextField(blank=True, max_length=5000)),
    ]
