"""An example custom reward for the generated 'countdown' data set, in veRL's signature
(``compute_score(data_source, solution_str, ground_truth, extra_info)``), after TinyZero's
countdown reward: 0.1 for a well-formed ``<answer>equation</answer>`` that uses each given
number exactly once, 1.0 when it also equals the target; 0 otherwise.

Run it with ``reward: countdown.py:compute_score`` and ``dataset: countdown`` once the
operator lists this folder in UMBRA_REWARD_DIRS. Returns a dict: ``score`` plus ``format``
and ``correct`` (0/1), charted as reward/extra/format and reward/extra/correct.
"""
from __future__ import annotations

import ast
import operator
import re

FORMAT_SCORE = 0.1
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node, used: list[int]) -> float:
    """The value of an arithmetic expression of integers and + - * / (nothing else runs)."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, used)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left, used), _evaluate(node.right, used))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand, used)
    raise ValueError("not an equation of integers and + - * /")


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """veRL's reward signature; ``extra_info['numbers']`` are the numbers to use."""
    found = _ANSWER.findall(solution_str)
    if not found:
        return {"score": 0.0, "format": 0.0, "correct": 0.0}
    equation = found[-1].split("=")[0].strip()
    used: list[int] = []
    try:
        value = _evaluate(ast.parse(equation, mode="eval"), used)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return {"score": 0.0, "format": 0.0, "correct": 0.0}
    numbers = list((extra_info or {}).get("numbers", []))
    if sorted(used) != sorted(numbers):
        return {"score": 0.0, "format": 0.0, "correct": 0.0}
    correct = abs(value - float(ground_truth)) < 1e-6
    return {"score": 1.0 if correct else FORMAT_SCORE, "format": 1.0, "correct": float(correct)}
