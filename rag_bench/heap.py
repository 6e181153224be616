"""CPython's cyclic garbage collector tuned for a long batch of cells (issue 57).

A full (oldest-generation) collection walks every object the collector tracks. Once a sweep's
libraries and models are loaded (torch, transformers, pandas, pyarrow, Hydra, MLflow) that is ~1 M
objects in the sweep's process and ~0.3 M in its background process (MLflow's store), and CPython's
default thresholds (700, 10, 10) run such a collection every few hundred thousand survivors.
Measured with ``gc.callbacks`` on the 180-cell squad2-normans grid with MLflow's defaults (f1e7906):
the background process ran 29 full collections of ~0.2 s each (5.6 s; one every ~2 s, mostly
while it unpickled the next cell), and the sweep's closing report, which ran after the launcher's
batch had put the collector back, two of ~1 s each in its MLflow publish.

Within :func:`tuned` what exists on entry is frozen (``gc.freeze``: moved to the permanent
generation, which no collection walks) and the young generation is collected after
:data:`YOUNG_THRESHOLD` allocations instead of 700; :func:`freeze_loaded` adds what exists later,
when what stays loaded has been loaded: a model (the grid's first cell may load none, so the batch's
start froze none of torch's ~0.4 M objects: two full collections of 0.3-0.5 s walked them), and the
background process's first job (MLflow, pyarrow). All is put back when the outermost block ends
(``gc.unfreeze``). Only *when* the collector runs changes, never what it frees: frozen garbage
(cyclic objects dropped after they were frozen) waits for the unfreeze; what reference counts free
is freed at once, frozen or not.

A single cell (:func:`rag_bench.runner.main.run_cell` outside a batch: ``rag-bench run``) runs
tuned too; inside a batch its block nests and changes nothing. Measured on squad2-normans with
``gc.callbacks`` (4d4d505): one dense cell ran 6 full collections (0.96 s of its 11.0 s of CPU)
over torch's objects as they loaded, 1.13 s of collection in all; tuned, none, 0.28 s in all.
``farm-bench`` of ``rag-bench run retriever=dense`` from an empty cache, 5 runs each, paired:
0.93x the wall time (7.9 against 8.7 s) and 0.94x the CPU, its peak memory ~34 MiB higher (905
against 872 MiB: what is frozen waits for the block's end).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 10_000  # allocations between young-generation collections within a batch

_DEPTH = [0]  # open tuned() blocks in this process (a closing report inside a launcher's batch nests)


@contextlib.contextmanager
def tuned() -> Iterator[None]:
    """The collector tuned for the block (module doc) and put back as it was when the outermost
    block ends; a block inside another changes nothing."""
    outer = not _DEPTH[0]
    threshold = gc.get_threshold()
    if outer:
        gc.freeze()  # (garbage among them waits for the unfreeze: collecting first cost 0.1-0.2 s)
        gc.set_threshold(max(threshold[0], YOUNG_THRESHOLD), *threshold[1:])
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if outer:
            gc.set_threshold(*threshold)
            gc.unfreeze()


def freeze_loaded() -> None:
    """Within :func:`tuned`: freeze what exists now too (when what stays loaded is loaded: a model,
    the background process's first job); outside, nothing. What else lives at that moment (the
    running cell's configs) is frozen with it: its cyclic garbage waits for the unfreeze."""
    if _DEPTH[0]:
        gc.freeze()
