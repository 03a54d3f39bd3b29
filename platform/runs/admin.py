from django.contrib import admin

from runs.models import Experiment, Run, RunEvent

admin.site.register(Experiment)
admin.site.register(Run)
admin.site.register(RunEvent)
