"""Score a rollout batch (ours): each sample's reward from its decoded response and its group's
problem, computed in the run's reward pool; errors are counted and noted, never raised."""
from __future__ import annotations

import os

from umbra.rewards.pool import RewardPool

NOTE_CHARS = 990  # a job note holds at most 1000 characters (umbra.telemetry.wire)
MAX_NOTES = 20  # distinct errors noted per run; later ones are only counted
MAX_EXTRA_METRICS = 16  # distinct reward/extra/<key> metrics per run (a batch holds at most 10,000 points)
TRAIN_ERRORS = "reward/errors"  # errors of the training batches' rewards
VAL_ERRORS = "val/reward_errors"  # errors of the validation batches' rewards, apart (umbra.job.validation)


class Scorer:
    """The run's reward path (training and validation batches alike).

    ``reward``: the RunConfig's ``reward`` (a built-in name or ``file.py:function``, veRL's
    ``compute_score(data_source, solution_str, ground_truth, extra_info)``);
    ``timeout_s``: per call. Notes on errors (first traceback lines, once per distinct
    error and counter: training's and validation's apart) wait in :meth:`take_notes` for the next
    metric batch's job notes, with one when the reward printed past the pool's output cap.
    """

    def __init__(self, reward: str = "math", timeout_s: float = 10.0, workers: int | None = None):
        self.reward = reward
        self.pool = RewardPool(reward, workers or min(4, os.cpu_count() or 1), timeout_s)
        self._seen: set[tuple[str, str]] = set()  # (counter, error_key) noted
        self._notes: list[str] = []
        self._output_noted = False
        self._extra_keys: set[str] = set()  # the first MAX_EXTRA_METRICS keys seen; later ones are dropped

    def score_texts(self, texts: list[str], problems: list, errors_metric: str = TRAIN_ERRORS
                    ) -> tuple[list[float], dict[str, float]]:
        """Rewards of ``texts[i]`` against ``problems[i]``, and the errors (counted as
        ``errors_metric``: ``reward/errors``, or ``val/reward_errors`` for a validation batch) and the
        ``reward/extra/<key>`` means (over the responses whose result held the key)."""
        calls = [(p.data_source, t, p.answer, dict(p.extra_info)) for t, p in zip(texts, problems)]
        outcomes = self.pool.score(calls)
        extras: dict[str, list[float]] = {}
        errors = 0
        for o in outcomes:
            for k, v in o.extras.items():
                if k not in self._extra_keys and len(self._extra_keys) < MAX_EXTRA_METRICS:
                    self._extra_keys.add(k)
                if k in self._extra_keys:
                    extras.setdefault(k, []).append(v)
            if o.error is not None:
                errors += 1
                if (errors_metric, o.error_key) not in self._seen and len(self._seen) < MAX_NOTES:
                    self._seen.add((errors_metric, o.error_key))
                    text = o.error.replace("\x00", "\\x00")  # NUL in a note: the batch would be refused
                    what = "validation reward error" if errors_metric == VAL_ERRORS else "reward error"
                    self._notes.append(f"{what}, scored 0 (more of this kind are only counted in "
                                       f"{errors_metric}): {text}"[:NOTE_CHARS])
        metrics = {errors_metric: float(errors),
                   **{f"reward/extra/{k}": sum(v) / len(v) for k, v in sorted(extras.items())}}
        return [o.score for o in outcomes], metrics

    def score_batch(self, batch, problems: list, tokenizer, errors_metric: str = TRAIN_ERRORS) -> dict[str, float]:
        """Set ``reward`` on every sample of ``batch`` (a RolloutBatch) against
        ``problems[group_id]``; returns ``reward/mean``, ``reward/accuracy``, the errors as
        ``errors_metric`` and ``reward/extra/*``."""
        texts = tokenizer.batch_decode([s.response_token_ids for s in batch.samples], skip_special_tokens=True)
        rewards, metrics = self.score_texts(texts, [problems[s.group_id] for s in batch.samples], errors_metric)
        for s, r in zip(batch.samples, rewards):
            s.reward = r
        return {"reward/mean": sum(rewards) / len(rewards),
                "reward/accuracy": sum(r > 0.5 for r in rewards) / len(rewards), **metrics}

    def take_notes(self) -> list[str]:
        """The error notes gathered since the last call (for the job notes)."""
        output = self.pool.output
        if output.dropped and not self._output_noted:
            self._output_noted = True
            self._notes.append(f"the reward printed more than {output.cap // 1024} KiB: the job log shows the first "
                               f"{output.cap // 1024} KiB of its output, the rest ({output.dropped:,} bytes so far) "
                               "is dropped")
        notes, self._notes = self._notes, []
        return notes

    def close(self) -> None:
        self.pool.close()
