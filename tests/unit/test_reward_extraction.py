"""The built-in rewards (umbra.rewards): math's final-answer extraction, veRL's strict GSM8K
rule, exact match, and the example countdown reward."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umbra.data import countdown
from umbra.rewards.custom import load_function
from umbra.rewards.exact import exact_reward
from umbra.rewards.extract import final_answer
from umbra.rewards.gsm8k_strict import gsm8k_strict_reward
from umbra.rewards.math_answer import math_reward

ROOT = Path(__file__).resolve().parents[2]
GSM8K = ROOT.parent / "shared" / "data" / "gsm8k" / "test.jsonl"


@pytest.mark.parametrize("response", [
    "So she has 18 left.\n#### 18",
    "#### $18", "#### 18.00", "#### **18**", "#### 18 dollars", "####18", "#### 18.",
    "First guess\n#### 25\nWait, I forgot the 7 eggs she ate.\n#### 18",  # a revised answer: the last wins
    "#### 18\nThat is 3 boxes of 6 eggs.",  # a later line with numbers no longer matters
    "#### 18\n#### done",  # a later marker without a number revises nothing
    "####\n18",  # the expression on the line after the marker
    "We get \\boxed{18}.", "\\boxed{10} is wrong, so \\boxed{18}",
    "So the answer is 18.", "The answer is: $18", "Answer: 18",
])
def test_math_scores_a_final_answer_of_18(response):
    assert math_reward(response, "18") == 1.0


@pytest.mark.parametrize("response", [
    "She has 18 eggs and sells them",  # cut off at max_tokens: no final answer, even if the last number fits
    "16 - 3 - 4 = 9, 9 * 2 = 18",
    "#### 18 or 25", "#### 18, 25", "\\boxed{18 or 25}", "The answer is 18 or 25",
    "#### 25", "#### ", "\\boxed{18", "",
])
def test_math_scores_0_without_one_final_answer_of_18(response):
    assert math_reward(response, "18") == 0.0


def test_math_keeps_thousands_and_expressions():
    assert math_reward("#### 70,000", "70000") == 1.0
    assert math_reward("\\boxed{\\frac{1}{2}}", "0.5") == 1.0
    assert final_answer("#### 70,000") == "70,000"


NO_DIGITS = st.text(alphabet=st.characters(blacklist_categories=("Nd", "No", "Cs")), max_size=20)
MARKERS = st.sampled_from(["####", "#### ", "\\boxed{", "}", "The answer is ", "Answer:", " or ", "\n", "$", "**"])


@settings(max_examples=150, deadline=None)
@given(n=st.integers(-10**6, 10**6), tail=st.lists(st.one_of(NO_DIGITS, MARKERS), max_size=8).map("".join))
def test_text_without_digits_after_a_correct_marker_line_never_changes_the_score(n, tail):
    assert not any(c.isdigit() for c in tail)
    response = f"Some work: 3 * 4 = 12.\n#### {n}\n"
    assert math_reward(response + tail, str(n)) == math_reward(response, str(n)) == 1.0


def test_gsm8k_reference_solutions_score_1_when_present():
    if not GSM8K.exists():
        pytest.skip("GSM8K test set not present")
    rows = [json.loads(line) for line in GSM8K.read_text().splitlines() if line.strip()]
    wrong = [r["answer"][-80:] for r in rows if math_reward(r["answer"], r["answer"].rsplit("####", 1)[1]
                                                            .strip().replace(",", "")) != 1.0]
    assert len(rows) > 1000 and not wrong, wrong[:5]


@pytest.mark.parametrize("response,gold,score", [
    ("so #### 18", "18", 1.0), ("#### 1,234", "1234", 1.0), ("#### $18", "18", 0.0),  # veRL: '$' right after '#### ' fails
    ("####18", "18", 0.0), ("#### 18.00", "18", 0.0), ("#### -3", "-3", 1.0),
    ("#### 25\n#### 18", "18", 1.0), ("#### 18" + " pad" * 100, "18", 0.0),  # veRL reads the last 300 characters only
    ("\\boxed{18}", "18", 0.0), ("The answer is 18", "18", 0.0),
])
def test_gsm8k_strict_is_verls_strict_rule(response, gold, score):
    assert gsm8k_strict_reward(response, gold) == score


@pytest.mark.parametrize("response,gold,score", [
    ("Paris", "paris", 1.0), ("  The   Eiffel Tower. ", "the eiffel tower", 1.0), ("#### **Paris**", "Paris", 1.0),
    ("\\boxed{blue}", "Blue", 1.0), ("Paris, France", "Paris", 0.0), ("The answer is London", "Paris", 0.0),
])
def test_exact_is_a_normalised_string_match(response, gold, score):
    assert exact_reward(response, gold) == score


COUNTDOWN = load_function(str(ROOT / "examples" / "rewards" / "countdown.py") + ":compute_score")


@pytest.mark.parametrize("response,score", [
    ("3 * 7 = 21, 21 + 2 = 23 <answer>3 * 7 + 2</answer>", 1.0),
    ("<answer>(3 * 7) + 2 = 23</answer>", 1.0),
    ("<answer>3 + 7 + 2</answer>", 0.1),  # well formed, wrong value
    ("<answer>3 * 7 + 2 + 2</answer>", 0.0),  # a number used twice
    ("<answer>__import__('os')</answer>", 0.0), ("<answer>3 * 7 + </answer>", 0.0), ("23", 0.0),
])
def test_countdown_reward_format_and_correctness(response, score):
    out = COUNTDOWN("countdown", response, "23", {"numbers": [3, 7, 2], "target": 23})
    assert out["score"] == score and out["format"] == float(score > 0) and out["correct"] == float(score == 1.0)


def test_countdown_targets_are_reachable_and_fixed_by_the_seed():
    problems = countdown.generate(n=50, seed=4)
    assert problems == countdown.generate(n=50, seed=4) and problems != countdown.generate(n=50, seed=5)
    assert all(p.data_source == "countdown" and str(p.extra_info["target"]) == p.answer
               and str(p.extra_info["numbers"]) in p.question for p in problems)
