"""``rag-bench draft``: draft golden questions from a corpus, filter them with reasons, and write the
kept ones as a dataset folder (docs/drafting.md)."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from rag_bench.cli.common import config_message, fail, missing_option, say
from rag_bench.cli.table import Command
from rag_bench.errors import ConfigError, DataError, Problem, RagBenchError

EPILOG = """\
DOCS_OR_DATASET is a dataset folder (its docs/ are read) or a folder of documents (.md, .txt, and
.pdf/.html/.docx through parser=...). DIR gets drafts.jsonl (every draft with each filter's verdict)
and, when the run finishes, the kept drafts as a dataset (docs/, questions.jsonl, dataset.yaml) that
`rag-bench validate DIR` and `rag-bench run dataset.path=DIR` read. Run again into the same DIR to
resume: drafts already in drafts.jsonl are not drafted again.

examples:
  rag-bench draft datasets/policies --out drafted/
  rag-bench draft docs/ --out drafted/ n=40 seed=1 types='{factoid: 0.7, unanswerable: 0.3}'
  rag-bench draft docs/ --out drafted/ drafter=llm generator=xllamacpp n=20 --plan
"""


def _compose(overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.runner.config import CONF_DIR, check_group_overrides, register_configs

    register_configs()
    check_group_overrides(overrides)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return compose("draft", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(missing_option(exc) or f"configuration: {config_message(exc, overrides, 'draft')}\n  -- fix: the keys "
                          f"are in {CONF_DIR}/draft.yaml, the drafters in {CONF_DIR}/drafter/") from exc
    finally:
        GlobalHydra.instance().clear()


def settings_of(cfg: Any) -> Any:
    """The drafting settings, checked: n > 0, known types with shares >= 0 (one > 0), per_document >= 1."""
    from rag_bench.drafting.records import TYPES, Settings

    n = cfg.n
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ConfigError(f"n={n!r}: the number of drafts must be an integer > 0 -- fix: e.g. n=100")
    types = cfg.types
    if not hasattr(types, "items") or not len(types):
        raise ConfigError(f"types={types!r} must map types to shares -- fix: e.g. types='{{factoid: 0.7, "
                          "unanswerable: 0.3}'")
    shares = []
    for name, share in types.items():
        if name not in TYPES:
            import difflib

            near = difflib.get_close_matches(str(name), TYPES, n=1)
            raise ConfigError(f"types.{name}: unknown type" + (f" (did you mean {near[0]}?)" if near else "")
                              + f" -- fix: the types are {', '.join(TYPES)}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) or share < 0:
            raise ConfigError(f"types.{name}={share!r}: a share must be a number >= 0 -- fix: e.g. types.{name}=0.2")
        shares.append((str(name), float(share)))
    if not any(s > 0 for _, s in shares):
        raise ConfigError("types: every share is 0 -- fix: give at least one type a share > 0, e.g. types.factoid=1")
    quota = cfg.per_document
    if quota is not None and (isinstance(quota, bool) or not isinstance(quota, int) or quota < 1):
        raise ConfigError(f"per_document={quota!r} must be an integer >= 1 or null -- fix: e.g. per_document=20")
    if isinstance(cfg.seed, bool) or not isinstance(cfg.seed, int):
        raise ConfigError(f"seed={cfg.seed!r} must be an integer -- fix: e.g. seed=0")
    return Settings(n, tuple(shares), cfg.seed, quota)


def thresholds_of(cfg: Any) -> Any:
    """The filters' settings, checked against :class:`~rag_bench.drafting.filters.base.Thresholds`."""
    import dataclasses

    from omegaconf import OmegaConf

    from rag_bench.drafting.filters.base import Thresholds

    given = OmegaConf.to_container(cfg.filters)
    assert isinstance(given, dict)
    names = [f.name for f in dataclasses.fields(Thresholds)]
    for raw, value in given.items():
        key = str(raw)
        if key not in names:
            raise ConfigError(f"filters.{key!s} is not a filter setting -- fix: use one of {names}")
        default = getattr(Thresholds(), key)
        if isinstance(value, bool) or not isinstance(value, type(default) if not isinstance(default, float)
                                                     else (int, float)) or (not isinstance(value, str) and value <= 0):
            raise ConfigError(f"filters.{key}={value!r} must be a {type(default).__name__} > 0 -- fix: e.g. "
                              f"filters.{key}={default}")
    return Thresholds(**{str(k): v for k, v in given.items()})


def _out_dir(name: str, corpus: Any) -> Path:
    from rag_bench.drafting.journal import DATASET_FILES, JOURNAL

    out = Path(name).expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(str(Problem(str(out), 0, "--out", "is a file, not a folder", "pass a folder (made if missing)")))
    if out.resolve().is_relative_to(corpus.docs_dir.resolve()) or out.resolve() == corpus.root.resolve():
        raise ConfigError(str(Problem(str(out), 0, "--out", f"is inside the corpus ({corpus.root})",
                                      "pass a folder outside it, e.g. --out drafted/")))
    if out.is_dir():
        ours = {JOURNAL, *DATASET_FILES, "docs", "docs.jsonl"}
        other = sorted(p.name for p in out.iterdir() if p.name not in ours and not p.name.startswith("."))
        if other:
            raise ConfigError(str(Problem(str(out), 0, "--out", f"holds other files than a draft's ({', '.join(other[:3])})",
                                          "pass a new or empty folder, or the folder of an earlier draft to resume it")))
    return out


def _plan(slots: list[Any], drafter: Any, cfg: Any, notes: dict[str, str]) -> None:
    from collections import Counter

    from rag_bench.generation.context import count_tokens

    by = Counter(s.kind for s in slots)
    say(f"plan: {len(slots)} drafts ({', '.join(f'{k} {v}' for k, v in sorted(by.items()))})", wrap=True)
    for kind, note in notes.items():
        say(f"note: {kind}: {note}", wrap=True)
    if not hasattr(drafter, "prompt"):
        say("drafter=templates: no model calls, no cost")
        return
    tokens_in = sum(count_tokens(p.system + p.user) for p in (drafter.prompt(s) for s in slots))
    tokens_out = len(slots) * int(getattr(drafter.generator, "max_tokens", 0) or 0)
    from rag_bench.evaluation.prices import from_config, rate

    got, missing = rate(from_config(cfg), "generator")
    cost = (f"at most ${got.usd(tokens_in, tokens_out, 0.0):.4f}" if got is not None and got.by_tokens else
            "priced by the hour of this machine: the seconds are not estimated" if got is not None else
            f"unpriced ({missing})" if missing else "unpriced (set prices.*, e.g. +prices=example)")
    say(f"model {drafter.model}: {len(slots)} calls (fewer when the generation cache has them), ~{tokens_in} tokens in, "
        f"at most {tokens_out} out\n  cost: {cost}", wrap=True)


def run(argv: list[str]) -> int:
    """``rag-bench draft`` with the arguments ``argv``; its exit code."""
    p = argparse.ArgumentParser(
        prog="rag-bench draft", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
        description="Draft questions grounded in quotes of a corpus's parse (factoid, multi_hop, unanswerable,\n"
        "clarify, follow_up), keep or drop each with every filter's reason, and write the kept ones as a dataset.")
    p.add_argument("path", metavar="DOCS_OR_DATASET", help="a dataset folder or a folder of documents")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="n=100 seed=0 per_document=20 types.factoid=0.5 drafter=llm generator=xllamacpp "
                   "filters.k=5 parser=pdfplumber ... (rag_bench/conf/draft.yaml)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder drafts.jsonl and the dataset go to")
    p.add_argument("--plan", action="store_true", help="print the drafts to write, the model calls, tokens and "
                   "cost, and stop (nothing is written, no model is called)")
    a = p.parse_intermixed_args(argv)  # overrides before or after --out
    started = time.perf_counter()
    try:
        return _run(a, started)
    except RagBenchError as exc:
        return fail(exc)


def _run(a: argparse.Namespace, started: float) -> int:
    from rag_bench import budget
    from rag_bench.components import is_null
    from rag_bench.data.native import _Q_FIELDS
    from rag_bench.drafting import journal
    from rag_bench.drafting.corpus import Index, read_corpus
    from rag_bench.drafting.filters.base import FilterInput
    from rag_bench.drafting.session import DUPLICATE, FILTERS, draft_and_filter, slots_for
    from rag_bench.runner.config import build, wants

    cfg = _compose(a.overrides)
    settings = settings_of(cfg)
    thresholds = thresholds_of(cfg)
    from rag_bench.drafting.base import Drafter

    inject: dict[str, Any] = {}
    if wants(cfg.drafter, "drafter", "generator", Drafter):
        if cfg.generator.get("name") == "none":
            raise ConfigError("drafter=llm needs a model -- fix: add generator=xllamacpp (the packaged model) or "
                              "generator=openai generator.base_url=URL generator.model=NAME")
        inject["generator"] = build(cfg.generator, "generator")

    drafter = build(cfg.drafter, "drafter", protocol=Drafter, **inject)
    parser = build(cfg.parser, "parser")
    corpus = read_corpus(Path(a.path).expanduser(), None if str(cfg.parser.get("name")) == "auto" else parser)
    embedder = build(cfg.embedder, "embedder") if "embedder" in cfg and not is_null(cfg.embedder) else None
    takes: dict[str, Any] = {}
    if wants(cfg.retriever, "retriever", "embedder"):  # dense, hybrid: the round trip embeds the chunks
        if embedder is None:
            raise ConfigError(f"retriever={cfg.retriever.get('name')} needs the embedder -- fix: drop ~embedder, or "
                              "retriever=bm25")
        takes["embedder"] = embedder
    index = Index(corpus.documents, build(cfg.chunker, "chunker"), build(cfg.retriever, "retriever", **takes))
    slots, notes = slots_for(corpus, settings, index)
    if a.plan:
        _plan(slots, drafter, cfg, notes)
        return 0
    out = _out_dir(a.out, corpus)
    reader = build(cfg.reader, "generator")
    fields = frozenset(_Q_FIELDS)
    ctx = FilterInput(index, reader, embedder, thresholds, fields)
    out.mkdir(parents=True, exist_ok=True)
    b = cfg.budget
    if b.max_llm_calls is not None or b.usd is not None:
        budget.start(b.max_llm_calls, None, b.usd)
        from rag_bench.evaluation.prices import from_config, rate

        got, _ = rate(from_config(cfg), "generator")
        if got is not None:
            budget.set_rates({"generator": got})
    try:
        outcome = draft_and_filter(out, slots, drafter, ctx)
    except budget.BudgetReached as exc:
        raise ConfigError(f"budget reached ({exc}); the drafts finished are journaled in {out / journal.JOURNAL}, no "
                          "dataset was written -- fix: raise budget.max_llm_calls / budget.usd and run again: it "
                          "resumes") from None
    finally:
        budget.stop()
    journal.write_verdicts(out, outcome.drafts, outcome.verdicts)
    kept = outcome.kept
    dropped = outcome.dropped_by()
    by_type = {t: sum(d.kind == t for d in kept) for t, _ in settings.shares}
    manifest = {
        "name": f"{corpus.root.name}-drafted", "description": f"questions drafted from {corpus.root.name} by "
        f"rag-bench draft ({drafter.identity.get('drafter')}); filtered, not reviewed by a person",
        "source": f"drafted from {corpus.root}",
        "drafted": {"drafter": str(cfg.drafter.name), "model": getattr(drafter, "model", None), "seed": settings.seed,
                    "n": settings.n, "types": dict(settings.shares), "per_document": settings.per_document,
                    "parser": corpus.parser, "filters": {f.name: f is not DUPLICATE or embedder is not None
                                for f in (*FILTERS, DUPLICATE)},
                    "thresholds": {k: v for k, v in vars(thresholds).items()},
                    "counts": {"drafted": len(outcome.drafts), "kept": len(kept),
                               "dropped": len(outcome.drafts) - len(kept), "kept_by_type": by_type,
                               "dropped_by_filter": dict(sorted(dropped.items()))},
                    "notes": notes}}
    if not kept:
        raise DataError(Problem(str(out / journal.JOURNAL), 0, "kept", f"no draft of {len(outcome.drafts)} was kept "
                                f"(dropped by filter: {', '.join(f'{k} {v}' for k, v in sorted(dropped.items()))}); "
                                "each draft's reasons are in this file; no dataset was written",
                                "draft more (n=...), or with another drafter or model (drafter=..., generator=...)"))
    journal.write_dataset(out, corpus, kept, manifest, fields)
    _check(out)
    gone = len(outcome.drafts) - len(kept)
    say(f"drafted {len(outcome.drafts)} ({outcome.drafted_now} now, {outcome.resumed} from {journal.JOURNAL}), kept "
        f"{len(kept)} ({', '.join(f'{k} {v}' for k, v in by_type.items())}), dropped {gone}"
        + (" (by filter, a draft counted under each that dropped it: "
           + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())) + ")" if gone else "")
        + f"; {time.perf_counter() - started:.1f} s", wrap=True)
    for kind, note in notes.items():
        say(f"note: {kind}: {note}", wrap=True)
    say(f"written: {out / journal.JOURNAL} (every draft, its verdicts), {out}/questions.jsonl + dataset.yaml + docs/ "
        f"-- check it: rag-bench validate {out}", file=sys.stderr, wrap=True)
    return 0


def _check(out: Path) -> None:
    """The kept set loads as a dataset (what ``rag-bench validate`` reads); a problem here is ours."""
    from rag_bench.data.loader import load_dataset
    from rag_bench.drafting.journal import clear_dataset

    try:
        load_dataset(out)
    except RagBenchError:
        clear_dataset(out)  # never a dataset that does not load
        raise


COMMAND = Command("draft", "DOCS_OR_DATASET --out DIR [n=N] [drafter=llm generator=...]",
                  "draft questions from a corpus, filter them with reasons, write the kept ones as a dataset", run)
