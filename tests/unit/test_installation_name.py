"""The per-installation default Celery queue and Channels/cache prefix (umbra_site.installation)."""
from umbra_site.installation import installation_name

PG = "django.db.backends.postgresql"


def _name(name, port=5432, host="127.0.0.1"):
    return installation_name({"ENGINE": PG, "NAME": name, "PORT": port, "HOST": host})


def test_the_demo_database_is_plain_umbra_and_others_are_named_after_theirs():
    assert _name("umbra") == _name("umbra", port="") == "umbra"
    assert _name("demo2").startswith("umbra-demo2-") and _name("demo2") == _name("demo2")


def test_databases_whose_names_read_alike_never_share_a_name():
    alike = [_name("x"), _name("umbra-x"), _name("a b"), _name("a-b"), _name("umbra", port=5433),
             _name("umbra-5433"), _name("x", host="db1"), _name("x", host="db2")]
    assert len(set(alike)) == len(alike)
