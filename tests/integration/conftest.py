"""Ray driver and vLLM instances shared by the integration tests of this folder."""
import pytest


@pytest.fixture(scope="session")
def ray_driver(ray_cluster):
    import ray

    ray.init(address=ray_cluster["gcs"], namespace="umbra-test", log_to_driver=False)
    yield ray
    ray.shutdown()


def _start(ray, model, draft_server=None):
    from umbra.rollout.instance import start_instances

    return start_instances(2, model, 512, 64, seed=0, kv_cache_gib=1, draft_server=draft_server)


def _stop(ray, handles):
    for inst in handles:
        ray.get(inst.shutdown.remote())
        ray.kill(inst)


@pytest.fixture(scope="session")
def instances(ray_driver, tiny_model_path):
    """Two plain vLLM instances (no speculation)."""
    handles = _start(ray_driver, tiny_model_path)
    yield handles
    _stop(ray_driver, handles)


@pytest.fixture(scope="session")
def spec_setup(ray_driver, tiny_model_path):
    """Two instances with grouped speculative decoding and their draft server."""
    from umbra.speculative.server import start_draft_server

    server = start_draft_server()
    handles = _start(ray_driver, tiny_model_path, server)
    yield handles, server
    _stop(ray_driver, handles)
