"""``search=grid`` (the default): every cell of the grid on every question, through Hydra's
basic sweep, batch by batch (docs/search.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from rag_bench.domain import Question

if TYPE_CHECKING:
    from rag_bench.search.base import SearchContext


class Grid:
    """The whole grid: the one strategy the invocation's budgets can stop between cells."""

    name: ClassVar[str] = "grid"
    budgeted: ClassVar[bool] = True

    def check(self, ctx: SearchContext) -> None:
        """Nothing to refuse: any grid is one."""

    def bound(self, grid: Sequence[Sequence[str]], questions: int, dataset: Sequence[Question]) -> list[str]:
        """The grid's cell-questions.

        >>> Grid().bound([["k=3"], ["k=5"]], 12, [])
        ['search=grid: 2 cells x 12 questions = 24 cell-questions']
        """
        cells = len(grid)
        return [f"search=grid: {cells} cells x {questions} questions = {cells * questions:,} cell-questions"]

    def run(self, ctx: SearchContext) -> None:
        """The grid through the sweep's own basic sweep."""
        ctx.sweep_grid()
