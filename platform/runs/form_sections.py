"""Which section of the run form each RunConfig field is drawn in (ours). A field not
named here (a RunConfig field added later) falls into a prefix rule, else "Advanced",
so a new field shows up in the form without an edit here."""
from __future__ import annotations

MODEL_AND_DATA = "Model and data"
ROLLOUT = "Rollout policy"
TRAINING = "Training"
RESOURCES = "Resources"
ADVANCED = "Advanced"
# In drawing order; the last one is collapsed.
SECTIONS = (MODEL_AND_DATA, ROLLOUT, TRAINING, RESOURCES, ADVANCED)
COLLAPSED = frozenset({ADVANCED})

FIELD_SECTION = {
    "experiment": MODEL_AND_DATA, "model": MODEL_AND_DATA, "dataset": MODEL_AND_DATA,
    "dataset_file": MODEL_AND_DATA, "prompts_per_iteration": MODEL_AND_DATA, "train_max_samples": MODEL_AND_DATA,
    "rollout_policy": ROLLOUT, "group_size": ROLLOUT, "max_tokens": ROLLOUT, "temperature": ROLLOUT,
    "chunk_tokens": ROLLOUT, "spec_decoding": ROLLOUT,
    "iterations": TRAINING, "learning_rate": TRAINING, "kl_coef": TRAINING, "clip_eps": TRAINING,
    "train_minibatches": TRAINING, "adv_estimator": TRAINING, "loss_agg_mode": TRAINING,
    "rollout_instances": RESOURCES, "kv_cache_gib": RESOURCES, "max_num_seqs": RESOURCES,
    "trainer_ranks": RESOURCES, "gradient_checkpointing": RESOURCES, "cluster": RESOURCES,
    "seed": ADVANCED, "checkpoint_every": ADVANCED,
}
# Families of fields, by name prefix: validation with the data, Seer's switches with the rollout.
PREFIX_SECTION = (("val_", MODEL_AND_DATA), ("seer_", ROLLOUT), ("spec_", ROLLOUT), ("reward", TRAINING))


def section_of(name: str) -> str:
    """The section field ``name`` is drawn in."""
    if name in FIELD_SECTION:
        return FIELD_SECTION[name]
    for prefix, section in PREFIX_SECTION:
        if name.startswith(prefix):
            return section
    return ADVANCED


def group_fields(names: list[str]) -> list[tuple[str, list[str]]]:
    """``[(section, [field, ...]), ...]`` in SECTIONS order, fields in the given order; empty sections left out."""
    by_section: dict[str, list[str]] = {s: [] for s in SECTIONS}
    for name in names:
        by_section[section_of(name)].append(name)
    return [(s, fields) for s, fields in by_section.items() if fields]
