"""Ray driver and vLLM instances shared by the integration tests of this folder.

Starting a vLLM engine costs about half a minute of CPU here, so the plain pair is started
once per session and shared: by the speculative-decoding test (its reference outputs), the
weight-sync tests and, last, the instance-fault test, which kills one of them (tests that
ask for ``doomed_instances`` run after every other test that asks for ``instances``; a
test that finds one dead gets a replacement first).
"""
import pytest


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


@pytest.fixture(scope="session")
def _plain_pair(ray_driver):
    """The session's two plain vLLM instances (handles by index), started on first use."""
    handles: list = []
    yield handles
    _stop(ray_driver, handles)


@pytest.fixture
def instances(ray_driver, tiny_model_path, _plain_pair):
    """Two plain vLLM instances (no speculation), shared by the session; one that a test
    killed is replaced (same id, seed and engine settings) before it is handed out."""
    if not _plain_pair:
        _plain_pair.extend(_start(2, tiny_model_path))
    for i in _dead(ray_driver, _plain_pair):
        ray_driver.kill(_plain_pair[i])
        _plain_pair[i] = _start(1, tiny_model_path, first_id=i)[0]
    return list(_plain_pair)


@pytest.fixture
def doomed_instances(instances):
    """The session's plain pair, for a test that kills one of them (it runs after the
    other users of ``instances``; see ``pytest_collection_modifyitems``)."""
    return instances


def pytest_collection_modifyitems(config, items):
    """Move the tests that ask for ``doomed_instances`` right after the last other test that
    asks for ``instances``, so the shared pair is not restarted in between."""
    doomed = [item for item in items if "doomed_instances" in getattr(item, "fixturenames", ())]
    users = [i for i, item in enumerate(items)
             if "instances" in getattr(item, "fixturenames", ()) and item not in doomed]
    if not doomed or not users:
        return
    last = items[max(users)]
    rest = [item for item in items if item not in doomed]
    at = rest.index(last) + 1
    items[:] = rest[:at] + doomed + rest[at:]


@pytest.fixture(scope="module")
def _spec_starting(ray_driver, tiny_model_path):
    """One instance with grouped speculative decoding and its draft server, started in a
    thread of their own, so its engine comes up while the plain pair's do (``spec_setup``).
    One is enough for what the tests claim (lossless outputs, drafts verified and accepted):
    its drafts still come from the group's responses through the draft server."""
    from concurrent.futures import ThreadPoolExecutor

    from umbra.speculative.server import start_draft_server

    def start():
        server = start_draft_server()
        return _start(1, tiny_model_path, server), server

    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(start)
        try:
            yield future
        finally:
            _stop(ray_driver, [*future.result()[0], future.result()[1]] if future.exception() is None else [])


@pytest.fixture
def spec_setup(instances, _spec_starting):
    """``([spec instance], draft server)``; asks for the plain pair first, so both start at once."""
    return _spec_starting.result()
