"""The plan's own logic (rag_bench/search/plan.py, plan_probe.py, runner/throughput.py): its money,
time and mode arithmetic, the throughput history, and the read-only cache lookups -- the CLI
end to end is tests/search/test_plan_cli.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from rag_bench.embedding.cache import EmbeddingCache, text_key
from rag_bench.errors import ConfigError
from rag_bench.evaluation.prices import ModelPrice, Prices
from rag_bench.runner import throughput
from rag_bench.runner.throughput import Rates, Sample, added, rates, sample_of
from rag_bench.search.plan import EmbedWork, InMemory, JudgeWork, Plan, PromptWork, duration, money, render
from rag_bench.search.plan_probe import ExactRefused, Ledger, PlanEmbedder, _calls_each, _refusal, make, stored_keys
from tests.embedding.test_cache import put_vectors


def plan(**kw) -> Plan:
    base = dict(command="rag-bench run -m x", cells=4, done=1, chunkings=2, indexes=2, questions=10)
    return Plan(**{**base, **kw})


API = PromptWork("openai:api-llm", "api-llm", True, new=20, cached=5, bound=10, input_tokens=4000,
                 bound_input_tokens=2000, max_tokens=100)
LOCAL_EMB = EmbedWork("minilm:all-MiniLM-L6-v2", "all-MiniLM-L6-v2", True, new=300, cached=100)


def test_money_prices_an_api_generator_by_tokens_and_a_local_embedder_by_measured_seconds():
    prices = Prices(0.36, (("all-MiniLM-L6-v2", ModelPrice()),
                           ("api-llm", ModelPrice(usd_per_1m_input_tokens=1.0, usd_per_1m_output_tokens=4.0))))
    got = dict(money(plan(embedders=(LOCAL_EMB,), prompts=(API,)), prices,
                     Rates(per_text={"minilm:all-MiniLM-L6-v2": 0.01})))
    # 300 texts x 0.01 s = 3 s at $0.36/h = $0.0003
    assert got["embedder minilm:all-MiniLM-L6-v2"].startswith("$0.0003 (local: 300 texts x 10.0 ms")
    # 4,000 input tokens x $1/1M + 20 x 100 output tokens x $4/1M = 0.004 + 0.008; the bound: 0.002 + 0.004
    text = got["generator openai:api-llm"]
    assert text.startswith("$0.0120 (input ~4,000 tokens, estimated; output at most 2,000 tokens)")
    assert "at most $0.0060 for the bounded prompts" in text


def test_an_unpriced_model_or_an_unmeasured_local_stage_is_never_0():
    prices = Prices(None, ())  # a table with no entry and no $/hour
    got = dict(money(plan(embedders=(LOCAL_EMB,), prompts=(API,), judges=(JudgeWork("ragas", 30, 0),)), prices,
                     Rates()))
    assert got["embedder minilm:all-MiniLM-L6-v2"] == "unpriced (set prices.models.all-MiniLM-L6-v2)"
    assert got["generator openai:api-llm"] == "unpriced (set prices.models.api-llm)"
    assert got["judge ragas"].startswith("not estimated")
    hourly = Prices(0.2, ())
    local = EmbedWork("dense", "dense", False, new=5, cached=0)
    assert dict(money(plan(embedders=(local,)), hourly, Rates()))["embedder dense"] == \
        "local at $0.2/h: no measured throughput yet"
    assert all("$0.00" not in v for v in got.values())
    assert money(plan(), None, Rates())[0][1].startswith("no price table")


def test_duration_adds_the_measured_parts_and_names_the_missing_ones():
    total, lines = duration(plan(embedders=(LOCAL_EMB,), prompts=(API,)),
                            Rates(per_text={"minilm:all-MiniLM-L6-v2": 0.02}, per_cell=0.5))
    assert total == 300 * 0.02 + 3 * 0.5  # 3 cells to compute
    assert lines[0] == "~7.5 s in all (the parts measured)"
    assert "generating at most 30 answers (openai:api-llm): no measured throughput yet" in lines
    assert duration(plan(embedders=(LOCAL_EMB,)), Rates()) == (None, [
        "embedding 300 texts (minilm:all-MiniLM-L6-v2): no measured throughput yet",
        "3 cells' own work (chunking, indexing, retrieval, scoring): no measured throughput yet"])


def test_duration_times_the_transforms_and_the_judges_calls_and_not_the_served_cells():
    rewrite = PromptWork("openai:x (query=rewrite)", "x", True, new=6, cached=0, bound=0, input_tokens=60,
                         bound_input_tokens=0, max_tokens=None, role="query")
    judge = JudgeWork("ragas:x", at_most=10, bound=0, calls_each=2)
    total, lines = duration(plan(cells=4, done=1, reused=2, prompts=(rewrite,), judges=(judge,)),
                            Rates(per_cell=1.0, per_transform_call={"openai:x (query=rewrite)": 0.5},
                                  per_judge_call={"ragas:x": 0.25}))
    assert total == 6 * 0.5 + 20 * 0.25 + 1 * 1.0  # one cell to compute: DONE and served take no time
    assert "transforming 6 query transform calls (openai:x (query=rewrite)): 3.0 s (500.0 ms/call)" in lines
    assert lines[0].startswith("at most") and any(x.startswith("judging at most 20 calls (ragas:x)") for x in lines)


def test_the_history_keeps_transform_and_judge_calls_apart_from_the_cells_time():
    cfg = {"generator": {"name": "openai", "model": "x"}, "query": {"name": "rewrite"},
           "judge": {"name": "ragas", "model": "x"}, "embedder": {"name": "minilm"}}
    metrics = {"counts": {"questions": 4}, "query": {"calls": 1.0, "ms": 500.0}, "latency": {"query_s": 2.0},
               "cost": {"judge_calls": 8, "judge_s": 4.0}}
    got = rates(added({}, sample_of(cfg, metrics, 10.0)))
    assert got.per_transform_call == {"openai:x (query=rewrite)": 0.5} and got.per_judge_call == {"ragas:x": 0.5}
    assert got.per_cell == 10.0 - 2.0 - 4.0


def test_a_plan_with_nothing_to_compute_takes_no_time():
    assert duration(plan(done=4), Rates()) == (0.0, ["nothing to compute"])


def test_mode_bounds_use_the_modes_arithmetic():
    from rag_bench.search import halving, optuna_search, staged
    from rag_bench.search.grid import Grid

    assert Grid().bound([["k=3"]] * 4, 10, ()) == ["search=grid: 4 cells x 10 questions = 40 cell-questions"]
    lines = halving.bound_lines(4, 10, [3, 5, 10])
    # at least: 4 cells x 3 questions, then the leader alone on the 7 questions new to the later rounds;
    # at most: no cell pruned, each question once per cell (rounds run only their new questions): the grid's
    assert "19 to 40 cell-questions in 3 rounds of 3, 5, 10 questions (the grid: 40)" in lines[0]
    grid = [[f"a={a}", f"b={b}", f"c={c}"] for a in "xyz" for b in "xy" for c in "xy"]
    assert staged.Staged().bound(grid, 10, ())[0].startswith(
        "search=staged: at most 5 of the grid's 12 cells (50 cell-questions")
    assert staged.bound_lines(12, 10, [3, 2, 2]) == staged.Staged().bound(grid, 10, ())
    assert optuna_search.Optuna(n_trials=12).bound([["k=3"]] * 36, 10, ())[0].startswith(
        "search=optuna: at most 12 of the grid's 36 cells")


def test_a_search_strategy_is_built_as_a_component_is():
    from rag_bench.search.base import strategy
    from rag_bench.search.halving import Halving

    built = strategy(OmegaConf.create({"_target_": "rag_bench.search.halving.Halving", "prune": "rank"}))
    assert isinstance(built, Halving) and built.prune == "rank"
    with pytest.raises(ConfigError, match=r"search.prun is not a parameter .* \(did you mean search.prune\?\)"):
        strategy(OmegaConf.create({"_target_": "rag_bench.search.halving.Halving", "prun": "rank"}))
    with pytest.raises(ConfigError, match="does not implement the search stage: missing check, bound, run"):
        strategy(OmegaConf.create({"_target_": "rag_bench.domain.Question"}))
    with pytest.raises(ConfigError, match="fix: add search=grid"):
        strategy(None)


def test_render_is_a_small_table_with_every_part():
    out = render(plan(embedders=(LOCAL_EMB,), prompts=(API,), mode_lines=("search=grid: x",)), None, Rates())
    assert "cells: 4 in the grid, 1 already DONE, 3 to compute" in out
    assert "minilm:all-MiniLM-L6-v2  300     100" in out
    assert "openai:api-llm   20       5                 10" in out
    assert "judge: none" in out and "no measured throughput yet" in out and "search=grid: x" in out
    each = _calls_each(repr({"name": "ragas", "metrics": ["faithfulness", "response_relevancy"], "samples": 1}))
    judged = render(plan(judges=(JudgeWork("ragas:local", 12, 0, each),)), None, Rates())
    assert "judge: ragas:local: at most 12 judgements x 2 calls" in judged and "= 24 " in judged


def test_throughput_history_sums_what_cells_measured(tmp_path, monkeypatch):
    cfg = OmegaConf.create({"embedder": {"name": "minilm", "model": "all-MiniLM-L6-v2", "backend": "torch"},
                            "generator": {"name": "openai", "model": "local"}})
    metrics = {"cost": {"embeddings_computed": 40, "embed_s": 2.0, "generations_cached": 2},
               "latency": {"generate_s": 4.0}, "counts": {"questions": 10}}
    s = sample_of(cfg, metrics, wall_s=7.0)
    assert s == Sample("minilm:all-MiniLM-L6-v2", 40, 2.0, "openai:local", 8, 4.0, 1.0)
    r = rates(added(added({}, s), s))
    assert r.per_text == {"minilm:all-MiniLM-L6-v2": 0.05} and r.per_answer == {"openai:local": 0.5}
    assert r.per_cell == 1.0
    no_answers = sample_of(cfg, {"cost": {"embeddings_computed": 0, "embed_s": 0.0}}, wall_s=1.0)
    assert no_answers.generator is None and added({}, no_answers)["embedders"] == {}
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    throughput.record(cfg, metrics, 7.0)
    throughput.record(cfg, metrics, 7.0)
    assert rates(throughput.read()) == r
    (tmp_path / "cache" / throughput.FILE).write_text("{not json")
    assert throughput.read() == {}  # an unreadable history is no history, never an error
    (tmp_path / "cache" / throughput.FILE).write_text('{"cells": {"cells": 1}, "embedders": {"a": 1}}')
    assert rates(throughput.read()) == Rates()  # JSON of another shape: no entry, not a KeyError/AttributeError
    throughput.record(cfg, metrics, 7.0)  # and the history is written again
    assert rates(throughput.read()) == rates(added({}, s))


def test_a_damaged_cache_file_is_the_runs_data_error_not_a_traceback(tmp_path):
    from rag_bench.errors import DataError

    (tmp_path / "embeddings.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataError):
        stored_keys(tmp_path / "embeddings.sqlite", "vectors", ["a" * 64])


def test_the_plan_runs_only_the_shipped_local_rerankers():
    from rag_bench.components import Null
    from rag_bench.reranking.cross_encoder import CrossEncoderReranker
    from rag_bench.reranking.dense import DenseReranker
    from rag_bench.reranking.mmr import MmrReranker
    from rag_bench.reranking.rerank_api import RerankApiReranker
    from rag_bench.search.plan_probe import reranks_locally

    class Mine:  # a reranker of the user's: it may call a paid service
        def rerank(self, *args, **kwargs):
            raise AssertionError("a plan called it")

    local = [object.__new__(c) for c in (CrossEncoderReranker, DenseReranker, MmrReranker)]
    assert all(reranks_locally(r) for r in local)
    assert not reranks_locally(object.__new__(RerankApiReranker)) and not reranks_locally(Mine())
    assert reranks_locally(Null())


def test_with_shards_only_the_plan_does_not_count_sqlites_vectors_as_cached(tmp_path, monkeypatch):
    from rag_bench.search import plan_probe

    store = EmbeddingCache(tmp_path / "embeddings.sqlite")
    put_vectors(store, [("a" * 64, np.ones(4, np.float32))])
    store.close()
    assert list(plan_probe.VectorLookup(tmp_path).get(["a" * 64])) == ["a" * 64]
    monkeypatch.setattr(plan_probe, "shards_only", lambda: True)  # RAG_BENCH_CACHE_SHARDS=1: the run reads shards only
    assert plan_probe.VectorLookup(tmp_path).get(["a" * 64]) == {}


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_stored_keys_reads_a_store_and_leaves_its_folder_byte_identical(tmp_path):
    store = EmbeddingCache(tmp_path / "embeddings.sqlite")
    put_vectors(store, [("a" * 64, np.ones(4, np.float32)), ("b" * 64, np.zeros(4, np.float32))])
    store.close()
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:  # a row whose bytes do not match its checksum
        conn.execute("UPDATE vectors SET data = ? WHERE key = ?", (b"\0" * 16, "a" * 64))
    conn.close()
    before = files(tmp_path)
    assert not any(name.endswith(("-wal", "-shm")) for name in before)
    got = stored_keys(tmp_path / "embeddings.sqlite", "vectors", ["a" * 64, "b" * 64, "c" * 64])
    assert list(got) == ["b" * 64]  # the corrupt row is a miss, as the cache's own lookup makes it
    assert files(tmp_path) == before
    assert stored_keys(tmp_path / "absent.sqlite", "vectors", ["a" * 64]) == {} and not (tmp_path / "absent.sqlite").exists()


class Inner:
    """An embedder as the plan sees one: identity, prefixes, a cache folder; encoding it must never."""

    def __init__(self, folder: Path) -> None:
        self.identity, self.query_prefix, self.document_prefix = "model@1", "q: ", ""
        self._cache_path = folder / "embeddings.sqlite"

    def embed_documents(self, texts):
        raise AssertionError("the plan encoded a text")

    embed_queries = embed_documents


def test_plan_embedder_answers_from_the_cache_and_counts_the_rest_as_new(tmp_path):
    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    cached = np.arange(8, dtype=np.float32) + 1
    put_vectors(cache, [(text_key("model@1", "", "old chunk"), cached), (text_key("model@1", "q: ", "why?"), cached)])
    cache.close()
    ledger = Ledger()
    emb = PlanEmbedder(Inner(tmp_path), "m", ledger)
    emb.prime(["why?"])
    docs = emb.embed_documents(["old chunk", "new chunk", "new chunk"])
    assert docs.shape == (3, 8) and np.allclose(docs[0], cached / np.linalg.norm(cached))
    assert ledger.fakes == 2  # the stand-ins: the cell that received them is inexact
    emb.embed_queries(["why?", "how?"])
    assert ledger.new["m"] == {text_key("model@1", "", "new chunk"), text_key("model@1", "q: ", "how?")}
    assert len(ledger.cached["m"]) == 2
    assert emb.embed_queries([]).shape == (0, 8)



def test_render_of_an_exact_plan_says_what_it_embedded_in_memory():
    out = render(plan(embedders=(LOCAL_EMB,), in_memory=InMemory(300, 2.5, 4.0)), None, Rates())
    assert out.startswith("Plan (exact: missing vectors embedded in memory, nothing written)")
    assert "exact: embedded 300 texts in memory in 2.5 s (+ 4.0 s loading the model); not cached" in out
    assert "in memory" not in render(plan(embedders=(LOCAL_EMB,)), None, Rates())


@pytest.mark.slow
def test_exact_plan_embedder_encodes_missing_texts_in_memory_as_the_embedder_does(tmp_path):
    """An exact plan's vectors for texts not cached are the real embedder's (the packaged model), each
    encoded once, none stored: the cache folder is byte-identical."""
    from rag_bench.embedding.sentence_transformer import SentenceTransformerEmbedder

    real = SentenceTransformerEmbedder(query_prefix="q: ", cache_dir=str(tmp_path / "real"))
    want = real.embed_documents(["old chunk", "new chunk", "other chunk"])
    want_q = real.embed_queries(["why?", "how?"])
    folder = tmp_path / "plan"
    cache = EmbeddingCache(folder / "embeddings.sqlite")
    put_vectors(cache, [(text_key(real.identity, "", "old chunk"), real.encode_raw(["old chunk"])[0])])
    cache.close()
    before = files(folder)
    ledger = Ledger(exact=True)
    emb = PlanEmbedder(SentenceTransformerEmbedder(query_prefix="q: ", cache_dir=str(folder)), "m", ledger)
    emb.prime(["why?", "how?"])
    got = emb.embed_documents(["old chunk", "new chunk", "new chunk", "other chunk"])
    assert np.allclose(got[[0, 1, 3]], want, atol=1e-6) and np.array_equal(got[1], got[2])
    assert np.allclose(emb.embed_queries(["why?", "how?"]), want_q, atol=1e-6)
    assert ledger.fakes == 0 and ledger.encoded == 4 and ledger.encode_s > 0  # "new chunk" encoded once
    assert len(ledger.new["m"]) == 4 and len(ledger.cached["m"]) == 1  # the counts: as a fast plan's
    emb.embed_documents(["new chunk"])
    assert ledger.encoded == 4  # asked again: from memory
    assert files(folder) == before


def test_exact_plan_never_calls_a_remote_embedder_and_says_what_it_would_send(tmp_path):
    """A remote (paid per text) embedder's missing texts are counted and refused, not sent: the
    endpoint here is closed, so a call would raise an EndpointError."""
    from rag_bench.embedding.openai_compat import OpenAIEmbedder

    remote = OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", model="paid", cache_dir=str(tmp_path))
    ledger = Ledger(exact=True)
    emb = PlanEmbedder(remote, "openai:paid", ledger)
    emb.embed_documents(["a", "b", "a"])
    assert ledger.refused == {"openai:paid": {text_key(remote.identity, "", t) for t in "ab"}}
    assert ledger.encoded == 0 and ledger.fakes == 3
    why = str(ExactRefused(_refusal(ledger.refused, {"openai:paid": remote.url}, ["embedder=openai"])))
    assert "2 texts not cached for embedder openai:paid (http://127.0.0.1:9/v1/embeddings)" in why
    assert "-- fix: `rag-bench run -m ... --plan`" in why and "rag-bench embed -m embedder=openai" in why


def test_plan_of_a_pdf_dataset_parses_without_storing_a_parse(tmp_path, monkeypatch):
    """The plan parses documents a parser reads (to know their chunks) and stores no parse: the parse
    cache is read, never written (before the fix, parses.sqlite appeared in the cache folder)."""
    pytest.importorskip("pypdf", reason="the parse extra is not installed (make parse)")
    from tests.e2e.test_parser_sweep import _dataset

    data = _dataset(tmp_path / "normans-pdf")
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    before = files(tmp_path)
    got, _, _ = make([f"dataset.path={data}", "parser=pypdf", "retriever=bm25", "tracking=none",
                      f"output.root={tmp_path / 'out'}"])
    assert files(tmp_path) == before
    assert got.cells == 1 and got.to_compute == 1 and got.chunkings == 1 and sum(e.new for e in got.embedders) == 0
    assert sum(p.new for p in got.prompts) == got.questions > 0  # every question's prompt, none cached


def test_plan_reads_the_parses_the_keyed_parse_cache_holds(tmp_path, monkeypatch):
    """The parse cache's rows carry HMAC checksums under the cache's secret: the plan checks them the
    same way and serves the stored parses (before the fix it compared plain checksums, took every
    parse row for damaged and parsed every document again)."""
    pytest.importorskip("pypdf", reason="the parse extra is not installed (make parse)")
    from rag_bench.parsing import files as parsing
    from rag_bench.parsing.pdf_pypdf import PypdfParser
    from tests.e2e.test_parser_sweep import _dataset

    data = _dataset(tmp_path / "normans-pdf")
    monkeypatch.setenv("RAG_BENCH_CACHE", str(tmp_path / "cache"))
    pdfs = sorted((data / "docs").glob("*.pdf"))
    parsing.parse_files(pdfs, PypdfParser(), store=parsing.cache_store())  # the run's own parses, cached

    def never(*args, **kwargs):
        raise AssertionError("the plan parsed a document the parse cache holds")

    monkeypatch.setattr(parsing, "parse_isolated", never)
    got, _, _ = make([f"dataset.path={data}", "parser=pypdf", "retriever=bm25", "tracking=none",
                      f"output.root={tmp_path / 'out'}"])
    assert got.cells == 1 and got.questions > 0
    rows = sqlite3.connect(tmp_path / "cache" / "parses.sqlite").execute("SELECT key FROM parses").fetchall()
    keys = [r[0] for r in rows]
    assert len(stored_keys(tmp_path / "cache" / "parses.sqlite", "parses", keys, keyed=True)) == len(keys) > 0
    assert stored_keys(tmp_path / "cache" / "parses.sqlite", "parses", keys) == {}  # a plain checksum: no row


def test_the_plan_and_the_budget_share_one_dollar_bound_and_the_plan_says_if_the_budget_covers_it():
    """Issue 56 item 5: the plan's $0.12 and the budget's per-cell bound ($0.39 for the grid) disagreed
    3x. The plan prints the bound budget.usd checks (each request's bytes as its input tokens,
    max_tokens as output) beside its estimate, and whether budget.usd covers the grid."""
    from rag_bench import budget
    from rag_bench.evaluation.prices import token_usd
    from rag_bench.search.plan import budget_bound, budget_lines

    entry = ModelPrice(usd_per_1m_input_tokens=2.0, usd_per_1m_output_tokens=8.0)
    prices = Prices(None, (("api", entry),))
    messages = [{"role": "user", "content": "Question: how long may items be returned? Context: [1] thirty days"}]
    sizes = [budget.request_bytes(messages)] * 40  # 40 new prompts of that request
    work = PromptWork("openai:api", "api", True, 40, 0, 0, 40 * 20, 0, 64, input_bytes=sum(sizes))
    # the run's own check: budget.hold bounds a batch by the same bytes and max_tokens at the same prices
    assert budget_bound(work, entry) == pytest.approx(float(token_usd(entry, sum(sizes), 40 * 64)))
    bound = budget_bound(work, entry)
    covered = Plan("x", 4, 0, 1, 1, 10, prompts=(work,), budget_usd=1.0)
    assert bound > 0 and budget_lines(covered, prices) == ["  budget: budget.usd=1 covers the grid's bound $0.0284"]
    short = Plan("x", 4, 0, 1, 1, 10, prompts=(work,), judges=(JudgeWork("ragas:api", 40, 0),), budget_usd=0.001)
    said = render(short, prices, Rates())
    assert "budget.usd=0.001 does NOT cover the grid's bound" in said and "fix: budget.usd=0.03" in said, said
    assert "charged after: judge ragas:api" in said and "the budget's bound" in said
    assert budget_lines(Plan("x", 4, 0, 1, 1, 10, prompts=(work,)), prices) == []  # no budget.usd: nothing said
