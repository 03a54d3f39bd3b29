"""The metric catalogue (umbra.telemetry.catalog) is complete and consistent: every
metric-shaped string in the source is catalogued, so a metric cannot be logged, charted or
compared without an entry."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from umbra.telemetry import catalog
from umbra.telemetry.summary_columns import SUMMARY_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
PYTHON_TREES = (ROOT / "workers" / "umbra", ROOT / "platform")
FRONTEND = ROOT / "frontend" / "src"
METRIC_SHAPE = re.compile(r"^(rollout|train|reward|sync|iteration|val|system)/[a-z0-9_/{}.-]+$")
# A quoted metric-shaped string in TypeScript ('...', "..." or `...` without ${}).
TS_STRING = re.compile(r"""(["'`])((?:rollout|train|reward|sync|iteration|val)/[a-z0-9_/{}.-]+)\1""")
HOLE = "\x00"  # stands for an f-string's {expression} while matching


def _python_strings(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant; an f-string becomes its template with
    each ``{expression}`` as HOLE (``f"train/{k}"`` -> ``"train/\\x00"``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    inside_fstrings = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else HOLE for v in node.values]
            out.append((node.lineno, "".join(map(str, parts))))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            out.append((node.lineno, node.value))
    return out


def _metric_strings() -> list[tuple[str, str]]:
    """``(where, text)`` of every metric-shaped string in workers/umbra, platform and frontend/src
    (tests left out: they may name made-up metrics)."""
    found = []
    for tree in PYTHON_TREES:
        for path in sorted(tree.rglob("*.py")):
            for line, text in _python_strings(path):
                if METRIC_SHAPE.match(text.replace(HOLE, "x")):
                    found.append((f"{path.relative_to(ROOT)}:{line}", text))
    for path in sorted(p for p in FRONTEND.glob("*.ts") if not p.name.endswith(".test.ts")):  # as tests/ is not scanned
        for n, line in enumerate(path.read_text().splitlines(), 1):
            found += [(f"{path.relative_to(ROOT)}:{n}", m.group(2)) for m in TS_STRING.finditer(line)]
    return found


def _example(m: catalog.Metric) -> str:
    """A concrete logged name of an entry (a family's member ``0``)."""
    return re.sub(r"\{[a-z]+\}", "0", m.name)


def _catalogued(text: str) -> bool:
    """A name the catalogue knows (or a family's shared name), or a template (HOLE for an
    expression) that a catalogued name fits."""
    if HOLE not in text:
        return catalog.lookup(text) is not None or text in {m.family for m in catalog.METRICS}
    pattern = re.compile("[^/]+".join(map(re.escape, text.split(HOLE))))
    return any(pattern.fullmatch(_example(m)) for m in catalog.METRICS)


def test_the_scan_finds_what_the_job_logs():
    texts = {t for _, t in _metric_strings()}
    # literals, f-string templates and TypeScript strings are all seen (guards the scanner itself)
    assert {"rollout/throughput_tok_s", "reward/mean", "iteration/time_s"} <= texts
    assert f"rollout/instance_idle_frac/{HOLE}" in texts and f"train/{HOLE}" in texts
    assert _catalogued(f"train/{HOLE}") and _catalogued(f"rollout/request_latency_s/p{HOLE}")
    assert not _catalogued("rollout/nope") and not _catalogued(f"train/{HOLE}/nope")


def test_every_metric_name_in_the_source_is_catalogued():
    missing = sorted({(where, text.replace(HOLE, "{...}")) for where, text in _metric_strings() if not _catalogued(text)})
    assert not missing, ("metric names missing from umbra/telemetry/catalog.py (add an entry for each):\n"
                         + "\n".join(f"  {where}: {text}" for where, text in missing))


def test_every_name_design_md_lists_is_catalogued():
    """The field's metric vocabulary (throughput, tail time, acceptance length, ...), as the producers log it."""
    vocabulary = ["rollout/time_s", "rollout/throughput_tok_s", "rollout/tail_time_s", "rollout/tail_frac",
                  *(f"rollout/request_latency_s/{k}" for k in ("p50", "p90", "p99", "max")),
                  "rollout/response_len/mean", "rollout/response_len/max", "rollout/clip_ratio",
                  "rollout/decode_tok_s", "rollout/spec/accept_len", "rollout/preemptions", "rollout/migrations",
                  "rollout/reprefill_tokens", "rollout/instance_idle_frac", "rollout/instance_idle_frac/3",
                  "reward/mean", "reward/accuracy", "train/loss", "train/kl", "train/entropy", "train/time_s",
                  "sync/weight_time_s", "iteration/time_s"]
    assert [n for n in vocabulary if catalog.lookup(n) is None] == []


def test_entries_are_unique_and_well_formed():
    names = [m.name for m in catalog.METRICS]
    assert len(names) == len(set(names))
    for m in catalog.METRICS:
        assert METRIC_SHAPE.match(m.name), m.name
        assert m.section in catalog.SECTIONS, m
        assert m.better in ("higher", "lower", "none"), m
        assert m.label and m.description, m
        assert m.family is None or m.name.startswith(m.family + "/"), m
        keys = re.findall(r"\{([a-z]+)\}", m.name)
        assert set(keys) <= set(catalog.PLACEHOLDERS), m.name
        assert not (m.dashboard and len(keys) > 1), f"{m.name}: a charted family has one line per member"
    assert all(any(m.section == s for m in catalog.METRICS) for s in catalog.SECTIONS), "a section without metrics"


def test_lookup_maps_family_members_to_their_family():
    assert catalog.lookup("rollout/instance_idle_frac/12").name == "rollout/instance_idle_frac/{instance}"
    assert catalog.lookup("system/actor/rollout-3/rss_gib").name == "system/actor/{actor}/rss_gib"
    assert catalog.lookup("system/node/ip-10-0-0-7.ec2.internal/mem_frac").name == "system/node/{node}/mem_frac"
    assert catalog.lookup("system/actor/a/b/rss_gib") is None  # one path segment per key
    assert catalog.lookup("rollout/instance_idle_frac").name == "rollout/instance_idle_frac"
    assert catalog.lookup("rollout/instance_idle_frac/x") is None and catalog.lookup("nope") is None
    with pytest.raises(KeyError, match="not in the metric catalogue"):
        catalog.get("rollout/typo")


def test_readers_take_their_defaults_from_the_catalogue():
    from compare.services import DEFAULT_METRICS
    from compare.summary import COLUMNS
    from umbra.client.commands.follow import METRICS as FOLLOWED
    from umbra.client.tables import SUMMARY_COLUMNS as CLI_COLUMNS

    assert list(DEFAULT_METRICS) == catalog.compare_defaults() and DEFAULT_METRICS
    assert COLUMNS == {c.key: (c.metric, c.stat) for c in SUMMARY_COLUMNS}
    assert [k for k, _ in CLI_COLUMNS] == list(COLUMNS)
    assert all(catalog.get(name).label == label for name, label, _ in FOLLOWED)
    better = {c.key: c.better for c in SUMMARY_COLUMNS}
    assert better == {"throughput_tok_s": "higher", "tail_time_s": "lower", "accept_len": "higher",
                      "reward": "higher", "accuracy": "higher", "iterations": "none"}


def test_pages_embed_the_catalogue_as_json():
    import json

    from telemetry.templatetags.metric_catalog import ELEMENT_ID, metric_catalog

    html = str(metric_catalog())
    assert html.startswith(f'<script id="{ELEMENT_ID}" type="application/json">')
    doc = json.loads(html.split(">", 1)[1].rsplit("</script>", 1)[0])
    assert doc["sections"] == list(catalog.SECTIONS) and doc["placeholders"] == catalog.PLACEHOLDERS
    assert [m["name"] for m in doc["metrics"]] == [m.name for m in catalog.METRICS]
    assert [c["key"] for c in doc["summary"]] == [c.key for c in SUMMARY_COLUMNS]
    assert doc["summary"][0]["heading"] == "throughput tok/s (median)"
