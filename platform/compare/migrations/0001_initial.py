"""compare.StoredDerived: downsampled series and statistics of ended runs, stored once (issue 17)."""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True
    dependencies = [("runs", "0008_run_after")]

    operations = [
        migrations.CreateModel(
            name="StoredDerived",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(max_length=40)),
                ("part", models.CharField(max_length=300)),
                ("version", models.CharField(max_length=64)),
                ("value", models.JSONField(null=True)),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="stored_derived",
                                          to="runs.run")),
            ],
            options={"constraints": [models.UniqueConstraint(fields=("run", "kind", "part"), name="stored_derived_once")]},
        ),
    ]
