from django.contrib import admin

from teams.models import Membership, Team

admin.site.register(Team)
admin.site.register(Membership)
