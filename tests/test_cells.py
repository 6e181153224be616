"""rag_bench.cells: the cell's config.yaml is written exactly as OmegaConf.to_yaml writes it, and read
back (with libyaml's parser) as the config it was written from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from rag_bench.cells import _YAML_LOADER, config_yaml
from tests.conftest import compose_config

CONF = Path(__file__).resolve().parents[1] / "rag_bench" / "conf"
GROUPS = ["chunker", "embedder", "index", "retriever", "reranker", "generator", "judge", "tracking"]
AWKWARD = ["null", "~", "true", "No", "1e3", "0x1F", "012", "1_000", ".inf", "", " lead", "trail ", "a: b",
           "- x", "#c", "x #c", "'q'", '"dq"', "multi\nline\n", "tab\tin", "ünïcødé — ☃", "日本語のテキスト",
           "\u200b", "back\\slash", "%x", "@at", "`tick`", "{a: 1}", "[1, 2]", "*ref", "&anchor",
           "!tag", "? q", "x" * 300, " ".join(["word"] * 80), "2026-12-01", "12:30:00", "=", "<<"]


def _same(cfg) -> None:
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    text = config_yaml(plain)
    assert text == OmegaConf.to_yaml(cfg, resolve=True)
    assert yaml.safe_load(text) == plain
    assert yaml.load(text, Loader=_YAML_LOADER) == plain  # how load_cell reads it back (libyaml)


@pytest.mark.parametrize("group", GROUPS)
def test_config_yaml_equals_omegaconf_for_every_shipped_option(group):
    for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
        _same(compose_config([f"{group}={option}"]))


@pytest.mark.parametrize("extra", [[], ["emoji 🙂"]], ids=["libyaml", "beyond-bmp"])
def test_config_yaml_equals_omegaconf_for_awkward_values(extra):
    values = {f"v{i}": s for i, s in enumerate(AWKWARD + extra)}
    values.update(nums=[0, -1, 1.5, 1e-12, 1e300, float("inf"), True, None], nested={"deep": {"list": AWKWARD[:8]}},
                  **{k: 1 for k in ("null", "1", "yes", "a b", "ü")})
    _same(OmegaConf.create(values))


def test_metrics_json_reads_back_as_written_with_its_measures_block_one_line_per_key():
    import json
    import math

    from rag_bench.cells import metrics_json

    metrics = {"retrieval": {"hit@5": 0.5, "mrr": math.nan}, "ci": {"retrieval/hit@5": [0.25, 0.75]},
               "measures": {"retrieval/hit@5": {"direction": "higher", "params": {"eval.gain": "linear"}},
                            "retrieval/mrr": {"direction": "higher", "params": {}}}, "warnings": []}
    text = metrics_json(metrics)
    back = json.loads(text)
    assert back["retrieval"] == {"hit@5": 0.5, "mrr": None} and back["measures"] == metrics["measures"]
    assert back["ci"] == metrics["ci"] and back["warnings"] == []
    block = text[text.index('"measures": {'):].splitlines()
    assert block[1].startswith('    "retrieval/hit@5": {') and block[2].startswith('    "retrieval/mrr": {')
    assert json.loads(metrics_json({"retrieval": {"hit@5": 1.0}})) == {"retrieval": {"hit@5": 1.0}}


def _format0_cell(tmp_path: Path, metrics: dict, done: str, name: str = "0123456789ab", *,
                  records: dict | None = None, **config) -> Path:
    """A cell folder as written before the cell format (no ``format``, no ``measures`` block, DONE as
    text); ``records``: its records.parquet's columns; ``config``: more groups of its config.yaml."""
    import json

    import pandas as pd

    cell = tmp_path / "exp" / name
    cell.mkdir(parents=True)
    (cell / "config.yaml").write_text(yaml.safe_dump({"eval": {"gain": "linear", "relevance_level": 1, "unit": "chunk"},
                                                      "pipeline": {"k": 5}, **config}))
    (cell / "metrics.json").write_text(json.dumps(metrics))
    pd.DataFrame(records or {"qid": ["a", "b"], "tokens_in": [10, 30], "tokens_out": [2, None]}).to_parquet(
        cell / "records.parquet")
    (cell / "DONE").write_text(done)
    return cell


def test_a_cell_of_format_0_is_upgraded_as_it_is_read(tmp_path):
    """Issue 51, item 6: one upgrade step on read, so no reader keeps a "cell written before X" branch."""
    from rag_bench.cells import CELL_FORMAT, load_cell
    from rag_bench.decision import decide, params

    cell = load_cell(_format0_cell(tmp_path, {"retrieval": {"ndcg@10": 0.5}, "generation": {"correct": 0.2}},
                                   "done\n"))
    assert cell.metrics["format"] == CELL_FORMAT and cell.done == {"format": CELL_FORMAT}
    assert cell.metrics["measures"]["retrieval/ndcg@10"]["params"]["eval.gain"] == "linear"
    assert params.describe(cell).params["retrieval/ndcg@10"]["eval.gain"] == "linear"
    assert decide.tokens(cell) == 21.0  # (10 + 2 + 30 + 0) / 2, from its records


def test_a_cell_of_a_newer_format_is_refused_with_a_fix(tmp_path):
    from rag_bench.cells import load_cell
    from rag_bench.errors import DataError

    with pytest.raises(DataError, match=r"metrics.json.*cell format 9: this rag_bench reads formats 0..1 -- fix:"):
        load_cell(_format0_cell(tmp_path, {"format": 9, "retrieval": {}}, "{}"))


def test_a_written_cell_says_its_format_in_metrics_and_done(tmp_path):
    import json

    import pandas as pd

    from rag_bench.cells import CELL_FORMAT, CellResult, mark_done, read_cell, write_cell

    cell = tmp_path / "c"
    write_cell(cell, {"eval": {}}, CellResult(pd.DataFrame({"qid": ["a"]}), {"retrieval": {"hit@5": 1.0},
                                                                             "measures": {}}, "", ""))
    mark_done(cell, {"cell_id": "c"})
    assert json.loads((cell / "metrics.json").read_text())["format"] == CELL_FORMAT
    assert json.loads((cell / "DONE").read_text()) == {"cell_id": "c", "format": CELL_FORMAT}
    assert read_cell(cell).metrics["measures"] == {}  # format 1: read as written


def test_format_0s_parameters_are_the_catalogs_when_format_1_came():
    """The upgrade's table of format 0 (cells.py sits below the catalog and imports nothing of it)
    holds what the catalog declares: a family that gains a parameter is a new cell format."""
    from rag_bench.cells import _FORMAT0_PARAMS
    from rag_bench.evaluation import measures

    declared = {f"{m.section}/{m.family}": m.params for m in (*measures.FAMILIES, *measures.FIGURES) if m.params}
    assert declared == _FORMAT0_PARAMS


def test_a_format_0_cell_without_the_parser_and_query_groups_is_named_as_before(tmp_path):
    """Issue 51 item 6: naming's "written before the parser / query group" defaults moved into the
    upgrade: the old cell reads with parser=auto and query=none, as it ran, so no parser or query
    axis appears between it and a cell of today with those settings."""
    from rag_bench import naming
    from rag_bench.cells import load_cell

    cell = load_cell(_format0_cell(tmp_path, {"retrieval": {"ndcg@10": 0.5}}, "done\n"))
    assert cell.config["parser"] == {"name": "auto"} and cell.config["query"] == {"name": "none"}
    today = {**cell.config, "pipeline": {"k": 6}}
    assert naming.axes([cell.config, today]) == ["pipeline.k"]
    assert naming.labels([cell.config, today]) == ["k=5", "k=6"]
    assert naming.value(cell.config, "query") == "none" and naming.value(cell.config, "parser") == "auto"


def test_format_0_fingerprints_read_as_before_from_the_upgrades_nulls(tmp_path):
    """Issue 51 item 6: the "cell written before fingerprints" branches left Cell and its readers:
    the upgrade writes a format-0 cell's fingerprints, null when it has none (and the dataset's from
    its config first, where format 0's reader looked first). The readers see what they saw: a cell
    without one is its own version ``unknown``, checked against no other cell's dataset, and agree
    says it did not check the corpus."""
    from rag_bench.cells import check_same_dataset, load_cell, one_dataset
    from rag_bench.decision.agreement import check_corpus
    from rag_bench.errors import DataError

    none = load_cell(_format0_cell(tmp_path, {"retrieval": {"ndcg@10": 0.5}}, "done\n", "a" * 12))
    known = load_cell(_format0_cell(tmp_path, {"retrieval": {"ndcg@10": 0.4}, "dataset_fingerprint": "f1",
                                               "corpus_fingerprint": "c1"}, "done\n", "b" * 12))
    in_config = load_cell(_format0_cell(tmp_path, {"retrieval": {}, "dataset_fingerprint": "f1"}, "done\n", "c" * 12,
                                        dataset={"fingerprint": "f2"}))
    assert (none.metrics["dataset_fingerprint"], none.metrics["corpus_fingerprint"]) == (None, None)
    assert (none.dataset_fingerprint, none.corpus_fingerprint) == (None, None)
    assert (known.dataset_fingerprint, known.corpus_fingerprint) == ("f1", "c1")
    assert (in_config.dataset_fingerprint, in_config.corpus_fingerprint) == ("f2", None)
    (none.path / "DONE").touch()  # finished last: its version is the one shown
    shown, notice = one_dataset([none, known])
    assert shown == [none] and "2 dataset versions (fingerprints: unknown (1 cell, finished last: shown); f1 (1 " \
        "cell))" in notice and "--fingerprint f1" in notice
    assert one_dataset([none, known], "unknown") == ([none], "")
    check_same_dataset(none, known)  # not known: nothing to hold it against
    with pytest.raises(DataError, match="different datasets"):
        check_same_dataset(known, in_config)
    assert check_corpus([none], [known]) == ("corpus not checked: some cells were written before metrics.json "
                                            "recorded corpus_fingerprint (re-run them to have it checked)")
    assert check_corpus([known], [known]) == ""


def test_a_format_1_cells_fingerprints_are_read_from_metrics_json_alone(tmp_path):
    import pandas as pd

    from rag_bench.cells import CellResult, mark_done, read_cell, write_cell

    cell = tmp_path / "c"
    write_cell(cell, {"dataset": {"path": "d"}}, CellResult(pd.DataFrame({"qid": ["a"]}), {
        "retrieval": {}, "measures": {}, "dataset_fingerprint": "f1", "corpus_fingerprint": "c1"}, "", ""))
    mark_done(cell)
    read = read_cell(cell)
    assert (read.dataset_fingerprint, read.corpus_fingerprint) == ("f1", "c1")


def test_format_0_records_are_read_as_written_judged_without_samples_and_refused_by_export(tmp_path, capsys):
    """Issue 51 item 6, the two "written before X" branches left in readers, each for a reason: the
    upgrade leaves records.parquet as written, so a judged format-0 cell without judge samples is
    compared over its questions alone (paired_samples None: the randomisation test, as before; one-
    sample lists filled in would switch it to the two-level test), and export refuses a cell without
    chunk_spans with its fix (where a passage lay cannot be made up)."""
    import pandas as pd

    from rag_bench.cells import load_cell
    from rag_bench.cli import export
    from rag_bench.judging.samples import paired_samples

    columns = {"qid": ["a", "b"], "answer": ["x", "y"], "judge_faithfulness": [1.0, 0.5]}
    cell = load_cell(_format0_cell(tmp_path, {"judge": {"judge_faithfulness": 0.75}}, "done\n", records=columns))
    assert cell.records.equals(pd.DataFrame(columns))  # read as written: no column added
    assert paired_samples("judge/judge_faithfulness", cell.records, cell.records) is None
    assert export.run([str(cell.path)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: {cell.path}: records.parquet has no chunk_spans (written "
                                               "before export existed) -- fix: re-run the cell")
