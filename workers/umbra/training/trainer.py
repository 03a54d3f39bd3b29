"""The GRPO trainer: a torch + transformers model, one rank of the trainer group.

Imports neither Ray nor vLLM: the group (``umbra.training.group``) runs one instance per
Ray actor, ``umbra bench train`` runs it in plain processes. With ``world > 1`` (or on
CUDA) the policy and the reference model are FSDP2-sharded over the ranks
(``umbra.training.shards``) and AdamW steps on the shards.
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import time
from pathlib import Path

import torch

from umbra.telemetry import probe
from umbra.training import hf_folder, shards, weight_sync
from umbra.training.batch import pack, token_logprobs
from umbra.training.grpo import grpo_loss, masked_mean
from umbra.training.loss_agg import agg_units

# the run config's default (umbra.config): on CPU ranks 1,024 ran SmolLM2-135M 1.28x faster than
# 4,096 at 40% of the peak memory (`umbra bench train`, README)
DEFAULT_MICRO_TOKENS = 1024


class GRPOTrainer:
    """Holds the policy (float32 master weights), a frozen reference copy for the KL term and
    AdamW; one rank of ``world``.

    ``policy_version`` counts optimizer updates; version 0 is the initial model. Every rank
    must call :meth:`train_step`, :meth:`save_weights`, :meth:`save_checkpoint`,
    :meth:`load_checkpoint` and :meth:`prompt_logprobs` together (they run collectives).
    """

    def __init__(self, model_path: str, learning_rate: float, kl_coef: float, clip_eps: float,
                 minibatches: int, seed: int, *, rank: int = 0, world: int = 1, address: str | None = None,
                 device: str = "cpu", micro_tokens: int = DEFAULT_MICRO_TOKENS, gradient_checkpointing: bool = False,
                 threads: int | None = None, pad_id: int | None = None, max_grad_norm: float = 1.0,
                 bf16: bool = True, temperature: float = 1.0, loss_agg_mode: str = "token-mean",
                 horizon: int | None = None):
        from transformers import AutoModelForCausalLM

        torch.manual_seed(seed)
        # Ray pins OMP threads to the actor's num_cpus; the trainer runs while the rollout
        # instances idle (synchronous RL), so its ranks share every core of the node.
        torch.set_num_threads(threads or max(1, (os.cpu_count() or 1) // world))
        self.rank, self.world, self.device = rank, world, device
        self.sharded = world > 1 or device.startswith("cuda")
        if self.sharded:
            if device.startswith("cuda"):
                torch.cuda.set_device(device)
            shards.init_group(rank, world, address or "127.0.0.1:29511", device)
        if rank == 0:
            weight_sync.remove_stale_shared_files()
        self.model = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.float32)
        if gradient_checkpointing:
            self.model.config.use_cache = False
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.model.train()
        if pad_id is None:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model_path)
            pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        self.pad_id = pad_id
        self.ref = None
        if kl_coef > 0:
            self.ref = copy.deepcopy(self.model).eval()
            self.ref.requires_grad_(False)
        if self.sharded:
            for m in (self.model, self.ref):
                if m is not None:
                    m.to(device)
                    shards.shard(m, device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=learning_rate, weight_decay=0.0)
        self.kl_coef, self.clip_eps, self.minibatches = kl_coef, clip_eps, minibatches
        self.micro_tokens, self.max_grad_norm, self.bf16 = micro_tokens, max_grad_norm, bf16
        # log-probs at the sampling temperature; loss aggregation (umbra.training.loss_agg)
        self.temperature, self.loss_agg_mode, self.horizon = temperature, loss_agg_mode, horizon
        self.model_path = model_path
        self.policy_version = 0
        self._weights_path: str | None = None
        probe.own_sample()  # starts the CPU measurement of this rank's processes

    def system_sample(self) -> dict:
        """This rank's process (and any it started) and node: CPU, memory, GPU (``umbra.telemetry.probe``)."""
        return probe.own_sample()

    def node(self) -> dict:
        """Where this rank runs: ``rank``, ``host``, ``pid`` (the group names a dead rank by it)."""
        import socket

        return {"rank": self.rank, "host": socket.gethostname(), "pid": os.getpid()}

    def _autocast(self):
        if self.device.startswith("cuda") or not self.bf16:  # on CUDA FSDP2's MixedPrecisionPolicy casts
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=torch.bfloat16)  # ~1.7x faster on AVX512-BF16 CPUs; fp32 master weights

    def _pack(self, idx: list[int], prompts, responses):
        b = pack([prompts[i] for i in idx], [responses[i] for i in idx], self.pad_id)
        if self.device != "cpu":
            b = type(b)(b.input_ids.to(self.device), b.attention_mask.to(self.device),
                        b.response_mask.to(self.device))
        return b

    def plan(self, lengths: list[int]) -> list[list[list[int]]]:
        """This rank's micro-batches (sequence indices) for each minibatch: the minibatch's
        sequences spread over the ranks by tokens, cut by ``micro_tokens``; every rank gets
        the same number of micro-batches per minibatch (empty ones are padding)."""
        n = len(lengths)
        per_mini = max(1, -(-n // self.minibatches))
        plan = []
        for s in range(0, n, per_mini):
            mini = list(range(s, min(n, s + per_mini)))
            mine = [mini[j] for j in shards.spread([lengths[i] for i in mini], self.world)[self.rank]]
            micro = shards.micro_batches(mine, lengths, self.micro_tokens)
            count = shards.all_max(len(micro), self.world, self.device)
            micro = shards.split_evenly(micro, count)
            plan.append(micro + [[] for _ in range(count - len(micro))])
        return plan

    def train_step(self, prompts: list[list[int]], responses: list[list[int]],
                   advantages: list[float]) -> dict[str, float]:
        """One GRPO update over the B sequences of the whole batch (every rank gets all of
        them and trains on its share); ``minibatches`` optimizer steps.

        Args: prompt and response token ids per sequence (``[B][*]``) and one
            advantage per sequence (``[B]``).
        Returns: ``train/loss``, ``train/kl``, ``train/entropy``, ``train/clip_frac``,
            ``train/grad_norm``, ``train/time_s``, ``train/tokens`` and the new ``policy_version``.
        """
        t0 = time.time()
        with self._autocast():
            out = self._train_step(prompts, responses, advantages)
        out["train/time_s"] = time.time() - t0
        return out

    def _train_step(self, prompts, responses, advantages) -> dict[str, float]:
        lengths = [len(p) + len(r) for p, r in zip(prompts, responses)]
        plan = self.plan(lengths)
        filler = [0]  # an empty micro-batch runs sequence 0 with weight 0 (FSDP needs the passes)
        packed = {tuple(m or filler): self._pack(m or filler, prompts, responses) for mini in plan for m in mini}
        with torch.no_grad():  # rollout-time (old) and reference log-probs, fixed for this step
            # With one optimizer step the policy is still the rollout policy when each
            # micro-batch runs, so old = detached current log-probs: no extra forward.
            old = ({k: token_logprobs(self.model, b, False, self.temperature)[0] for k, b in packed.items()}
                   if self.minibatches > 1 else None)
            ref = ({k: token_logprobs(self.ref, b, False, self.temperature)[0] for k, b in packed.items()}
                   if self.ref is not None else None)
        adv = torch.tensor(advantages, dtype=torch.float32, device=self.device)
        sums = torch.zeros(5, dtype=torch.float64)  # loss, kl, clip_frac, entropy (weighted); tokens
        grad_norm = 0.0
        for mini in plan:
            local = sum(float(packed[tuple(m)].response_mask.sum()) for m in mini if m)
            local_units = sum(agg_units(packed[tuple(m)].response_mask, self.loss_agg_mode) for m in mini if m)
            # the minibatch's units over all ranks (tokens or sequences, see loss_agg)
            units = shards.all_sum([local_units], self.world, self.device)[0]
            self.opt.zero_grad(set_to_none=True)
            for m in mini:
                key = tuple(m or filler)
                b = packed[key]
                logp, ent = token_logprobs(self.model, b, temperature=self.temperature)
                old_logp = old[key] if old is not None else logp.detach()
                loss, st = grpo_loss(logp, old_logp, ref[key] if ref else None, adv[list(key)],
                                     b.response_mask, self.clip_eps, self.kl_coef, self.loss_agg_mode, self.horizon)
                weight = agg_units(b.response_mask, self.loss_agg_mode) / max(units, 1.0) if m else 0.0
                # FSDP averages gradients over ranks; x world makes it the sum of token shares
                (loss * (weight * self.world)).backward()
                sums += torch.tensor([float(loss.detach()) * weight, st["kl"] * weight, st["clip_frac"] * weight,
                                      float(masked_mean(ent, b.response_mask)) * weight, 0.0], dtype=torch.float64)
            sums[4] += local
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
            grad_norm += float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
            self.opt.step()
        total = shards.all_sum(sums.tolist(), self.world, self.device)
        self.policy_version += 1
        steps = len(plan)
        out = {f"train/{k}": v / steps for k, v in zip(("loss", "kl", "clip_frac", "entropy"), total)}
        out.update({"train/grad_norm": grad_norm / steps, "train/tokens": total[4],  # mean over the steps
                    "policy_version": float(self.policy_version)})
        return out

    def full_state(self) -> dict:
        """The policy's full state dict on the CPU (all ranks call; rank 0 gets it, the
        others an empty dict) — see ``weight_sync.full_state``."""
        return weight_sync.full_state(self.model, self.sharded)

    def weights_blob(self) -> bytes:
        """The policy's weights as safetensors bytes (the weight sync's path to other nodes).
        Sharded: the file :meth:`save_weights` wrote last (rank 0 only)."""
        if self.sharded:
            return Path(self._weights_path).read_bytes()
        return weight_sync.to_bytes(self.full_state())

    def save_weights(self) -> str | None:
        """The policy's weights as a shared-memory safetensors file; returns its path on rank
        0, None on the others (the weight sync's path to instances on this node)."""
        state = self.full_state()
        if self.rank != 0:
            return None
        self._weights_path = weight_sync.save_shared_file(state, self.policy_version)
        return self._weights_path

    def weights_bytes(self) -> int:
        """Size of the weights file :meth:`save_weights` wrote last (0 on other ranks)."""
        return os.path.getsize(self._weights_path) if self._weights_path else 0

    def save_checkpoint(self, folder: str) -> float:
        """Write the policy, optimizer and RNG state into ``folder`` (which must exist and be
        reachable from every rank's node): ``trainer.pt`` with one unsharded rank,
        otherwise a ``torch.distributed.checkpoint`` folder ``trainer-dcp`` plus
        ``trainer.json`` (the rank count) and one RNG file per rank; rank 0 also writes the
        policy as a Hugging Face model folder ``hf`` (``umbra.training.hf_folder``, the
        export). Returns seconds taken."""
        t0 = time.time()
        state = self.full_state()  # a collective when sharded: every rank calls
        if self.rank == 0:
            hf_folder.save_hf_folder(self.model, state, self.model_path, Path(folder) / hf_folder.HF_FOLDER)
        del state
        if not self.sharded:
            tmp = Path(folder) / "trainer.pt.tmp"
            torch.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                        "policy_version": self.policy_version, "torch_rng": torch.get_rng_state()}, tmp)
            tmp.rename(Path(folder) / "trainer.pt")
            return time.time() - t0
        import torch.distributed.checkpoint as dcp

        dcp.save(self._dcp_state(), checkpoint_id=str(Path(folder) / "trainer-dcp"))
        torch.save({"torch_rng": torch.get_rng_state()}, Path(folder) / f"rng-rank{self.rank}.pt")
        if self.rank == 0:
            (Path(folder) / "trainer.json").write_text(json.dumps(
                {"trainer_ranks": self.world, "policy_version": self.policy_version}))
        torch.distributed.barrier()
        return time.time() - t0

    def _dcp_state(self) -> dict:
        from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

        return {"model": get_model_state_dict(self.model),
                "optim": get_optimizer_state_dict(self.model, self.opt)}

    def load_checkpoint(self, folder: str) -> int:
        """Restore what :meth:`save_checkpoint` wrote; returns the restored policy version.

        Raises FileNotFoundError when ``folder`` holds no trainer checkpoint and ValueError
        when it was written by another number of ranks (see :func:`checkpoint_ranks`).
        """
        written = checkpoint_ranks(folder)
        if written != self.world or (self.world == 1 and self.sharded != (Path(folder) / "trainer.json").exists()):
            raise ValueError(f"the checkpoint in {folder} was written by {written} trainer rank(s) "
                             f"({'sharded' if written > 1 else 'one file'}); this run has trainer_ranks={self.world}: "
                             f"resume with trainer_ranks={written}")
        if not self.sharded:
            state = torch.load(Path(folder) / "trainer.pt", map_location="cpu", weights_only=True)
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["optimizer"])
            torch.set_rng_state(state["torch_rng"])
            self.policy_version = int(state["policy_version"])
            return self.policy_version
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_model_state_dict, set_optimizer_state_dict

        state = self._dcp_state()
        dcp.load(state, checkpoint_id=str(Path(folder) / "trainer-dcp"))
        set_model_state_dict(self.model, state["model"])
        set_optimizer_state_dict(self.model, self.opt, state["optim"])
        rng = torch.load(Path(folder) / f"rng-rank{self.rank}.pt", weights_only=True)
        torch.set_rng_state(rng["torch_rng"])
        self.policy_version = int(json.loads((Path(folder) / "trainer.json").read_text())["policy_version"])
        return self.policy_version

    def release_weights(self) -> None:
        """Remove this trainer's shared-memory weight files (tmpfs holds them in RAM)."""
        weight_sync.release_shared_files()

    def close(self) -> None:
        """Leave the process group (best effort)."""
        if self.sharded and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()

    @torch.no_grad()
    def prompt_logprobs(self, token_ids: list[int]) -> list[float]:
        """Log-prob of each token after the first (``[len - 1]``) under the policy."""
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
        logits = self.model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, -1)
        return [float(logp[t, ids[0, t + 1]]) for t in range(len(token_ids) - 1)]


def checkpoint_ranks(folder: str) -> int:
    """How many trainer ranks wrote the checkpoint in ``folder`` (``trainer.json``, or 1 for
    a ``trainer.pt``). Raises FileNotFoundError when there is none."""
    meta = Path(folder) / "trainer.json"
    if meta.exists():
        return int(json.loads(meta.read_text())["trainer_ranks"])
    if (Path(folder) / "trainer.pt").exists():
        return 1
    raise FileNotFoundError(f"no trainer checkpoint in {folder}")
