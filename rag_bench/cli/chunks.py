"""``rag-bench chunks``: print chunks as JSON lines (stdout) and stats (stderr)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from rag_bench.cli.common import fail, missing_option, say
from rag_bench.cli.table import Command
from rag_bench.errors import RagBenchError
from rag_bench.untrusted import visible


def run(argv: list[str]) -> int:
    """``rag-bench chunks`` with the arguments ``argv``; its exit code."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rag_bench.data.loader import load_dataset
    from rag_bench.runner.config import CONF_DIR, check_group_overrides, register_configs
    from rag_bench.runner.main import chunk_corpus

    p = argparse.ArgumentParser(prog="rag-bench chunks", description="Chunk a dataset with one chunker config "
                                "and print the chunks as JSON lines (stdout) and their stats (stderr).",
                                epilog="example: rag-bench chunks datasets/kettleby chunker=section "
                                "chunker.max_chars=600")
    p.add_argument("dataset", help="dataset folder")
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. chunker=fixed chunker.size=500")
    p.add_argument("--stats-only", action="store_true", help="print only the stats")
    p.add_argument("--tiny", type=int, default=50, help="chunks shorter than this many chars count as tiny")
    a = p.parse_args(argv)
    register_configs()
    try:
        check_group_overrides(a.overrides)
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=a.overrides)
        ds = load_dataset(a.dataset)
        # The sweep's chunking stage (its contracts checked: spans inside their documents, ids unique).
        chunks = chunk_corpus(cfg, ds)
    except RagBenchError as exc:
        return fail(exc)
    except (HydraException, OmegaConfBaseException) as exc:
        return fail(missing_option(exc) or f"configuration: {exc} -- fix: options are in {CONF_DIR}/chunker/")
    out = sys.stdout
    if not a.stats_only:
        for c in chunks:
            out.write(visible(json.dumps({"chunk_id": c.chunk_id, "doc_id": c.doc_id, "start": c.start, "end": c.end,
                                  "heading_path": list(c.heading_path), "parent_id": c.parent_id,
                                  "is_parent": c.is_parent, "text": c.text}, ensure_ascii=False)) + "\n")
    searchable = [c.length for c in chunks if not c.is_parent]
    stats = {"chunker": cfg.chunker.name, "count": len(searchable), "parents": sum(c.is_parent for c in chunks),
             "min": min(searchable, default=0), "median": statistics.median(searchable) if searchable else 0,
             "max": max(searchable, default=0), f"tiny(<{a.tiny})": sum(n < a.tiny for n in searchable)}
    say("stats: " + " ".join(f"{k}={v}" for k, v in stats.items()), file=sys.stderr)
    return 0


COMMAND = Command("chunks", "DATASET chunker=NAME ...", "print chunks as JSON lines (stdout) and stats (stderr)", run)
