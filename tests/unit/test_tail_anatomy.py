"""`umbra bench tail`: the tail window's split, on hand-built traces."""
import json

import pytest

from umbra.bench.tail_anatomy import anatomy
from umbra.cli import main


def _req(group, chunks, reason="stop"):
    return {"group": group, "finish_s": chunks[-1][2], "finish_reason": reason, "chunks": chunks}


def _trace(n_short=18):
    """``n_short`` requests done by t = 10 on instance 0, and two that end the rollout: one
    parked from 5 to 20 s on instance 1 (clipped), one that started late on instance 0."""
    recs = [_req(0, [[0, 0.0, 2.0 + i * 0.4, 64]]) for i in range(n_short)]
    recs.append(_req(1, [[1, 0.0, 5.0, 64], [1, 20.0, 30.0, 64]], reason="length"))
    recs.append(_req(2, [[0, 12.0, 25.0, 64]]))
    return recs


def test_the_window_splits_into_decoding_and_parked_request_seconds():
    a = anatomy(_trace())
    # 20 requests: the tail is the last 2; it starts at the 18th finish (2.0 + 17 * 0.4 = 8.8 s)
    assert a["tail_requests"] == 2 and a["tail_from_s"] == pytest.approx(8.8)
    assert a["tail_s"] == pytest.approx(30.0 - 8.8)
    assert a["tail_clipped"] == 1 and a["tail_groups"] == 2
    assert a["tail_first_start_s"] == [0.0, 12.0]
    # parked 5 -> 20 s: 11.2 s of it in the window; decoding: 20 -> 30 s and 12 -> 25 s
    assert a["window_parked_request_s"] == pytest.approx(20.0 - 8.8)
    assert a["window_decoding_request_s"] == pytest.approx(10.0 + 13.0)
    assert a["tail_parked_s_mean"] == pytest.approx(15.0 / 2) and a["tail_parked_s_max"] == pytest.approx(15.0)
    assert a["instance_last_finish_s"] == {"0": 25.0, "1": 30.0} and a["instance_end_spread_s"] == pytest.approx(5.0)


def test_a_single_request_has_no_tail():
    with pytest.raises(ValueError):
        anatomy(_trace()[:1])


def test_the_command_prints_every_policy_and_refuses_bad_input(tmp_path, capsys):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"policy": p, **r}) + "\n" for p in ("a", "b") for r in _trace()))
    out = tmp_path / "tail.json"
    assert main(["bench", "tail", "--trace", str(path), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| a | 21.2 |" in table and "| b | 21.2 |" in table
    assert set(json.loads(out.read_text())["policies"]) == {"a", "b"}
    assert main(["bench", "tail", "--trace", str(path), "--policies", "c"]) == 2
    assert "holds no requests of policy c" in capsys.readouterr().err
    assert main(["bench", "tail", "--trace", str(tmp_path / "none.jsonl")]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"policy": "a", "finish_s": -1, "chunks": []}\n')
    assert main(["bench", "tail", "--trace", str(bad)]) == 2
    assert "not a trace record" in capsys.readouterr().err
    assert main(["bench", "tail", "--trace", str(path), "--json", str(tmp_path / "no" / "x.json")]) == 2


def _write(path, recs):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


@pytest.mark.parametrize("record, message", [
    ({"finish_s": 30.0, "chunks": [[0, 20.0, 30.0, 64], [0, 0.0, 10.0, 64]]}, "starts before the request's previous"),
    ({"finish_s": "30.5", "chunks": [[0, 0.0, 30.5, 64]]}, "finish_s: Input should be a valid number"),
    ({"finish_s": 30.0, "chunks": [[0, True, 30.0, 64]]}, "chunks.0.1: Input should be a valid number"),
    ({"finish_s": 30.0, "chunks": [[-3, 0.0, 30.0, 64]]}, "chunks.0.0: Input should be greater than or equal to 0"),
    ({"finish_s": 1e308, "chunks": [[0, 0.0, 1e308, 64]]}, "less than or equal to 1000000000"),
    ({"finish_s": 900.0, "chunks": [[0, 0.0, 30.0, 64]]}, "finishes at 900.0 s but its last chunk ends at 30.0 s"),
])
def test_a_record_that_cannot_be_a_rollout_is_refused_with_its_field(tmp_path, capsys, record, message):
    path = _write(tmp_path / "t.jsonl", [{"policy": "a", **r} for r in _trace()] + [{"policy": "a", **record}])
    assert main(["bench", "tail", "--trace", path]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_the_trace_is_never_overwritten_and_odd_policy_lists_are_refused(tmp_path, capsys):
    path = _write(tmp_path / "t.jsonl", [{"policy": "a|b", **r} for r in _trace()])
    before = (tmp_path / "t.jsonl").read_text()
    assert main(["bench", "tail", "--trace", path, "--json", path]) == 2
    assert "would be overwritten" in capsys.readouterr().err
    assert (tmp_path / "t.jsonl").read_text() == before
    assert main(["bench", "tail", "--trace", path, "--policies", ",,"]) == 2
    assert "names no policy" in capsys.readouterr().err
    assert main(["bench", "tail", "--trace", path]) == 0
    assert "| a\\|b | 21.2 |" in capsys.readouterr().out


def test_a_request_without_chunks_is_refused_and_messages_stay_on_one_line(tmp_path, capsys):
    recs = [{"policy": "a\nb", **r} for r in _trace()] + [{"policy": "a\nb", "finish_s": 31.0, "chunks": []}]
    path = _write(tmp_path / "t.jsonl", recs)
    assert main(["bench", "tail", "--trace", path]) == 2
    err = capsys.readouterr().err
    assert "has no chunk" in err and err.count("\n") == 1
    assert main(["bench", "tail", "--trace", path, "--json", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
