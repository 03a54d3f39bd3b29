"""Custom reward functions named ``file.py:function`` (ours), with veRL's signature
``compute_score(data_source, solution_str, ground_truth, extra_info) -> float | dict``.

Checked without running the file (its syntax and a top-level ``def function``), so a
submission never executes a member's code on the platform; loaded by the reward pool's
workers (``umbra.rewards.pool``). Which folders may hold reward files is the platform's
rule (``UMBRA_REWARD_DIRS``, checked with :func:`outside_dirs`).
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
from pathlib import Path

BUILTIN_REWARDS = ("math", "gsm8k-strict", "exact")
SPEC_HINT = "'math', 'gsm8k-strict', 'exact', or a custom 'file.py:function'"


def split_spec(spec: str) -> tuple[str, str]:
    """``(path, function)`` of ``file.py:function``; raises ValueError otherwise."""
    path, sep, func = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not func.isidentifier():
        raise ValueError(f"unknown reward '{spec[:200]}': use {SPEC_HINT}")
    return path, func


def _is_file(p: Path) -> bool:
    """``p.is_file()``, False for names the file system refuses (too long, NUL)."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def resolve_in_dirs(spec: str, dirs: list[str]) -> str:
    """``spec`` with a relative file path made absolute against the first of ``dirs`` that
    holds it (an absolute one is kept); the result may still lie outside ``dirs``."""
    path, func = split_spec(spec)
    if not os.path.isabs(path):
        for d in dirs:
            if _is_file(Path(d) / path):
                return f"{Path(d) / path}:{func}"
    return spec


def outside_dirs(spec: str, dirs: list[str]) -> str | None:
    """Why custom reward ``spec`` may not be used (its file, symlinks resolved, is not under
    one of ``dirs``), or None."""
    path, _ = split_spec(spec)
    try:
        real = Path(path).resolve()
    except (OSError, ValueError):
        real = None
    if real is not None and os.path.isabs(path) and any(real.is_relative_to(Path(d).resolve()) for d in dirs):
        return None
    where = ", ".join(dirs) if dirs else "none are listed"
    return (f"reward file '{path[:200]}' is not in a reward folder ({where}); "
            "operators list folders in UMBRA_REWARD_DIRS")


def check_reward(spec: str) -> None:
    """A built-in name, or a ``file.py:function`` whose file exists, parses and defines
    ``function`` at top level. Raises ValueError with the reason."""
    if spec in BUILTIN_REWARDS:
        return
    path, func = split_spec(spec)
    p = Path(path)
    if not _is_file(p):
        raise ValueError(f"reward file '{path[:200]}' does not exist")
    try:
        tree = ast.parse(p.read_bytes(), filename=str(p))
    except (SyntaxError, ValueError) as exc:
        raise ValueError(f"reward file '{p.name}' does not parse: {exc}") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if func not in names:
        raise ValueError(f"reward file '{p.name}' has no top-level function '{func}'")


def load_function(spec: str):
    """The callable named by ``file.py:function`` (runs the file). Raises on a missing one."""
    path, func = split_spec(spec)
    # a stable name (hash() differs per process): the same error reads the same in every pool worker
    name = f"umbra_reward_{hashlib.sha256(path.encode()).hexdigest()[:12]}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ImportError(f"cannot load reward file {path}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, func, None)
    if not callable(fn):
        raise AttributeError(f"reward file {path} has no function {func}")
    return fn
