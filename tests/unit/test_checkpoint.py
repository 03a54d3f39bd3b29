"""Checkpoint folders: only committed checkpoints count, the newest wins, the sampler
continues where it stopped. That a trainer restored from one continues bit-for-bit needs
a real model: tests/integration/test_trainer_checkpoint.py."""
from umbra.data.problem import Problem
from umbra.data.source import DataSource, PromptItem
from umbra.job.checkpoint import CheckpointDir, LoopState

ITEMS = [PromptItem(Problem(f"q{i}", str(i)), [i]) for i in range(20)]


def test_only_a_committed_checkpoint_is_latest(tmp_path):
    ck = CheckpointDir(tmp_path / "run-1")
    assert ck.latest() is None
    data = DataSource(ITEMS, 3, seed=5)
    data.next_batch()
    folder = ck.begin(3)
    ck.commit(folder, LoopState(3, 4, data.state()))
    ck.begin(5)  # a driver killed while saving: never committed
    got_folder, state = ck.latest()
    assert got_folder == folder and (state.iteration, state.policy_version) == (3, 4)
    restored = DataSource(ITEMS, 3, seed=0)
    restored.restore(state.sampler_state)
    assert [restored.next_batch() for _ in range(3)] == [data.next_batch() for _ in range(3)]


def test_newer_checkpoint_replaces_the_old_one(tmp_path):
    ck = CheckpointDir(tmp_path)
    for it in (1, 3):
        ck.commit(ck.begin(it), LoopState(it, it + 1, DataSource(ITEMS, 1, it).state()))
    assert ck.latest()[1].iteration == 3
    assert sorted(p.name for p in tmp_path.glob("it-*")) == ["it-000003"]


def test_a_broken_latest_pointer_reads_as_no_checkpoint(tmp_path):
    (tmp_path / "latest").write_text("it-000009")
    assert CheckpointDir(tmp_path).latest() is None


def test_a_save_cut_short_by_a_cancel_is_never_loaded_and_goes_at_the_next_commit(tmp_path):
    """Cancel kills the driver and the trainer ranks wherever they are in a save: a
    half-written folder (after iteration 5, up to its state.json, the last file before
    ``latest``; one after 6, or 2, that a deferred save began) is not what Resume loads, and
    the resumed attempt's next commit removes them, keeping ``keep`` complete checkpoints."""
    ck = CheckpointDir(tmp_path, keep=2)
    for it in (1, 3):
        ck.commit(ck.begin(it), LoopState(it, it + 1, DataSource(ITEMS, 1, it).state()))
    ck.begin(2)
    cut = ck.begin(5)
    (cut / "trainer-dcp").mkdir()
    (cut / "trainer-dcp" / "__0_0.distcp").write_bytes(b"half")
    (cut / "state.json").write_text('{"iteration": 5, "policy_version": 6, "sampler_state": []}')
    ck.begin(6)
    folder, state = ck.latest()
    assert folder.name == "it-000003" and state.iteration == 3
    ck.commit(ck.begin(4), LoopState(4, 5, DataSource(ITEMS, 1, 4).state()))  # the resumed attempt
    assert sorted(p.name for p in tmp_path.glob("it-*")) == ["it-000003", "it-000004"]
    assert ck.latest()[1].iteration == 4


class _Trainers:
    """Stands in for the trainer group's checkpoint calls (pure driver logic under test)."""

    def __init__(self):
        self.policy_version, self.saved, self.loaded = 0, [], []

    def save_checkpoint(self, folder):
        self.saved.append(folder)

    def load_checkpoint(self, folder):
        self.loaded.append(folder)
        self.policy_version = 7
        return 7


def test_a_due_checkpoint_waits_for_delivered_metrics_and_restores(tmp_path):
    from umbra.job.checkpoint import Checkpointer

    ck, trainers, data = Checkpointer(CheckpointDir(tmp_path), every=2), _Trainers(), DataSource(ITEMS, 2, 1)
    assert ck.after_iteration(0, True, trainers, data) is None  # not due
    assert ck.after_iteration(1, False, trainers, data) is None  # due, but its metrics were not delivered
    folder = ck.after_iteration(2, True, trainers, data)  # still due: saved after the next delivered one
    assert folder is not None and folder.name == "it-000002" and trainers.saved == [str(folder)]
    assert ck.after_iteration(3, True, trainers, data).name == "it-000003"
    want = data.next_batch()

    fresh, restored_data = _Trainers(), DataSource(ITEMS, 2, 99)
    state = Checkpointer(CheckpointDir(tmp_path), every=2).restore(fresh, restored_data)
    assert state.iteration == 3 and fresh.loaded == [str(tmp_path / "it-000003")]
    assert restored_data.next_batch() == want
    assert Checkpointer(None, every=2).restore(fresh, restored_data) is None


def test_the_last_iteration_is_saved_so_the_model_can_be_exported(tmp_path):
    from umbra.job.checkpoint import Checkpointer

    trainers, data = _Trainers(), DataSource(ITEMS, 2, 1)
    ck = Checkpointer(CheckpointDir(tmp_path), every=10, last=1)
    assert ck.after_iteration(0, True, trainers, data) is None
    assert ck.after_iteration(1, True, trainers, data).name == "it-000001"
    assert Checkpointer(CheckpointDir(tmp_path / "off"), every=0, last=1).after_iteration(1, True, trainers, data) is None
