"""The per-installation default Celery queue and Channels/cache prefix (umbra_site.installation)."""
from umbra_site.installation import installation_name

PG = "django.db.backends.postgresql"


def test_names_follow_the_database():
    assert installation_name({"ENGINE": PG, "NAME": "umbra", "PORT": 5432}) == "umbra"
    assert installation_name({"ENGINE": PG, "NAME": "demo2", "PORT": ""}) == "umbra-demo2"
    assert installation_name({"ENGINE": PG, "NAME": "umbra", "PORT": 5433}) == "umbra-5433"
    assert installation_name({"ENGINE": PG, "NAME": "a b/c"}) == "umbra-a-b-c"

