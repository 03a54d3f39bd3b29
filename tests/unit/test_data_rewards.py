import json

import pytest

from umbra.data import arith
from umbra.data.gsm8k import DatasetError, load_jsonl, parse_lines
from umbra.data.registry import check_dataset, load_problems
from umbra.rewards.math_answer import math_reward


def test_gsm8k_lines_parse_final_answer():
    line = json.dumps({"question": "How many?", "answer": "3 + 4 = 7\n#### 1,234"})
    (p,) = parse_lines([line])
    assert p.question == "How many?" and p.answer == "1234"


@pytest.mark.parametrize("line,msg", [
    ("not json", "not JSON"),
    (json.dumps({"question": "q"}), "needs string fields"),
    (json.dumps({"question": "q", "answer": "7"}), "####"),
])
def test_bad_lines_name_the_problem(line, msg):
    with pytest.raises(DatasetError, match=msg):
        parse_lines([line])


def test_files_and_names(tmp_path):
    f = tmp_path / "d.jsonl"
    f.write_text(json.dumps({"question": "q", "answer": "#### 5"}) + "\n\n")
    assert load_jsonl(f)[0].answer == "5"
    check_dataset(str(f))
    with pytest.raises(ValueError, match="unknown dataset"):
        check_dataset(str(tmp_path / "missing.jsonl"))
    assert load_problems("arith", seed=3) == arith.generate(seed=3)


def test_arith_easy_is_distinct_one_step_problems_with_right_answers():
    import re

    problems = load_problems("arith-easy", seed=3)
    assert problems == arith.generate_easy(seed=3) != arith.generate_easy(seed=4)
    assert len({p.question for p in problems}) == len(problems) == 512  # a held-out share is held out
    for p in problems:
        a, b = map(int, re.findall(r"\d+", p.question))
        assert int(p.answer) == (a + b if "buys" in p.question else a - b) >= 0


def test_shared_gsm8k_file_loads_when_present():
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "shared" / "data" / "gsm8k" / "test.jsonl"
    if not path.exists():
        pytest.skip("GSM8K test set not present")
    problems = load_jsonl(path)
    assert len(problems) > 1000 and all(p.answer for p in problems)


def test_math_reward_uses_final_answer():
    assert math_reward("3 + 4 = 7\n#### 7", "7") == 1.0
    assert math_reward("The answer is 7.00", "7") == 1.0
    assert math_reward("#### 8", "7") == 0.0
    assert math_reward("", "7") == 0.0
