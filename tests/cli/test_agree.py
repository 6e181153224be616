"""rag-bench agree through the real CLI: one cheap grid (bm25 x two chunkers x k) swept on the demo's
odd and even questions over the same documents; tau, its CI, top-1, the overlap and the axes as
printed and as JSON; bad inputs (another grid, another corpus, a missing folder) exit 2 with a fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from rag_bench.cli.main import main
from rag_bench.data.loader import load_dataset
from rag_bench.decision.agreement import AxisAgreement, grid_key
from rag_bench.runner.config import DEMO_DATASET

BIN = Path(sys.executable).parent
GRID = ("chunker=fixed,section", "retriever=bm25", "pipeline.k=1,3")


def _half(root: Path, which: int) -> Path:
    """A copy of the demo set with every other question (its documents byte for byte)."""
    shutil.copytree(DEMO_DATASET, root)
    rows = [line for line in (root / "questions.jsonl").read_text().splitlines() if line.strip()]
    (root / "questions.jsonl").write_text("\n".join(rows[which::2]) + "\n")
    (root / "labels.jsonl").unlink(missing_ok=True)
    return root


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory) -> dict[str, Path]:
    """Four experiments: the same grid on the odd and the even questions, a smaller grid on the odd
    ones (two of its cells), and one cell over a corpus with one document edited."""
    tmp = tmp_path_factory.mktemp("agree")
    odd, even = _half(tmp / "odd", 1), _half(tmp / "even", 0)
    edited = _half(tmp / "edited", 0)
    doc = sorted((edited / "docs").rglob("*.md"))[0]
    doc.write_text(doc.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    env = {**os.environ, "RAG_BENCH_CACHE": str(tmp / "cache")}
    out = tmp / "exp"
    for name, data, grid in (("odd", odd, ("-m", *GRID)), ("even", even, ("-m", *GRID)), ("edited", edited, ())):
        done = subprocess.run([str(BIN / "rag-bench"), "run", *grid, f"dataset.path={data}", "tracking=none",
                               f"output.root={out}", f"experiment.name={name}"], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    for cell in (out / "odd").iterdir():  # the k=1 cells alone: a grid without k=3
        if (cell / "DONE").is_file() and "k: 1\n" in (cell / "config.yaml").read_text(encoding="utf-8"):
            shutil.copytree(cell, out / "small" / cell.name)
    return {name: out / name for name in ("odd", "even", "edited", "small")}


def test_agree_prints_tau_with_its_ci_top1_the_overlap_and_the_axes(sweeps, tmp_path):
    done = subprocess.run([str(BIN / "rag-bench"), "agree", str(sweeps["odd"]), str(sweeps["even"])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Kendall's tau-b: " in text and "95% bootstrap over questions" in text
    assert "4 cells matched by their config" in text and ("Top-1: agree" in text or "Top-1: differ" in text)
    assert "Not significantly worse: " in text and "Jaccard" in text
    assert "pipeline.k" in text and "chunker" in text  # both axes move answer/context_all


def test_the_json_holds_the_figures_the_table_states(sweeps, capsys):
    assert main(["agree", str(sweeps["odd"]), str(sweeps["even"]), "--json", "--resamples", "300"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["measure_a"] == found["measure_b"] == "answer/context_all"  # the extractive stand-in's primary
    assert (found["questions_a"], found["questions_b"]) == (45, 45)
    cells = found["cells"]
    assert len(cells) == 4 and [c["rank_a"] for c in cells] == [1, 2, 3, 4]
    # tau is Kendall's tau-b of the two columns of values (scipy's), inside its interval
    want = kendalltau([c["value_a"] for c in cells], [c["value_b"] for c in cells]).statistic
    assert found["tau"] == pytest.approx(want)
    lo, hi = found["tau_ci"]
    assert -1 <= lo <= hi <= 1 and found["resamples"] == 300
    best_b = min(cells, key=lambda c: c["rank_b"])
    assert found["top1_same"] == (best_b["rank_a"] == 1) and found["best_a"] == cells[0]["name"]
    assert found["rank_in_a_of_best_b"] == best_b["rank_a"]
    assert set(found["overlap"]) == {c["name"] for c in cells if c["close_a"] and c["close_b"]}
    either = {c["name"] for c in cells if c["close_a"] or c["close_b"]}
    assert found["jaccard"] == pytest.approx(len(found["overlap"]) / len(either))
    assert {a["axis"] for a in found["axes"]} == {"chunker", "pipeline.k"}
    k = next(a for a in found["axes"] if a["axis"] == "pipeline.k")
    assert k["best_a"] == k["best_b"] == "3" and k["same_sign"]  # more passages, more evidence handed over


def test_an_experiment_agrees_with_itself_and_says_the_questions_are_the_same(sweeps, capsys):
    assert main(["agree", str(sweeps["odd"]), str(sweeps["odd"]), "--json", "--resamples", "200"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["tau"] == pytest.approx(1.0) and found["top1_same"] and found["jaccard"] == 1.0
    assert any("same questions" in n for n in found["notes"])


def test_another_grid_exits_2_naming_the_cell_and_the_fix_and_common_compares_the_shared_cells(sweeps, capsys):
    assert main(["agree", str(sweeps["odd"]), str(sweeps["small"])]) == 2
    err = capsys.readouterr().err
    assert "did not sweep the same grid" in err and "pipeline.k=3 vs 1" in err
    assert "-- fix: sweep the same overrides on both question sets" in err and "--common" in err
    assert main(["agree", str(sweeps["odd"]), str(sweeps["small"]), "--common", "--resamples", "100"]) == 0
    out = capsys.readouterr().out
    assert "2 cells matched" in out and "--common: 2 cells both experiments have" in out


def test_another_corpus_exits_2_with_the_fix(sweeps, capsys):
    assert main(["agree", str(sweeps["odd"]), str(sweeps["edited"])]) == 2
    err = capsys.readouterr().err
    assert "searched different corpora" in err and "corpus_fingerprint" in err and "-- fix: give both" in err


def test_a_missing_experiment_or_one_cell_exits_2(sweeps, tmp_path, capsys):
    assert main(["agree", str(sweeps["odd"]), str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    cell = next(p for p in sweeps["odd"].iterdir() if (p / "DONE").is_file())
    assert main(["agree", str(cell), str(sweeps["even"])]) == 2
    assert "fix" in capsys.readouterr().err
    assert main(["agree", str(sweeps["odd"]), str(sweeps["even"]), "--by", "retrieval/nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --by: 'retrieval/nope' is not a measure") and "did you mean" in err


def test_by_ranks_both_by_one_measure_and_a_bare_name_is_found(sweeps, capsys):
    assert main(["agree", str(sweeps["odd"]), str(sweeps["even"]), "--by", "ndcg@10", "--json",
                 "--resamples", "100"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["measure_a"] == found["measure_b"] == "retrieval/ndcg@10"
    # the questions nDCG is defined on (with evidence), as each cell's n says -- not every question
    n = json.loads((sweeps["odd"] / found["cells"][0]["cell_a"] / "metrics.json").read_text())["n"]
    assert found["questions_a"] == n["retrieval/ndcg@10"] < 45
    assert [a["axis"] for a in found["axes"]] == ["chunker"]  # k acts after the ranking: it cannot move nDCG


def test_dataset_yaml_is_not_part_of_the_corpus(tmp_path):
    """A drafted set's dataset.yaml says how it was drafted; its documents are people's: one corpus."""
    a, b = _half(tmp_path / "a", 0), _half(tmp_path / "b", 0)
    (b / "dataset.yaml").write_text("name: drafted\ndescription: drafted from the same documents\n")
    da, db = load_dataset(a), load_dataset(b)
    assert da.fingerprint != db.fingerprint and da.corpus_fingerprint == db.corpus_fingerprint


@pytest.mark.parametrize("sig_a, sig_b, same, agree", [(True, True, True, True), (True, True, False, False),
                                                       (False, False, False, True), (True, False, True, False),
                                                       (None, True, True, False)])
def test_an_axis_agrees_when_significant_in_both_alike_or_in_neither(sig_a, sig_b, same, agree):
    nan = (np.nan, np.nan)
    axis = AxisAgreement("chunker", "a", "b", 0.1, nan, "a" if same else "b", "b" if same else "a", 0.1, nan, same,
                         sig_a, sig_b)
    assert axis.agree is agree


def test_the_notebook_api_states_the_same_agreement(sweeps, capsys):
    import rag_bench.api as rb

    found = rb.load(sweeps["odd"]).agree(rb.load(sweeps["even"]))
    assert main(["agree", str(sweeps["odd"]), str(sweeps["even"]), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert found.tau == pytest.approx(said["tau"]) and list(found.tau_ci) == pytest.approx(said["tau_ci"])
    assert found.overlap == tuple(said["overlap"]) and found.top1_same == said["top1_same"]


def test_a_cell_written_before_a_setting_existed_matches_one_written_after_it() -> None:
    """An experiment swept before the query group (no ``query`` in its cells' config) against one
    swept after it (``query: {name: none}``): the same grid, as their cell ids say. Before the fix
    agree refused it ("query.name=(unset) vs 'none'", no cell in common)."""
    old = {"chunker": {"name": "fixed", "size": 200}, "retriever": {"name": "bm25"},
           "pipeline": {"k": 3}, "eval": {"ks": [5]}, "dataset": {"path": "a"}}
    new = {**old, "query": {"name": "none", "_target_": "rag_bench.query.none.NoQueryTransform"},
           "pipeline": {"k": 3, "history_turns": 6, "history_chars": 2000},
           "eval": {"ks": [5], "claims_judge": "lexical"}, "dataset": {"path": "b"}}
    assert grid_key(old) == grid_key(new)
    rewritten = {**new, "query": {"name": "rewrite", "_target_": "rag_bench.query.llm.Rewrite"}}
    assert grid_key(rewritten) != grid_key(old)


def test_no_sentence_passes_120_characters_and_seed_is_explained(sweeps, capsys):
    """Piped, the sentences agree prints (notes, tau, the footnotes: one was 180 characters) wrap at 120;
    the tables' rows are the tables'. --help says what --seed seeds and its default (it said nothing)."""
    for b in ("even", "odd"):  # odd twice: the same-questions note
        assert main(["agree", str(sweeps["odd"]), str(sweeps[b]), "--resamples", "100"]) == 0
        text = capsys.readouterr().out
        sentences = [line for line in text.splitlines() if "  " not in line.strip()]
        assert any(line.startswith("(main effects:") for line in sentences)
        assert all(len(line) <= 120 for line in sentences), text
    with pytest.raises(SystemExit):
        main(["agree", "--help"])
    assert "seed of the bootstrap draws (default 0)" in " ".join(capsys.readouterr().out.split())


def test_an_undefined_tau_says_why_and_how_to_rank_instead(sweeps, tmp_path, capsys):
    """A set whose cells all tie (a drafted set of 11 questions did) printed 'tau-b: n/a no interval' and
    nothing more: a note now says which ranking ties and the fix (--by a measure the cells differ on);
    --json gives null, not NaN."""
    tied = tmp_path / "tied"
    shutil.copytree(sweeps["even"], tied)
    for metrics in tied.glob("*/metrics.json"):
        m = json.loads(metrics.read_text())
        m["answer"]["context_all"] = 0.5
        metrics.write_text(json.dumps(m))
    assert main(["agree", str(sweeps["odd"]), str(tied), "--resamples", "50"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Kendall's tau-b: n/a" in text
    assert "note: tau is undefined: every cell ties in B's ranking by its measure" in text and "--by" in text
    # --json is JSON (it wrote NaN, which jq and JSON.parse refuse): the undefined tau and its interval are null
    assert main(["agree", str(sweeps["odd"]), str(tied), "--resamples", "50", "--json"]) == 0
    found = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert found["tau"] is None and len(found["tau_ci"]) == 2


def test_a_misspelt_by_is_told_to_fix_by_not_a_config_key(sweeps, capsys):
    """'--by retrieval/ndcg@1O' was told 'fix: ... experiment.primary=auto (...)', a config key agree does
    not take: the fix keeps the did-you-mean and names --by."""
    assert main(["agree", str(sweeps["odd"]), str(sweeps["even"]), "--by", "retrieval/ndcg@1O"]) == 2
    err = capsys.readouterr().err
    assert "--by: 'retrieval/ndcg@1O' is not a measure" in err and "did you mean retrieval/ndcg@1" in err
    assert "--by a section/name such as retrieval/ndcg@10" in err and "experiment.primary" not in err


def test_a_cell_without_the_measure_or_a_measure_without_questions_is_refused_with_a_fix(sweeps, tmp_path):
    """agreement() refuses what it cannot rank or resample, naming the side and --by: a cell of B
    without a value of the measure; a cell of B whose records.parquet lacks the measure's column."""
    import pandas as pd

    from rag_bench.cells import load_cell
    from rag_bench.decision.agreement import agreement
    from rag_bench.errors import ConfigError

    def cells(folder: Path) -> list:
        return sorted((load_cell(d.parent) for d in folder.glob("*/DONE")), key=lambda c: c.cell_id)

    lacking, no_column = tmp_path / "lacking", tmp_path / "no_column"
    shutil.copytree(sweeps["even"], lacking)
    shutil.copytree(sweeps["even"], no_column)
    metrics = cells(lacking)[0].path / "metrics.json"
    m = json.loads(metrics.read_text())
    del m["answer"]["context_all"]
    metrics.write_text(json.dumps(m))
    records = cells(no_column)[0].path / "records.parquet"
    frame = pd.read_parquet(records)
    assert "context_all" in frame
    frame.drop(columns=["context_all"]).to_parquet(records)
    key = "answer/context_all"
    with pytest.raises(ConfigError, match=r"^B: 1 of 4 cells have no value of answer/context_all .*-- fix: .*--by"):
        agreement(list(zip(cells(sweeps["odd"]), cells(lacking))), key_a=key, key_b=key, resamples=20)
    with pytest.raises(ConfigError, match=r"^answer/context_all has no per-question values .*-- fix: .*--by"):
        agreement(list(zip(cells(sweeps["odd"]), cells(no_column))), key_a=key, key_b=key, resamples=20)
