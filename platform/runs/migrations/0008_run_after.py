"""Run.after: a run queued behind another ends only after it (the A/B launcher, issue 17)."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("runs", "0007_run_name_tags_note")]

    operations = [
        migrations.AddField(model_name="run", name="after", field=models.ForeignKey(
            blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="followers",
            to="runs.run")),
    ]
