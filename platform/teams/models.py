"""Teams and who belongs to them, with a role."""
from django.conf import settings
from django.db import models


class Team(models.Model):
    """A group of users that owns experiments."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=100, unique=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a team: viewers read, members also submit and cancel runs,
    admins also manage membership."""

    class Role(models.TextChoices):
        VIEWER = "viewer"
        MEMBER = "member"
        ADMIN = "admin"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="one_membership_per_team")]

    def can_submit(self) -> bool:
        """Members and admins submit and cancel runs and edit experiments."""
        return self.role in (self.Role.MEMBER, self.Role.ADMIN)

    def can_manage(self) -> bool:
        """Admins manage the team's memberships."""
        return self.role == self.Role.ADMIN
