"""What a scorer is: the measures it declares, and what it adds to a cell.

A scorer owns one or more measure families (:class:`Measure`: name, section, direction, how it
aggregates, the settings that change its number, a one-line definition) and computes them from a
run (:class:`~rag_bench.evaluation.run.SystemRun`, question by question) and the relevance grades
of the run's final rankings (:class:`~rag_bench.evaluation.grade.Grades`). It returns
:class:`Part` objects: per-question columns (records.parquet), the values of its cell-level
measures and figures, its warnings and files. The evaluation (:mod:`rag_bench.evaluation.evaluation`)
runs the declared scorers in one loop and aggregates every measure the same way (value, n, CI),
so a scorer never averages, and a new measure of any kind is one scorer file.

>>> m = Measure("hit", "retrieval", cut="required").at(5)
>>> (m.name, m.key, m.mlflow_key, m.column)
('hit@5', 'retrieval/hit@5', 'retrieval.hit_at_5', 'hit@5')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from rag_bench import memo
from rag_bench.evaluation.settings import Settings

if TYPE_CHECKING:  # types only: the run and grades modules import nothing from here at run time
    from rag_bench.evaluation.grade import Grades
    from rag_bench.evaluation.run import SystemRun
    from rag_bench.memo import SharedWork

T = TypeVar("T")
Aggregate = Literal["mean", "sum", "value"]
Cut = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Measure:
    """One measure (or figure) of a cell, declared by the scorer that computes it.

    Attributes
    ----------
    family:
        Base name (``hit``, ``correct``); with ``cutoff`` it gives :attr:`name` (``hit@5``).
    section:
        metrics.json section (``retrieval``, ``evidence``, ``generation``, ``counts``, ...).
    higher_is_better:
        Direction: True, False, or None for descriptive figures (a threshold, a size).
    aggregate:
        ``mean`` over the questions where the measure is defined, with n and a bootstrap CI;
        ``sum`` over questions; ``value`` given once for the cell by its scorer.
    cut:
        Whether the family takes a cutoff (``required``, ``optional`` or ``none``).
    cutoff:
        The cutoff of this instance (None for uncut measures and families).
    description:
        One line: the definition, for help texts, reports and metrics.json's ``measures`` block.
    short:
        Shorter display name for the console line; the name when empty.
    prefix:
        Of the records.parquet column, when two sections share family names (``doc_``).
    params:
        The settings that change the number (``eval.gain``, ``eval.relevance_level``): two cells
        whose values differ hold two different measures under one name. ``name=value`` is a
        parameter fixed by the family itself (``unit=document``).
    """

    family: str
    section: str
    higher_is_better: bool | None = True
    aggregate: Aggregate = "mean"
    cut: Cut = "none"
    cutoff: int | None = None
    description: str = ""
    short: str = ""
    prefix: str = ""
    params: tuple[str, ...] = ()

    # The spellings are computed once per instance (cached_property writes the instance's __dict__,
    # which a frozen dataclass allows; fields alone decide equality, hash and replace()): scoring a
    # cell reads them some 2,000 times.

    @cached_property
    def name(self) -> str:
        """Name inside its section and as a records.parquet column: ``hit@5``, ``map``."""
        return f"{self.family}@{self.cutoff}" if self.cutoff is not None else self.family

    @cached_property
    def column(self) -> str:
        """Per-question column in records.parquet: the name, prefixed (``doc_ndcg@10``)."""
        return self.prefix + self.name

    @cached_property
    def display(self) -> str:
        """Name on the console line: ``cite_p`` for citation_precision, else :attr:`name`."""
        return self.short or self.name

    @cached_property
    def key(self) -> str:
        """Canonical name, as in metrics.json, gate policies and ``--metric``: ``retrieval/hit@5``."""
        return f"{self.section}/{self.name}"

    @cached_property
    def mlflow_key(self) -> str:
        """MLflow's spelling (no ``@`` allowed): ``retrieval.hit_at_5``."""
        return mlflow_name(self.key)

    def at(self, cutoff: int) -> Measure:
        """This family at ``cutoff`` (``HIT.at(5)`` is ``hit@5``)."""
        if self.cut == "none":
            raise ValueError(f"{self.family} takes no cutoff")
        return _at(self, int(cutoff))

    def format(self, value: float | None) -> str:
        """Display form: three decimals, ``n/a`` when undefined."""
        return "n/a" if value is None else f"{value:.3f}"

    def described(self, settings: Settings, scorer: str) -> dict[str, Any]:
        """This measure's entry in metrics.json's ``measures`` block: what the key means, so a
        cell describes itself (direction, aggregate, the parameters' values, the definition, the
        scorer that computed it). Shared between the cells of a sweep: never mutated."""
        return _described(self, settings, scorer)


def mlflow_name(key: str) -> str:
    """MLflow forbids ``@`` in metric names: ``retrieval/hit@5`` → ``retrieval.hit_at_5``.

    Applies to any flattened key (``ci/retrieval/hit@5/lo`` → ``ci.retrieval.hit_at_5.lo``).
    """
    return key.replace("@", "_at_").replace("/", ".")


# Pure in the (frozen) measure, settings and scorer name; bounded; the entries are only serialised,
# never mutated (every cell of a sweep describes the same measures alike).
@lru_cache(maxsize=4096)
def _described(m: Measure, settings: Settings, scorer: str) -> dict[str, Any]:
    return {"direction": {True: "higher", False: "lower", None: None}[m.higher_is_better], "aggregate": m.aggregate,
            "params": settings.values(m.params), "definition": m.description, "scorer": scorer}


@lru_cache(maxsize=4096)
def _at(m: Measure, cutoff: int) -> Measure:
    # Measures are frozen values: one object per (family, cutoff), built once (scoring asks for
    # them per question and cell; dataclasses.replace cost ~30 ms per cell of a sweep).
    return replace(m, cutoff=cutoff)


def figures(section: str, rows: Sequence[tuple[str, bool | None, str]]) -> tuple[Measure, ...]:
    """Figures of a cell (counts, costs, tallies: one value each, no per-question column, no CI),
    each with its direction: ``(name, higher_is_better, definition)`` rows."""
    return tuple(Measure(f, section, up, "value", description=d) for f, up, d in rows)


@dataclass(frozen=True)
class Part:
    """What a scorer adds to a cell.

    ``slot`` places its columns in records.parquet (:data:`rag_bench.evaluation.evaluation.LAYOUT`;
    a slot of its own goes after the others); ``columns`` are per question, in the run's question
    order; ``values`` the cell-level values of its ``value`` measures and figures by key (a key
    absent is not reported); ``n`` and ``cis`` replace the generic count and interval of a mean
    measure where the scorer knows better (the judge's two-level interval); ``sections`` are
    metrics.json entries that are no measure (tables, descriptive fields); ``files`` further files
    of the cell folder by name."""

    slot: str
    columns: Mapping[str, Any] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)
    n: Mapping[str, int] = field(default_factory=dict)
    cis: Mapping[str, list[float] | None] = field(default_factory=dict)
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # What the run shows about the data set or the stand-in generator, not a problem of the cell's
    # configuration (questions that expect a question back, hidden text a .md document carries): not
    # printed per cell; the verdict and the report state them once for the sweep (metrics.json findings).
    findings: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ScoringInput:
    """What a scorer reads: the run, the cell's settings, the relevance grades of the run's final
    rankings, the cell's id (the TREC files' tag), the work shared between cells (None: nothing
    shared) and the columns earlier scorers added (by name)."""

    run: SystemRun
    settings: Settings
    grades: Grades
    cell_id: str = ""
    work: SharedWork | None = None
    columns: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)  # when the scoring began (latency's score_s)

    def shared(self, name: str, parts: Sequence[Any], make: Callable[[], T]) -> T:
        """``make()``, computed once per final rankings, ``name`` and ``parts`` (what else the
        result depends on) when the work is shared and the run names its rankings: cells that differ
        only in what comes after the ranking (``k``, the generator) share it."""
        if self.work is None or self.run.ranking_key is None:
            return make()
        s = self.settings  # the grades' settings: every shared result may read the grades
        key = memo.key(self.run.dataset.fingerprint, self.run.ranking_key, self.run.min_relevant, s.relevance,
                       s.min_coverage, s.relevance_level, name, *parts)
        return self.work.get_or("scored", key, make)

    def column(self, name: str) -> Any:
        """A column an earlier scorer added (KeyError naming the scorers' order when none did)."""
        if name not in self.columns:
            raise KeyError(f"no scorer before this one added the column {name!r}")
        return self.columns[name]


@dataclass(frozen=True)
class Requirement:
    """What a scorer may need of a run: ``met`` says whether the run (under the settings) has it,
    ``lacking`` what the run lacks when it does not, ``fix`` how a cell gets it."""

    met: Callable[[SystemRun, Settings], bool]
    lacking: str
    fix: str


# The inputs a scorer declares in ``requires`` (Scorer protocol), by name.
REQUIREMENTS: dict[str, Requirement] = {
    "answers": Requirement(lambda run, s: run.answered, "no answers (nothing was generated)",
                           "a generator (generator=extractive, or a model)"),
    "judge": Requirement(lambda run, s: run.judge is not None, "no LLM judge scores", "a judge (judge=<option>)"),
    "ann": Requirement(lambda run, s: run.ann is not None, "no ANN report (an exact index, or an external system)",
                       "an approximate index (index=hnsw, index=ivf_nl16_np4, ...)"),
    "parse": Requirement(lambda run, s: run.dataset.parse is not None,
                         "no parsed documents (no .pdf/.html/.docx file in the dataset)", "a dataset with such files"),
    "query": Requirement(lambda run, s: any(q.query is not None for q in run.questions),
                         "no query transform (query=none searches the question as it is)",
                         "a transform (query=history, or query=rewrite with a model)"),
    "unit=document": Requirement(lambda run, s: s.unit in ("document", "both"), "no document-level evaluation",
                                 "eval.unit=document or eval.unit=both"),
}


class Scorer(Protocol):
    """A scorer: the measures it reports for a run, and how it computes them. ``requires``: the
    inputs of the run it needs (names of :data:`REQUIREMENTS`: answers, judge, ann, parse,
    unit=document); the evaluation runs it only on a run that has them (a scorer named in
    ``eval.scorers`` is refused on one that lacks them, under ``all`` it is skipped and the reason
    kept in metrics.json ``skipped``), so it never checks them itself."""

    name: str
    requires: tuple[str, ...]

    def measures(self, run: SystemRun, settings: Settings) -> Sequence[Measure]:
        """The measures (families at their cutoffs) and figures this scorer reports for ``run``."""
        ...

    def score(self, scoring: ScoringInput) -> Sequence[Part]:
        """Its columns, values, warnings and files for the run of ``scoring``."""
        ...
