"""Ray driver and vLLM instances shared by the integration tests of this folder.

Starting a vLLM engine costs about half a minute of CPU here, so the plain pair is started
once per session and shared: by the speculative-decoding test (its reference outputs), the
weight-sync tests and, last, the instance-fault test, which kills one of them (tests that
ask for ``doomed_instances`` run after every other test that asks for ``instances``; a
test that finds one dead gets a replacement first).

A session that will use them starts them (and the speculating instance) in threads of their
own right after its first integration test (in the whole suite test_security_job.py, which
pytest-django runs before the platform tier, as it is not transactional): the platform,
browser, CLI and restart tests that run next keep about one core busy and leave the other
to the engines' start-ups, about a minute of both cores that the first test using them
would otherwise wait for (``_start_engines_early``; Ray runs them niced, so the tests in
the foreground keep their core). The tests that use them run together, right before the
first transactional test on the Ray cluster (``pytest_collection_modifyitems``), and the
last one frees them, so they never share the memory with the engines of a run's job.
"""
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

# The engine start-ups the collected tests need ("plain", "spec"), for _start_engines_early.
_NEEDS = pytest.StashKey[tuple]()


@pytest.fixture(scope="session")
def ray_driver(ray_cluster):
    import ray

    ray.init(address=ray_cluster["gcs"], namespace="umbra-test", log_to_driver=False)
    yield ray
    ray.shutdown()


def _start(n, model, draft_server=None, first_id=0):
    from umbra.rollout.instance import start_instances

    return start_instances(n, model, 512, 64, seed=0, kv_cache_gib=1, draft_server=draft_server, first_id=first_id)


def _stop(ray, handles):
    """Kill the instances' actors: Ray takes their engine processes down with them (within
    a second; a graceful engine shutdown first takes seconds each). Dead ones are skipped."""
    for inst in handles:
        try:
            ray.kill(inst)
        except Exception:  # noqa: BLE001 - already gone
            pass


def _dead(ray, handles) -> list[int]:
    """Indices of the instances that do not answer a liveness probe."""
    refs = [h.ready.remote() for h in handles]
    dead = []
    for i, ref in enumerate(refs):
        try:
            ray.get(ref, timeout=30)
        except Exception:  # noqa: BLE001 - RayActorError (killed) or a timeout
            dead.append(i)
    return dead


def _start_spec(model):
    """One instance with grouped speculative decoding and its draft server: ``([instance], server)``."""
    from umbra.speculative.server import start_draft_server

    server = start_draft_server()
    return _start(1, model, server), server


class _EngineStarts:
    """The session's engine start-ups, each begun once in a thread of its own: early
    (``_start_engines_early``) or when a test first needs it. ``take(name)`` waits for one and
    hands it over (the taker stops it); ``stop_rest()`` stops what nobody took."""

    def __init__(self, ray, model: str):
        self.ray, self.pool, self.futures, self.taken = ray, ThreadPoolExecutor(2), {}, set()
        self.starters = {"plain": lambda: _start(2, model), "spec": lambda: _start_spec(model)}

    def begin(self, name: str) -> Future:
        if name not in self.futures:
            self.futures[name] = self.pool.submit(self.starters[name])
        return self.futures[name]

    def take(self, name: str):
        """``[plain instance, plain instance]`` ("plain") or ``([spec instance], draft server)`` ("spec")."""
        result = self.begin(name).result()
        self.taken.add(name)
        return result

    def stop_rest(self) -> None:
        self.pool.shutdown(wait=True)  # a session that ended early waits for a start-up still under way
        for name, future in self.futures.items():
            if name not in self.taken and future.exception() is None:
                handles = future.result() if name == "plain" else [*future.result()[0], future.result()[1]]
                _stop(self.ray, handles)


@pytest.fixture(scope="session")
def _engine_starts(ray_driver, tiny_model_path):
    starts = _EngineStarts(ray_driver, tiny_model_path)
    yield starts
    starts.stop_rest()


@pytest.fixture(autouse=True)
def _start_engines_early(request):
    """Begin the start-ups of the engines the collected tests will use (see the module's
    docstring) once the session's first integration test is done, or before it if it uses
    them; a session without such tests starts none (and no Ray driver)."""
    needs = request.config.stash.get(_NEEDS, ())
    starts = request.getfixturevalue("_engine_starts") if needs else None
    if needs and {"instances", "spec_setup"} & set(request.fixturenames):
        for name in needs:
            starts.begin(name)
    yield
    for name in needs:  # after the first test: its own Ray job (if any) did not share the cores with them
        starts.begin(name)


@pytest.fixture(scope="session")
def _plain_pair(ray_driver):
    """The session's two plain vLLM instances (handles by index), filled on first use."""
    handles: list = []
    yield handles
    _stop(ray_driver, handles)


@pytest.fixture
def instances(ray_driver, tiny_model_path, _plain_pair, _engine_starts):
    """Two plain vLLM instances (no speculation), shared by the session; one that a test
    killed is replaced (same id, seed and engine settings) before it is handed out."""
    if not _plain_pair:
        _plain_pair.extend(_engine_starts.take("plain"))
    for i in _dead(ray_driver, _plain_pair):
        ray_driver.kill(_plain_pair[i])
        _plain_pair[i] = _start(1, tiny_model_path, first_id=i)[0]
    return list(_plain_pair)


@pytest.fixture
def doomed_instances(instances):
    """The session's plain pair, for a test that kills one of them (it runs after the
    other users of ``instances``; see ``pytest_collection_modifyitems``)."""
    return instances


def _transactional(item) -> bool:
    """Whether pytest-django runs ``item`` among the transactional tests (its second group)."""
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    return bool(marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences"))) or (
        "transactional_db" in fixtures or "live_server" in fixtures)


def pytest_collection_modifyitems(config, items):
    """Run the tests that use the shared engines together, the ones that ask for
    ``doomed_instances`` last among them (so the shared pair is not restarted in between),
    right before the first transactional test on the Ray cluster (pytest-django, which
    ordered ``items`` already, runs the transactional tests after the other database tests):
    the engines, started early, are ready by then, and gone (the doomed test kills the pair)
    before the tests whose Ray jobs start engines of their own, so the session never holds
    both sets in memory; note which start-ups it needs (``_start_engines_early``)."""
    names = [getattr(item, "fixturenames", ()) for item in items]
    config.stash[_NEEDS] = tuple(name for name, fixture in (("plain", "instances"), ("spec", "spec_setup"))
                                 if any(fixture in n for n in names))
    users = [item for item in items if {"instances", "spec_setup"} & set(getattr(item, "fixturenames", ()))]
    if not users:
        return
    doomed = [item for item in users if "doomed_instances" in item.fixturenames]
    users = [item for item in users if item not in doomed] + doomed
    rest = [item for item in items if item not in users]
    at = next((i for i, item in enumerate(rest) if _transactional(item) and "ray_cluster" in item.fixturenames),
              len(rest))
    items[:] = rest[:at] + users + rest[at:]


@pytest.fixture(scope="module")
def _spec(ray_driver, _engine_starts):
    """One instance with grouped speculative decoding and its draft server (started early,
    beside the plain pair's engines), stopped at the end of the module that uses it. One is
    enough for what the tests claim (lossless outputs, drafts verified and accepted): its
    drafts still come from the group's responses through the draft server."""
    spec_instances, server = _engine_starts.take("spec")
    yield spec_instances, server
    _stop(ray_driver, [*spec_instances, server])


@pytest.fixture
def spec_setup(instances, _spec):
    """``([spec instance], draft server)``; asks for the plain pair first, so both start at once."""
    return _spec
