"""Second round of hostile inputs, through the real command line: askers whose access rights once
collided in a cache, dataset files that crashed or hung, links and devices posing as files, config
values that escaped the output root or ran arbitrary callables. Each case exits 2 naming the file
(and line and field where there is one), and leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from rag_bench.cli import main as cli
from tests.bad_inputs.test_bad_inputs import append_line, copy_tiny, edit_questions, nothing_left, run_refused
from tests.conftest import TINY

# --- 1. access masks keyed structurally ------------------------------------------------------

SECRET_Q = "How often is production access reviewed?"
ENTITLED = {"id": "entitled", "question": SECRET_Q, "answerable": True,
            "evidence": [{"doc_id": "security", "section": "Access reviews"}]}
# Each pair: an asker who may read the staff-only passage, and one who may not, whose rights a
# joined-string key ("tenant|g1,g2") used to confuse with the first's.
COLLIDING = {
    "comma-in-group": ({"groups": ["customers", "staff"]}, {"groups": ["customers,staff"]}),
    "star-tenant": ({"groups": ["staff"]}, {"tenant": "*", "groups": ["staff"]}),
}


def _collision_dataset(tmp: Path, entitled: dict, other: dict, entitled_first: bool) -> Path:
    root = copy_tiny(tmp)
    qs = [{**ENTITLED, "asker": entitled},
          {"id": "other", "question": SECRET_Q, "answerable": False, "evidence": [], "asker": other}]
    if not entitled_first:
        qs.reverse()
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    return root


@pytest.mark.parametrize("retriever", ["bm25", "dense", "hybrid"])
@pytest.mark.parametrize("entitled_first", [True, False], ids=["entitled-first", "entitled-second"])
@pytest.mark.parametrize("pair", sorted(COLLIDING))
def test_askers_with_colliding_strings_never_share_access(tmp_path, capsys, pair, entitled_first, retriever):
    entitled, other = COLLIDING[pair]
    root = _collision_dataset(tmp_path, entitled, other, entitled_first)
    out = tmp_path / "out"
    assert cli(["run", f"dataset.path={root}", f"output.root={out}", "tracking=none",
                f"retriever={retriever}"]) == 0, capsys.readouterr().err
    (done,) = out.glob("*/*/DONE")
    rec = pd.read_parquet(done.parent / "records.parquet").set_index("qid")
    # The asker who may not read: no staff passage retrieved, handed to the generator or answered.
    assert not any(c.startswith("security") for c in rec.loc["other", "chunk_ids"]), rec.loc["other", "chunk_ids"]
    assert "every quarter" not in str(rec.loc["other", "answer"])
    failures = pd.read_csv(done.parent / "failures.csv", dtype=str).set_index("qid")
    assert "every quarter" not in " ".join(failures.loc["other"].fillna(""))
    # The entitled asker kept access: the evidence was found.
    assert rec.loc["entitled", "first_relevant_rank"] == 1
    metrics = json.loads((done.parent / "metrics.json").read_text())
    assert metrics["security"]["unauthorized_retrievals"] == 0


# --- 4/5. dataset files ----------------------------------------------------------------------

def _write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def _first_question(root: Path) -> dict:
    return json.loads((root / "questions.jsonl").read_text().splitlines()[0])


def _replace_first_question(root: Path, raw_line: str) -> None:
    lines = (root / "questions.jsonl").read_text().splitlines()
    _write_lines(root / "questions.jsonl", [raw_line, *lines[1:]])


def _alias_bomb(root: Path) -> None:
    lines = ["a: &a ['lol','lol','lol','lol','lol','lol','lol','lol','lol']"]
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    lines.append("name: *i")
    _write_lines(root / "dataset.yaml", lines)


def _symlink_out(root: Path) -> None:
    outside = root.parent / "outside-secret.md"
    outside.write_text("# Secret\n\nThe vault code is 4711.\n")
    (root / "docs" / "leak.md").symlink_to(outside)


def _docs_jsonl_dev_zero(root: Path) -> None:
    (root / "docs.jsonl").unlink()
    (root / "docs.jsonl").symlink_to("/dev/zero")


def _fifo_in_docs(root: Path) -> None:
    os.mkfifo(root / "docs" / "pipe.md")


def _symlinked_folder(root: Path) -> None:
    other = root.parent / "more-docs"
    other.mkdir()
    (other / "x.md").write_text("# X\n\ntext\n")
    (root / "docs" / "more").symlink_to(other, target_is_directory=True)


def _integer_ids(root: Path) -> None:
    edit_questions(root, lambda q: (q[0].update(id=7), q[1].update(id=7)))


def _int_and_string_id(root: Path) -> None:
    edit_questions(root, lambda q: (q[0].update(id=7), q[1].update(id="7")))


def _huge_integer(root: Path) -> None:
    q = _first_question(root)
    _replace_first_question(root, json.dumps(q)[:-1] + ', "tags": [' + "9" * 5000 + "]}")


def _deep_nesting(root: Path) -> None:
    _replace_first_question(root, '{"id": "q1", "tags": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _lone_surrogate(root: Path) -> None:
    q = _first_question(root)
    _replace_first_question(root, json.dumps(q).replace('"How long', '"\\ud800How long'))


def _duplicate_keys(root: Path) -> None:
    q = _first_question(root)
    _replace_first_question(root, json.dumps(q)[:-1] + ', "answerable": false}')


def _empty_tenant(root: Path) -> None:
    edit_questions(root, lambda q: q[0].update(asker={"tenant": "", "groups": ["customers"]}))


def _empty_group(root: Path) -> None:
    edit_questions(root, lambda q: q[0].update(asker={"tenant": "acme", "groups": ["customers", " "]}))


def _empty_acl_group(root: Path) -> None:
    lines = (root / "docs.jsonl").read_text().splitlines()
    meta = json.loads(lines[2])
    meta["acl"] = ["staff", ""]
    _write_lines(root / "docs.jsonl", [*lines[:2], json.dumps(meta)])


def _zero_width_quote(root: Path) -> None:
    edit_questions(root, lambda q: q[0]["evidence"][0].update(quote="A full\u200b refund is available"))


def _nfd_quote(root: Path) -> None:
    path = root / "docs" / "billing.md"
    path.write_text(path.read_text().replace("Students get", "Students (caf\u00e9) get"))
    edit_questions(root, lambda q: q[0]["evidence"].__setitem__(
        0, {"doc_id": "billing", "quote": "Students (cafe\u0301) get"}))


def _did_you_mean(root: Path) -> None:
    edit_questions(root, lambda q: q[0]["evidence"][0].update(doc_id="Billing"))


def _long_id(root: Path) -> None:
    edit_questions(root, lambda q: q[0].update(id="q" * 201))


def _control_char_id(root: Path) -> None:
    edit_questions(root, lambda q: q[0].update(id="q\x071"))


def _manifest_name_list(root: Path) -> None:
    (root / "dataset.yaml").write_text("name: [a, b]\nlicense: CC0\n")


def _numeric_doc_meta_id(root: Path) -> None:
    append_line(root / "docs.jsonl", json.dumps({"doc_id": 5, "title": "five"}))


# (id, breaker, needles that stderr must hold)
DATASET_CASES: list[tuple[str, Callable[[Path], None], list[str]]] = [
    ("yaml-alias-bomb", _alias_bomb, ["dataset.yaml:2:", "aliases"]),
    ("two-integer-ids", _integer_ids, ["questions.jsonl:1:", "[id]", "is a number", "questions.jsonl:2:"]),
    ("integer-and-string-id", _int_and_string_id, ["questions.jsonl:2:", "duplicate question id '7'"]),
    ("5000-digit-integer", _huge_integer, ["questions.jsonl:1:", "unreadable JSON value"]),
    ("100000-deep-nesting", _deep_nesting, ["questions.jsonl:1:", "nested deeper than"]),
    ("lone-surrogate", _lone_surrogate, ["questions.jsonl:1:", "[question]", "surrogate"]),
    ("duplicate-json-key", _duplicate_keys, ["questions.jsonl:1:", "[answerable]", "appears twice"]),
    ("symlink-out-of-dataset", _symlink_out, ["leak.md", "symbolic link leaves the dataset folder"]),
    ("docs-jsonl-is-dev-zero", _docs_jsonl_dev_zero, ["docs.jsonl", "leaves the dataset folder"]),
    ("fifo-in-docs", _fifo_in_docs, ["pipe.md", "not a regular file"]),
    ("symlinked-folder", _symlinked_folder, ["more", "symbolic link to a folder"]),
    ("empty-tenant", _empty_tenant, ["questions.jsonl:1:", "[asker.tenant]", "empty tenant"]),
    ("empty-group", _empty_group, ["questions.jsonl:1:", "[asker.groups[1]]", "empty group"]),
    ("empty-acl-group", _empty_acl_group, ["docs.jsonl:3:", "[acl]", "empty group"]),
    ("zero-width-in-quote", _zero_width_quote, ["questions.jsonl:1:", "quote not found", "zero-width"]),
    ("nfd-quote", _nfd_quote, ["questions.jsonl:1:", "quote not found", "Unicode normalisation"]),
    ("did-you-mean", _did_you_mean, ["questions.jsonl:1:", "unknown document 'Billing'",
                                     "did you mean 'billing'?"]),
    ("id-too-long", _long_id, ["questions.jsonl:1:", "[id]", "longer than 200"]),
    ("control-char-in-id", _control_char_id, ["questions.jsonl:1:", "[id]", "control characters"]),
    ("manifest-name-not-string", _manifest_name_list, ["dataset.yaml", "[name]", "must be a string"]),
    ("numeric-doc-id-in-metadata", _numeric_doc_meta_id, ["docs.jsonl:4:", "[doc_id]", "is a number"]),
]


@pytest.mark.parametrize(("case", "breaker", "needles"), DATASET_CASES, ids=[c[0] for c in DATASET_CASES])
def test_hostile_dataset(tmp_path, capsys, case, breaker, needles):
    root = copy_tiny(tmp_path)
    breaker(root)
    err = run_refused(root, tmp_path / "out", capsys, needles)
    assert "fix:" in err and len(err) < 20_000, "message must be short and say how to fix"
    assert "vault code" not in err


def make_beir(root: Path, *, queries: list[dict] | None = None, qrels: str | None = None,
              corpus: list[dict] | None = None) -> Path:
    root.mkdir()
    corpus = corpus or [{"_id": "d1", "title": "Kettles", "text": "A kettle boils water quickly."},
                        {"_id": "d2", "title": "Toasters", "text": "A toaster browns bread."}]
    _write_lines(root / "corpus.jsonl", [json.dumps(d) for d in corpus])
    queries = queries or [{"_id": "q1", "text": "what boils water"}, {"_id": "q2", "text": "what browns bread"}]
    _write_lines(root / "queries.jsonl", [json.dumps(q) for q in queries])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text(qrels or "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return root


BEIR_CASES = [
    ("query-id-with-space", dict(queries=[{"_id": "q 1", "text": "what boils water"}],
                                 qrels="q 1\td1\t1\n"), ["queries.jsonl:1:", "[_id]", "whitespace"]),
    ("qrels-score-inf", dict(qrels="q1\td1\tinf\nq2\td2\t1\n"), ["test.tsv:1:", "[score]", "not an integer grade"]),
    ("qrels-score-huge", dict(qrels="q1\td1\t1e308\n"), ["test.tsv:1:", "[score]"]),
    ("integer-corpus-id", dict(corpus=[{"_id": 7, "text": "seven"}], qrels="q1\t7\t1\n"),
     ["corpus.jsonl:1:", "[_id]", "is a number"]),
    ("qrels-zero-padded-id", dict(qrels="q01\td1\t1\n"), ["test.tsv:1:", "unknown query 'q01'",
                                                           "did you mean 'q1'?"]),
    ("qrels-not-utf8", dict(qrels="q1\td1\t1\nq2\td\xe92\t1\n"), ["test.tsv:2:", "not valid UTF-8"]),
]


@pytest.mark.parametrize(("case", "parts", "needles"), BEIR_CASES, ids=[c[0] for c in BEIR_CASES])
def test_hostile_beir(tmp_path, capsys, case, parts, needles):
    root = make_beir(tmp_path / "beir", **{k: v for k, v in parts.items() if k != "qrels"})
    if "qrels" in parts:
        (root / "qrels" / "test.tsv").write_bytes(parts["qrels"].encode("latin-1"))
    run_refused(root, tmp_path / "out", capsys, needles)


def test_valid_beir_with_string_ids_still_runs(tmp_path, capsys):
    root = make_beir(tmp_path / "beir")
    assert cli(["run", f"dataset.path={root}", f"output.root={tmp_path / 'out'}", "tracking=none"]) == 0, \
        capsys.readouterr().err


def test_symlink_inside_the_dataset_is_followed(tmp_path, capsys):
    root = copy_tiny(tmp_path)
    shutil.move(root / "docs" / "security.md", root / "security-source.md")
    (root / "docs" / "security.md").symlink_to(root / "security-source.md")
    assert cli(["validate", str(root)]) == 0, capsys.readouterr().err


# --- 6. config values that escape or exhaust ---------------------------------------------------

CONFIG_CASES = [
    ("experiment-name-parent", ["experiment.name=../../escaped"], ["experiment.name", "folder name"]),
    ("experiment-name-absolute", ["experiment.name=/tmp/rag-bench-escaped"], ["experiment.name"]),
    ("experiment-name-nested", ["experiment.name=a/b"], ["experiment.name"]),
    ("experiment-name-dot", ["experiment.name=."], ["experiment.name"]),
    ("sweep-experiment-name-parent", ["experiment.name=ok,../escaped"], ["experiment.name"]),
    ("bootstrap-billion", ["eval.bootstrap_resamples=1000000000"], ["eval.bootstrap_resamples", "100000"]),
    ("negative-seed", ["eval.seed=-1"], ["eval.seed", ">= 0"]),
    ("hydra-callback-builtin", ["+hydra.callbacks.x._target_=builtins.open", "+hydra.callbacks.x.file=PWNED",
                                "+hydra.callbacks.x.mode=w"], ["hydra.callbacks.x._target_", "not a Hydra"]),
    ("hydra-callback-dict", ["+hydra.callbacks.x={_target_: os.system, command: 'touch PWNED'}"],
     ["hydra.callbacks.x._target_", "not a Hydra"]),
    ("hydra-launcher-function", ["hydra.launcher._target_=os.system"], ["hydra.launcher._target_"]),
    ("target-is-a-function-inside-rag-bench", ["chunker._target_=rag_bench.runner.main.run_cell"],
     ["chunker._target_", "not a class"]),
    ("target-is-a-class-of-another-stage", ["retriever._target_=rag_bench.chunking.fixed.FixedChunker"],
     ["retriever._target_", "does not implement the retriever stage", "fit, search"]),
]


@pytest.mark.parametrize(("case", "overrides", "needles"), CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_hostile_config(tmp_path, capsys, monkeypatch, case, overrides, needles):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    out = work / "out"
    flags = ["-m"] if case.startswith("sweep-") else []
    code = cli(["run", *flags, f"dataset.path={TINY}", f"output.root={out}", *overrides])
    err = capsys.readouterr().err
    assert code == 2, err[-3000:]
    for needle in needles:
        assert needle in err, (needle, err[-3000:])
    assert "fix" in err
    nothing_left(out) if out.exists() else None
    # Nothing written outside the output root, no callable run.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"], list(tmp_path.iterdir())
    assert not (work / "PWNED").exists() and not Path("/tmp/rag-bench-escaped").exists()
    assert [p.name for p in work.iterdir() if p.name != "out"] == []


def test_bootstrap_memory_is_checked_against_the_question_count(tmp_path, capsys):
    # 3,000 questions x 100,000 resamples would need ~4.5 GiB for the bootstrap: refused up front.
    root = copy_tiny(tmp_path)
    qs = [{"id": f"u{i}", "question": f"What is item {i}?", "answerable": False, "evidence": []} for i in range(3000)]
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    out = tmp_path / "out"
    code = cli(["run", f"dataset.path={root}", f"output.root={out}", "eval.bootstrap_resamples=100000"])
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert "eval.bootstrap_resamples=100000 over 3000 questions" in err and "eval.bootstrap_resamples<=89478" in err
    nothing_left(out)
