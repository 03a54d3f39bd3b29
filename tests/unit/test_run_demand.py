"""A run's demand on its Ray cluster (runs.demand): what its actors ask Ray for, plus the
memory estimate, from its RunConfig alone."""
import inspect

import pytest

from runs.demand import (DRIVER_BYTES, ENGINE_OVERHEAD_BYTES, GIB, NAMED_MODEL_PARAMETERS, ROLLOUT_INSTANCE_CPUS,
                         TRAINER_CPUS, TRAINER_OVERHEAD_BYTES, ModelSize, Resources, activation_bytes_per_token,
                         model_size, model_weights_bytes, parameter_count, run_demand)
from umbra.config import RunConfig

W = 100 * 2**20  # 100 MiB of weights
A = 1000  # activation bytes per micro-batch token
SIZE = ModelSize(W, A)


def test_cpu_cluster_demand_counts_instances_trainer_kv_cache_and_weights():
    cfg = RunConfig(model="tiny", rollout_instances=3, kv_cache_gib=2, kl_coef=0.01, train_micro_tokens=2048)
    d = run_demand(cfg, SIZE, gpu_cluster=False)
    assert d.cpu == 3 * 0.5 + 1.0 and d.gpu == 0
    engines = 3 * (W + 2 * GIB + ENGINE_OVERHEAD_BYTES)
    # policy, gradients, two AdamW moments, the reference copy; one micro-batch's activations
    trainer = 5 * W + TRAINER_OVERHEAD_BYTES + 2048 * A
    assert d.memory == engines + trainer + DRIVER_BYTES


def test_gpu_cluster_demand_takes_a_gpu_per_instance_and_keeps_kv_cache_off_host_memory():
    d = run_demand(RunConfig(model="tiny", rollout_instances=2, kv_cache_gib=8, kl_coef=0.0), SIZE, gpu_cluster=True)
    assert (d.cpu, d.gpu) == (2.0, 3.0)  # a GPU per instance and per trainer rank
    # activations live in device memory
    assert d.memory == 2 * (W + ENGINE_OVERHEAD_BYTES) + 4 * W + TRAINER_OVERHEAD_BYTES + DRIVER_BYTES


def test_trainer_ranks_each_take_their_cpu_gpu_and_overhead():
    one = run_demand(RunConfig(model="tiny", rollout_instances=2, kl_coef=0.0), SIZE, gpu_cluster=True)
    two = run_demand(RunConfig(model="tiny", rollout_instances=2, kl_coef=0.0, trainer_ranks=2), SIZE, gpu_cluster=True)
    assert (two.cpu - one.cpu, two.gpu - one.gpu) == (TRAINER_CPUS, 1.0)
    assert two.memory - one.memory == TRAINER_OVERHEAD_BYTES + W  # rank 0 gathers the full weights to sync
    cpu_one = run_demand(RunConfig(model="tiny", kl_coef=0.0), SIZE, gpu_cluster=False)
    cpu_two = run_demand(RunConfig(model="tiny", kl_coef=0.0, trainer_ranks=2), SIZE, gpu_cluster=False)
    assert cpu_two.memory - cpu_one.memory == TRAINER_OVERHEAD_BYTES + W + 1024 * A  # each rank its micro-batch


def test_placement_error_before_any_engine_starts():
    from umbra.training.group import placement_error

    assert placement_error(1, 2, {"CPU": 2.0}) is None
    assert "trainer_ranks=4 needs 4 CPUs" in placement_error(4, 2, {"CPU": 2.0})
    assert "trainer_ranks=2 needs 2 GPUs" in placement_error(2, 2, {"CPU": 16.0, "GPU": 3.0})
    assert placement_error(1, 2, {"CPU": 16.0, "GPU": 3.0}) is None


def test_demand_grows_with_instances_and_kv_cache():
    small = run_demand(RunConfig(model="tiny"), SIZE, False)
    assert run_demand(RunConfig(model="tiny", rollout_instances=4), SIZE, False).memory > small.memory
    assert run_demand(RunConfig(model="tiny", kv_cache_gib=4), SIZE, False).memory > small.memory
    assert run_demand(RunConfig(model="tiny", train_micro_tokens=4096), SIZE, False).memory > small.memory


def test_the_numbers_are_the_ones_the_actors_ask_ray_for():
    from umbra.rollout.instance import start_instances
    from umbra.training.group import TrainerGroup

    assert inspect.signature(start_instances).parameters["num_cpus"].default == ROLLOUT_INSTANCE_CPUS
    assert inspect.signature(TrainerGroup.start).parameters["num_cpus"].default == TRAINER_CPUS
    # one GPU per instance on a cluster that has one, none otherwise
    assert 'gpus = 1 if ray.cluster_resources().get("GPU", 0) >= 1 else 0' in inspect.getsource(start_instances)


def test_resources_fit_per_resource():
    free = Resources(cpu=4, gpu=0, memory=10 * GIB)
    assert Resources(4, 0, 10 * GIB).fits_in(free)
    assert not Resources(4.5, 0, GIB).fits_in(free) and not Resources(1, 1, GIB).fits_in(free)
    assert not Resources(1, 0, 11 * GIB).fits_in(free)
    assert Resources.from_ray({"CPU": 8.0, "memory": 2.0 * GIB, "node:x": 1}) == Resources(8, 0, 2 * GIB)
    assert str(Resources(2.5, 1, 3 * GIB)) == "2.5 CPU, 1 GPU, 3.0 GiB memory"


def test_model_weights_from_the_name_or_the_folder(tmp_path):
    assert model_weights_bytes("smollm2") == NAMED_MODEL_PARAMETERS["smollm2"] * 4
    cfg = {"hidden_size": 576, "num_hidden_layers": 30, "vocab_size": 49152, "num_attention_heads": 9,
           "num_key_value_heads": 3, "intermediate_size": 1536, "tie_word_embeddings": True}  # SmolLM2-135M
    assert parameter_count(cfg) == pytest.approx(134.5e6, rel=0.01)
    (tmp_path / "config.json").write_text(__import__("json").dumps(cfg))
    assert model_weights_bytes(str(tmp_path)) == parameter_count(cfg) * 4
    (tmp_path / "config.json").write_text("{}")  # unreadable: counted as the largest named model
    assert model_weights_bytes(str(tmp_path)) == max(NAMED_MODEL_PARAMETERS.values()) * 4


def test_trainer_estimate_follows_the_measured_peaks_of_bench_train():
    """`umbra bench train --model smollm2 --sequences 64 --prompt-tokens 64 --response-tokens 96
    --kl-coef 0` peaked at 4.11 / 5.31 / 8.20 / 13.44 GiB at 512 / 1,024 / 2,048 / 4,096 micro-batch
    tokens; the estimate (policy state, overhead, activations) is within 10% of each."""
    size = model_size("smollm2")
    for tokens, peak_gib in ((512, 4.11), (1024, 5.31), (2048, 8.20), (4096, 13.44)):
        est = 4 * size.weights_bytes + TRAINER_OVERHEAD_BYTES + tokens * size.activation_bytes_per_token
        assert est / GIB == pytest.approx(peak_gib, rel=0.10), tokens


def test_model_size_from_the_name_or_the_folder(tmp_path):
    assert model_size("smollm2") == ModelSize(NAMED_MODEL_PARAMETERS["smollm2"] * 4,
                                              activation_bytes_per_token(49_152, 576, 30))
    cfg = {"hidden_size": 64, "num_hidden_layers": 3, "vocab_size": 1000, "num_attention_heads": 4}
    (tmp_path / "config.json").write_text(__import__("json").dumps(cfg))
    assert model_size(str(tmp_path)).activation_bytes_per_token == activation_bytes_per_token(1000, 64, 3)
    (tmp_path / "config.json").write_text('{"vocab_size": -5}')  # unreadable: counted as the largest named model
    assert model_size(str(tmp_path)) == model_size("smollm2")
