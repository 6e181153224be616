"""Cell names from the parameters that vary (rag_bench.naming): short, stable, distinct."""

from __future__ import annotations

from pathlib import Path

from rag_bench import naming


def _cfg(chunker="fixed", size=800, retriever="bm25", reranker="none", depth=None, k=5, root="/a"):
    rr = {"name": reranker, **({"depth": depth} if depth is not None else {})}
    return {"chunker": {"name": chunker, "_target_": "x.Y", "size": size}, "retriever": {"name": retriever},
            "reranker": rr, "pipeline": {"k": k}, "output": {"root": root}, "tracking": {"name": "mlflow"}}


def test_axes_are_the_varying_keys_in_stage_order_and_ignore_output_and_tracking():
    cfgs = [_cfg(k=3, root="/a"), _cfg(k=5, root="/b"), _cfg(retriever="dense", k=3)]
    assert naming.axes(cfgs) == ["retriever", "pipeline.k"]
    assert naming.labels(cfgs) == ["bm25 k=3", "bm25 k=5", "dense k=3"]


def test_a_parameter_is_an_axis_only_where_it_varies_within_one_option():
    # fixed and section differ in size because they are different chunkers: not an axis;
    # two fixed cells at 400 and 800 make chunker.size one.
    cfgs = [_cfg("fixed", 800), _cfg("section", 1200)]
    assert naming.axes(cfgs) == ["chunker"]
    cfgs.append(_cfg("fixed", 400))
    assert naming.axes(cfgs) == ["chunker", "chunker.size"]
    assert naming.labels(cfgs) == ["fixed size=800", "section size=1200", "fixed size=400"]


def test_rerankers_are_prefixed_so_dense_and_dense_differ():
    cfgs = [_cfg(retriever="dense", reranker="dense", depth=10), _cfg(retriever="bm25", reranker="none"),
            _cfg(retriever="dense", reranker="dense", depth=50)]
    assert naming.labels(cfgs) == ["dense rr=dense depth=10", "bm25 rr=none", "dense rr=dense depth=50"]


def test_identical_labels_get_the_cell_id_and_a_single_cell_its_stage_names():
    cfgs = [_cfg(), _cfg()]
    assert naming.labels(cfgs, ["aaa", "bbb"]) == ["fixed bm25 [aaa]", "fixed bm25 [bbb]"]
    assert naming.labels([_cfg(reranker="dense")]) == ["fixed bm25 rr=dense"]


def test_long_values_are_shortened_to_their_last_path_part():
    cfgs = [{"dataset": {"path": "/data/a/very/long/path/to/squad2-normans"}},
            {"dataset": {"path": "/data/a/very/long/path/to/kettleby-demo-set"}}]
    assert naming.labels(cfgs) == ["path=squad2-normans", "path=kettleby-demo-set"]


def test_sweep_axes_come_from_sweep_overrides_only():
    assert naming.sweep_axes(["retriever=bm25,dense", "tracking=none", "+dataset.path=/x", "pipeline.k=range(1,4)",
                              "hydra/launcher=joblib", "output.root=a,b"]) == ["retriever", "pipeline.k"]
    # The run name a cell gets from them equals its report label when those are the axes.
    cfgs = [_cfg(retriever=r, k=k) for r in ("bm25", "dense") for k in (3, 5)]
    assert [naming.label(c, ["retriever", "pipeline.k"]) for c in cfgs] == naming.labels(cfgs)


def test_an_external_system_is_named_by_what_it_is_and_adds_no_axes():
    app = {"system": {"name": "kettleby_app", "source": "/x/out.jsonl"}, "chunker": {"name": "external"},
           "retriever": {"name": "kettleby_app"}, "reranker": {"name": "external"}, "pipeline": {"k": 5}}
    assert naming.labels([app]) == ["app=kettleby_app"]
    assert naming.fallback(app) == "app=kettleby_app"
    # beside our own cells: the app keeps its name, ours are named by what varies between them
    assert naming.labels([_cfg(k=3), _cfg(k=5), app]) == ["k=3", "k=5", "app=kettleby_app"]
    from rag_bench.tracking.base import run_name

    assert run_name(app, []) == "app=kettleby_app"  # its MLflow run, as `evaluate` names it



def test_a_parser_sweep_names_its_cells_by_parser_and_old_cells_read_as_auto():
    # parser is a config group before the stages: a sweep over it names each cell by it
    a = {"parser": {"name": "pypdf"}, "chunker": {"name": "section"}, "retriever": {"name": "bm25"}}
    b = {"parser": {"name": "pdfplumber"}, "chunker": {"name": "section"}, "retriever": {"name": "bm25"}}
    assert naming.labels([a, b]) == ["parser=pypdf", "parser=pdfplumber"]
    # a cell written before the group existed read its files as auto does, and is read as one (the
    # format 0 -> 1 upgrade): no parser axis against an auto cell
    from rag_bench.cells import upgrade

    old, _ = upgrade(Path("."), {"chunker": {"name": "section"}, "retriever": {"name": "bm25"}}, {})
    new = {"parser": {"name": "auto"}, "query": {"name": "none"}, "chunker": {"name": "fixed"},
           "retriever": {"name": "bm25"}}
    assert naming.labels([old, new]) == ["section", "fixed"]
