"""``rag-bench draft`` through the real CLI (issue 54 items 1-2): the kept set validates, every dropped
draft says why, bad input exits 2 with nothing written, a model failing mid-way leaves the journal and
a re-run resumes without drafting again what it finished."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from rag_bench.cli.main import main
from tests.servers import JsonEndpoint, serving

DOCS = {
    "mill.md": "# Mill\n\nThe Kettleby mill was built in 1842 by Thomas Hale on the river Wend. It burned down in "
               "1901 and was rebuilt by Agnes Hale in 1905. The mill grinds about 40 tonnes of grain a week for "
               "the bakers of Kettleby and Alder.\n\n## Workers\n\nIn 1911 the mill employed twelve men under a "
               "miller called Joseph Crane. Joseph Crane kept the accounts in a ledger that the Kettleby museum "
               "still holds.\n",
    "bridge.md": "# Bridge\n\nThe stone bridge over the Wend was opened in 1867 by Thomas Hale. Thomas Hale paid for "
                 "it with money from the mill and the Alder wool trade. A flood in 1952 carried away its middle "
                 "arch, which the county rebuilt in 1954 with concrete.\n",
    "school.md": "# School\n\nThe Kettleby school opened in 1876 with 48 pupils and one teacher, Mary Hale. In 1899 "
                 "a second classroom was added by the parish. The school library holds 3200 books given by the "
                 "Alder wool trade. During 1940 the school took in 60 children from London. The headmaster Peter "
                 "Crane retired in 1968 after 30 years.\n",
}
FAST = ["~embedder"]  # the near-duplicate filter off: no model load in the fast tests


@pytest.fixture()
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_templates_draft_a_folder_of_documents_into_a_dataset_that_validates(corpus, tmp_path, capsys):
    out = tmp_path / "drafted"
    assert main(["draft", str(corpus), "--out", str(out), "n=10", *FAST]) == 0
    drafts = _rows(out / "drafts.jsonl")
    assert len(drafts) == 10 and {d["type"] for d in drafts} >= {"factoid", "unanswerable"}
    for d in drafts:
        assert d["filters"] and all(v["why"] for v in d["filters"].values())
        assert d["kept"] == all(v["ok"] for v in d["filters"].values())
        if not d["kept"]:
            assert d["dropped_by"] and all(not d["filters"][f]["ok"] for f in d["dropped_by"])
    kept = _rows(out / "questions.jsonl")
    assert kept and [q["id"] for q in kept] == [d["id"] for d in drafts if d["kept"]]
    for q, d in ((q, next(d for d in drafts if d["id"] == q["id"])) for q in kept):
        assert q["answerable"] == (d["type"] != "unanswerable")
        for ev in q["evidence"]:  # each quote is the parse's text at the characters recorded
            assert DOCS[ev["doc_id"] + ".md"].find(ev["quote"]) >= 0
    assert sorted(p.name for p in (out / "docs").iterdir()) == sorted(DOCS)
    import yaml

    manifest = yaml.safe_load((out / "dataset.yaml").read_text())
    counts = manifest["drafted"]["counts"]
    assert manifest["drafted"]["drafter"] == "templates" and manifest["drafted"]["seed"] == 0
    assert counts["kept"] == len(kept) and counts["drafted"] == 10
    assert sum(counts["dropped_by_filter"].values()) >= counts["dropped"]
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    assert f"{len(kept)} questions" in capsys.readouterr().out
    # the same command again: everything from the journal, the same drafts and verdicts
    assert main(["draft", str(corpus), "--out", str(out), "n=10", *FAST]) == 0
    assert "0 now, 10 from drafts.jsonl" in capsys.readouterr().out
    assert _rows(out / "drafts.jsonl") == drafts


@pytest.mark.parametrize(("args", "said"), [
    (["n=0"], "n=0: the number of drafts must be an integer > 0 -- fix"),
    (["n=-3"], "n=-3"),
    (["+types.factoyd=0.5"], "types.factoyd: unknown type (did you mean factoid?) -- fix"),
    (["types.factoid=0", "types.unanswerable=0", "types.multi_hop=0", "types.follow_up=0", "types.clarify=0"],
     "every share is 0"),
    (["per_document=0"], "per_document=0 must be an integer >= 1"),
    (["drafter=llm"], "drafter=llm needs a model -- fix: add generator=xllamacpp"),
    (["filters.k=0"], "filters.k=0 must be a int > 0"),
    (["retriever=dense"], "retriever=dense needs the embedder -- fix"),  # was an AttributeError's traceback
    # a misspelt key lists draft.yaml's keys (it listed `rag-bench run`'s: dataset, pipeline, eval, ...)
    (["nn=3"], "valid keys of the config: parser, drafter, generator, reader,"),
    (["filters.kk=1"], "valid keys of filters: k, min_words, max_words"),
])
def test_bad_settings_exit_2_before_anything_is_written(corpus, tmp_path, capsys, args, said):
    out = tmp_path / "drafted"
    assert main(["draft", str(corpus), "--out", str(out), *args, *FAST]) == 2
    assert said in capsys.readouterr().err
    assert not out.exists()


def test_a_folder_with_nothing_readable_exits_2_with_nothing_written(tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "notes.xyz").write_text("not a document")
    out = tmp_path / "drafted"
    assert main(["draft", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no documents" in err and "fix" not in err or "add at least one document" in err
    assert not out.exists()
    assert main(["draft", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such folder" in capsys.readouterr().err and not out.exists()


class _Writer(JsonEndpoint):
    """A model that writes a question per request, and fails (HTTP 500) once ``server.fail_after``
    requests have been answered, when that is set."""

    def answer(self, body: Any) -> tuple[int, bytes]:
        server: Any = self.server
        server.answered += 1
        if server.fail_after is not None and server.answered > server.fail_after:
            return 500, b'{"error": {"message": "model overloaded"}}'
        prompt = body["messages"][-1]["content"]
        text = f"Which detail does the record give here, number {len(prompt) % 97}?"
        content = json.dumps({"answer": text, "sources": [], "clarify": ""})
        return 200, json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                                "usage": {"prompt_tokens": 50, "completion_tokens": 12}}).encode()


def test_a_model_failing_mid_way_leaves_the_journal_and_a_rerun_resumes(corpus, tmp_path, capsys, monkeypatch):
    out = tmp_path / "drafted"
    handler: type[BaseHTTPRequestHandler] = _Writer
    llm = ["drafter=llm", "drafter.batch=2", "generator=openai", "generator.max_retries=0", "generator.concurrency=1",
           "n=8", *FAST]
    with serving(handler, answered=0, fail_after=3) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert main(["draft", str(corpus), "--out", str(out), f"generator.base_url={url}", *llm]) == 2
        err = capsys.readouterr().err
        assert "model overloaded" in err or "500" in err
        assert "drafts are journaled" in err and "run the same command again" in err
        journaled = _rows(out / "drafts.jsonl")
        assert 1 <= len(journaled) <= 3
        assert not (out / "questions.jsonl").exists() and not (out / "dataset.yaml").exists()
        server.fail_after, before = None, len(server.requests)  # the model answers again
        assert main(["draft", str(corpus), "--out", str(out), f"generator.base_url={url}", *llm]) == 0
        asked = len(server.requests) - before
    assert f"{8 - len(journaled)} now, {len(journaled)} from drafts.jsonl" in capsys.readouterr().out
    assert asked == 8 - len(journaled)  # what was journaled was not asked again
    drafts = _rows(out / "drafts.jsonl")
    assert len(drafts) == 8 and {d["id"] for d in journaled} <= {d["id"] for d in drafts}
    assert all(d["drafter"] == "llm" for d in drafts)
    assert main(["validate", str(out)]) == 0


def test_plan_prints_the_calls_and_writes_nothing(corpus, tmp_path, capsys):
    out = tmp_path / "drafted"
    assert main(["draft", str(corpus), "--out", str(out), "drafter=llm", "generator=openai",
                 "generator.base_url=http://127.0.0.1:9", "generator.model=example-api-llm", "+prices=example", "n=6",
                 "--plan", *FAST]) == 0
    said = capsys.readouterr().out
    assert "plan: 6 drafts" in said and "6 calls" in said and "at most $" in said
    assert not out.exists()


def test_a_model_whose_drafts_are_all_dropped_exits_2_with_the_reasons_and_no_dataset(corpus, tmp_path, capsys):
    """The hostile endpoint's good reply ("As the sources say [1].") is no question: every draft is
    dropped, each with its reasons, and no dataset file is written (a set of no questions is none)."""
    from tests.servers import hostile

    out = tmp_path / "drafted"
    with hostile(lambda h, good: h.send(200, json.dumps(good).encode()), broken=None) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert main(["draft", str(corpus), "--out", str(out), "drafter=llm", "generator=openai", "n=4",
                     f"generator.base_url={url}", *FAST]) == 2
    err = capsys.readouterr().err
    assert "no draft of 4 was kept" in err and "length_language 4" in err and "-- fix:" in err
    drafts = _rows(out / "drafts.jsonl")
    assert len(drafts) == 4 and all(not d["kept"] and "length_language" in d["dropped_by"] for d in drafts)
    assert not (out / "questions.jsonl").exists() and not (out / "dataset.yaml").exists()


def test_the_llm_budget_stops_the_drafting_with_the_journal_kept(corpus, tmp_path, capsys):
    out = tmp_path / "drafted"
    with serving(_Writer, answered=0, fail_after=None) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        assert main(["draft", str(corpus), "--out", str(out), "drafter=llm", "drafter.batch=2", "generator=openai",
                     f"generator.base_url={url}", "n=6", "budget.max_llm_calls=2", *FAST]) == 2
        assert len(server.requests) == 2
    err = capsys.readouterr().err
    assert "budget reached" in err and "raise budget.max_llm_calls" in err
    assert len(_rows(out / "drafts.jsonl")) == 2 and not (out / "questions.jsonl").exists()


def test_an_out_folder_of_something_else_or_inside_the_corpus_exits_2_untouched(corpus, tmp_path, capsys):
    other = tmp_path / "results"
    other.mkdir()
    (other / "report.html").write_text("mine")
    assert main(["draft", str(corpus), "--out", str(other), "n=4", *FAST]) == 2
    assert "holds other files than a draft's (report.html)" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["report.html"]
    assert main(["draft", str(corpus), "--out", str(corpus / "drafted"), "n=4", *FAST]) == 2
    assert "is inside the corpus" in capsys.readouterr().err and not (corpus / "drafted").exists()


def test_the_summary_says_how_many_were_dropped_and_no_line_passes_120_characters(corpus, tmp_path, capsys):
    """Piped to a file, no line of draft's report or --help is over 120 characters (the 'written:' line was
    over 200, --help's description 196); the summary says how many drafts were dropped (it gave the per-filter counts only, whose
    sum counts a draft once per filter that dropped it) and the figures are dataset.yaml's."""
    import yaml

    out = tmp_path / "drafted"
    assert main(["draft", str(corpus), "--out", str(out), "n=10", "filters.max_words=14", *FAST]) == 0
    said = capsys.readouterr()
    counts = yaml.safe_load((out / "dataset.yaml").read_text())["drafted"]["counts"]
    assert f"drafted {counts['drafted']} " in said.out and f"kept {counts['kept']} (" in said.out
    assert counts["dropped"] and f"dropped {counts['dropped']} (by filter" in said.out
    with pytest.raises(SystemExit):
        main(["draft", "--help"])
    helped = capsys.readouterr().out
    for text in (said.out, said.err, helped):
        assert all(len(line) <= 120 for line in text.splitlines()), text


def test_a_folder_of_unsupported_files_names_their_kinds_and_the_kinds_read(tmp_path, capsys):
    """A folder of .csv and .xyz files said 'no documents (.md or .txt) found', as if PDFs and HTML were
    not read either: the message names what the folder holds and every kind a document is read from."""
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "table.csv").write_text("a,b\n1,2\n")
    (folder / "notes.xyz").write_text("not a document")
    out = tmp_path / "drafted"
    assert main(["draft", str(folder), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{folder}: [DOCS_OR_DATASET] no documents to draft from: its 2 file(s) are of other kinds (.csv, .xyz)" \
        in err and ".pdf, .html, .htm, .docx (parsed" in err, err
    assert not out.exists()
