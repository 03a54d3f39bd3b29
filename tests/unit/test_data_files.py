"""Data set files read with Hugging Face datasets: veRL's, TRL's and GSM8K's row shapes in
JSONL, Parquet and save_to_disk folders; a file of no shape and a bad row are clear errors."""
import json

import pytest
from pydantic import ValidationError

from umbra.config import RunConfig
from umbra.data.files import load_file
from umbra.data.gsm8k import DatasetError
from umbra.data.holdout import hold_out, train_and_val
from umbra.data.problem import Problem
from umbra.data.prompts import INSTRUCTION, encode_prompts
from umbra.data.registry import check_dataset

VERL_ROWS = [{"data_source": "openai/gsm8k",
              "prompt": [{"role": "user", "content": f"What is {i} + 1? Output the answer after ####."}],
              "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
              "extra_info": {"split": "train", "index": i}} for i in range(4)]
TRL_ROWS = [{"prompt": f"What is {i} + 2?", "solution": str(i + 2), "level": i} for i in range(4)]
TRL_CHAT_ROWS = [{"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"{i}+3?"}],
                  "ground_truth": str(i + 3)} for i in range(4)]
GSM8K_ROWS = [{"question": f"How many is {i} + 4?", "answer": f"{i} + 4 = {i + 4}\n#### {i + 4}"} for i in range(4)]


def _write(tmp_path, rows, fmt: str) -> str:
    """``rows`` as a JSONL file, a Parquet file (pyarrow) or a save_to_disk folder."""
    if fmt == "jsonl":
        path = tmp_path / "d.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        import datasets

        path = tmp_path / "saved"
        datasets.Dataset.from_list(rows).save_to_disk(str(path))
    return str(path)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "save_to_disk"])
def test_verl_rows_load_with_messages_ground_truth_and_extra_info(tmp_path, fmt):
    loaded = load_file(_write(tmp_path, VERL_ROWS, fmt))
    assert loaded.shape == "verl" and len(loaded.problems) == 4
    p = loaded.problems[2]
    assert p.answer == "3" and p.data_source == "openai/gsm8k"
    assert p.messages == ({"role": "user", "content": "What is 2 + 1? Output the answer after ####."},)
    assert p.extra_info == {"split": "train", "index": 2}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "save_to_disk"])
def test_trl_rows_pass_every_other_column_to_the_reward(tmp_path, fmt):
    loaded = load_file(_write(tmp_path, TRL_ROWS, fmt))
    assert loaded.shape == "trl"
    p = loaded.problems[1]
    assert (p.question, p.messages, p.answer) == ("What is 1 + 2?", (), "3")
    assert p.extra_info == {"solution": "3", "level": 1}
    chat = load_file(_write(tmp_path, TRL_CHAT_ROWS, fmt))
    assert chat.shape == "trl" and chat.problems[0].messages[0] == {"role": "system", "content": "Be brief."}
    assert chat.problems[0].answer == "3" and chat.problems[0].question == "0+3?"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "save_to_disk"])
def test_gsm8k_rows_load_as_before(tmp_path, fmt):
    loaded = load_file(_write(tmp_path, GSM8K_ROWS, fmt))
    assert loaded.shape == "gsm8k"
    assert loaded.problems[3] == Problem("How many is 3 + 4?", "7")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_file_of_no_known_shape_names_the_columns_found_and_expected(tmp_path, fmt):
    path = _write(tmp_path, [{"text": "hi", "label": 1}], fmt)
    with pytest.raises(DatasetError) as err:
        load_file(path)
    msg = str(err.value)
    assert "columns found: label, text" in msg
    assert "verl: prompt, data_source, reward_model" in msg and "gsm8k: question, answer" in msg
    with pytest.raises(ValidationError, match="columns found: label, text"):  # the run is refused at submit
        RunConfig(dataset=path)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_bad_row_is_reported_with_its_number(tmp_path, fmt):
    rows = [dict(r) for r in VERL_ROWS]
    rows[2] = {**rows[2], "reward_model": {"style": "rule", "ground_truth": None}}
    with pytest.raises(DatasetError, match=r"row 3: reward_model must be a mapping with a 'ground_truth'"):
        load_file(_write(tmp_path, rows, fmt))
    gsm = [dict(r) for r in GSM8K_ROWS]
    gsm[1]["answer"] = "no marker"
    with pytest.raises(ValueError, match=r"row 2: answer has no '#### <final answer>' line"):
        check_dataset(_write(tmp_path, gsm, fmt))


def test_a_veRL_file_without_data_source_and_an_unparsable_line_are_named(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "data_source"} for r in VERL_ROWS]
    with pytest.raises(DatasetError, match="lacks column\\(s\\) data_source"):
        load_file(_write(tmp_path, rows, "jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(GSM8K_ROWS[0]) + "\n" + json.dumps(GSM8K_ROWS[1]) + "\n{\"question\": \n")
    with pytest.raises(DatasetError, match="line 3: not JSON"):
        load_file(bad)
    with pytest.raises(DatasetError, match="unknown file type '.csv'"):
        (tmp_path / "d.csv").write_text("a,b\n")
        load_file(tmp_path / "d.csv")
    with pytest.raises(DatasetError, match="not a folder written by datasets' save_to_disk"):
        (tmp_path / "empty").mkdir()
        load_file(tmp_path / "empty")


def test_val_fraction_split_is_fixed_by_the_seed():
    problems = [Problem(f"q{i}", str(i)) for i in range(100)]
    train, val = hold_out(problems, 0.1, seed=5)
    assert len(val) == 10 and len(train) == 90
    assert {p.question for p in train} | {p.question for p in val} == {p.question for p in problems}
    assert not {p.question for p in train} & {p.question for p in val}
    assert hold_out(problems, 0.1, seed=5) == (train, val)  # the same seed holds out the same rows
    assert hold_out(problems, 0.1, seed=6)[1] != val
    assert hold_out(problems[:2], 0.01, seed=0)[1] and hold_out(problems[:2], 0.5, seed=0)[0]  # 1 each side
    assert hold_out(problems, 0.0, seed=5) == (problems, [])
    a_train, a_val = train_and_val("arith", 3, val_fraction=0.25)
    assert len(a_val) == 128 and train_and_val("arith", 3, val_fraction=0.25) == (a_train, a_val)


def test_validation_fields_are_checked_together(tmp_path):
    path = _write(tmp_path, VERL_ROWS, "parquet")
    cfg = RunConfig(dataset=path, val_dataset=path, val_every=2, val_samples=4, val_temperature=0.0)
    assert cfg.val_dataset == path
    with pytest.raises(ValidationError, match="val_dataset or val_fraction, not both"):
        RunConfig(val_dataset=path, val_fraction=0.1)
    with pytest.raises(ValidationError, match="validation needs a validation set"):
        RunConfig(val_every=1)
    with pytest.raises(ValidationError, match="unknown dataset"):
        RunConfig(val_dataset=str(tmp_path / "missing.parquet"), val_every=1)
    assert RunConfig(val_fraction=0.2, val_every=1).val_fraction == 0.2
    one = _write(tmp_path, GSM8K_ROWS[:1], "jsonl")  # nothing would be left to train on: refused now, not at run start
    with pytest.raises(ValidationError, match="val_fraction needs at least 2 problems in the data set, it has 1"):
        RunConfig(dataset=one, val_fraction=0.5, val_every=1)
    assert RunConfig(dataset=_write(tmp_path, GSM8K_ROWS[:2], "parquet"), val_fraction=0.5, val_every=1).val_fraction


def test_a_parquet_file_that_decompresses_past_the_limit_is_refused_unread(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from umbra.data import files

    monkeypatch.setattr(files, "MAX_DECODED_BYTES", 2**20)
    monkeypatch.setattr(files, "rows_to_problems", lambda *a: pytest.fail("the rows were read"))
    repeated = tmp_path / "repeated.parquet"  # 2,000 rows of one 10 KB question: a few KB of zstd, 20 MB decoded
    pq.write_table(pa.Table.from_pylist([{"question": "x" * 10_000, "answer": "#### 1"}] * 2000), repeated,
                   compression="zstd")  # dictionary-encoded: the footer counts the question once
    one_large = tmp_path / "large.parquet"  # one 4 MB row: the footer's uncompressed size says so
    pq.write_table(pa.Table.from_pylist([{"question": "y" * 4_000_000, "answer": "#### 1"}]), one_large,
                   compression="zstd", use_dictionary=False)
    for path in (repeated, one_large):
        assert path.stat().st_size < 50_000
        with pytest.raises(DatasetError, match=r"more than 1 MiB once decompressed"):
            load_file(path)
    zeros = tmp_path / "zeros.parquet"  # one row with a list of 5 M zeros: run-length encoded, a few KB
    pq.write_table(pa.table({"question": ["q"], "answer": ["#### 1"],
                             "extra": pa.array([[0] * 5_000_000], type=pa.list_(pa.int8()))}), zeros,
                   compression="zstd")
    assert zeros.stat().st_size < 50_000
    with pytest.raises(DatasetError, match=r"5,000,002 values \(list items count one each\); at most 4,000,000"):
        load_file(zeros)


class _ChatTokenizer:
    """Records the chat it is asked to format (pure logic: which messages reach the template)."""

    chat_template = "{{ messages }}"

    def __init__(self):
        self.chats = []

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        self.chats.append(messages)
        return [len(messages)]


def test_chat_messages_go_through_the_template_and_plain_prompts_keep_the_instruction():
    tok = _ChatTokenizer()
    chat = (({"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}))
    assert encode_prompts(tok, [Problem("1+1?", "2", messages=chat), Problem("2+2?", "4")]) == [[2], [2]]
    assert tok.chats[0] == list(chat)
    assert tok.chats[1] == [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": "2+2?"}]


def test_gsm8k_test_set_as_verl_parquet_loads_with_the_same_answers(tmp_path):
    from pathlib import Path

    from umbra.data.gsm8k import load_jsonl
    from umbra.data.verl_parquet import VERL_INSTRUCTION, write_verl_parquet

    source = Path(__file__).resolve().parents[3] / "shared" / "data" / "gsm8k" / "test.jsonl"
    if not source.exists():
        pytest.skip("GSM8K test set not present")
    problems = load_jsonl(source)
    loaded = load_file(write_verl_parquet(problems, tmp_path / "gsm8k.parquet"))
    assert loaded.shape == "verl" and len(loaded.problems) == len(problems)
    assert [p.answer for p in loaded.problems] == [p.answer for p in problems]
    first = loaded.problems[0]
    assert first.data_source == "openai/gsm8k" and first.extra_info == {"split": "test", "index": 0}
    assert first.messages[0]["content"] == f"{problems[0].question} {VERL_INSTRUCTION}"
