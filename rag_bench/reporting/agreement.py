"""The text ``rag-bench agree`` prints (:class:`rag_bench.decision.agreement.Agreement`): the
agreement's headline lines, the cells in both rankings, and each axis's main effect in both."""

from __future__ import annotations

import textwrap

from rag_bench.decision.agreement import Agreement


def _num(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.3f}"


def _ci(ci: tuple[float, float]) -> str:
    return "[no CI]" if ci[0] != ci[0] else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in [header, ["-" * w for w in widths], *rows]]


def format_agreement(found: Agreement, name_a: str, name_b: str) -> str:
    """The agreement as a reader sees it: what was compared, tau with its CI, top-1, the overlap of
    the not-significantly-worse sets, the cells side by side and the axes' main effects."""
    same = found.measure_a == found.measure_b

    def prose(text: str) -> str:  # a sentence, not a table row: wrapped to the 120 characters of a log
        return textwrap.fill(text, 120, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)

    out = [f"A: {name_a} ({found.questions_a} questions, ranked by {found.measure_a})",
           f"B: {name_b} ({found.questions_b} questions, ranked by {found.measure_b})",
           prose(f"{len(found.cells)} cells matched by their config (the dataset aside)."
                 + ("" if same else " The two are ranked by different measures (each experiment's primary; --by M "
                                    "ranks both by one)."))]
    out += [prose(f"note: {n}") for n in found.notes]
    lo, hi = found.tau_ci
    ci = "no interval" if lo != lo else f"[{lo:.2f}, {hi:.2f}]"
    out.append("")
    out.append(prose(f"Kendall's tau-b: {_num(found.tau)} {ci} (95% bootstrap over questions: each set's questions "
                     f"resampled, {found.resamples} draws)"))
    if found.top1_same:
        out.append(f"Top-1: agree, both rank {found.best_a!r} first")
    else:
        out.append(prose(f"Top-1: differ; A's best {found.best_a!r} is #{found.rank_in_b_of_best_a} in B, B's best "
                         f"{found.best_b!r} is #{found.rank_in_a_of_best_b} in A"))
    j = found.jaccard
    out.append(f"Not significantly worse: {len(found.close_a)} cells in A, {len(found.close_b)} in B, "
               f"{len(found.overlap)} in both (Jaccard {_num(j)})")
    out.append("")
    rows = [[c.name, _num(c.value_a), str(c.rank_a), "*" if c.close_a else "", _num(c.value_b), str(c.rank_b),
             "*" if c.close_b else ""] for c in found.cells]
    out += _table(["cell", "A value", "A rank", "≈A", "B value", "B rank", "≈B"], rows)
    out.append("(≈: not significantly worse than that experiment's best, its verdict's 95% model confidence set)")
    if found.axes:
        out.append("")
        arows = []
        for a in found.axes:
            sig = {(True, True): "both", (False, False): "neither", (True, False): "A only",
                   (False, True): "B only"}.get((bool(a.significant_a), bool(a.significant_b)), "untested")
            if a.significant_a is None or a.significant_b is None:
                sig = "untested"
            arows.append([a.axis, f"{a.best_a} > {a.worst_a} {_num(a.spread_a)} {_ci(a.ci_a)}",
                          f"{a.best_b} > {a.worst_b} {_num(a.spread_b)} {_ci(a.ci_b)}",
                          "same" if a.same_sign else "differs", sig, "yes" if a.agree else "no"])
        out += _table(["axis", "A: best > worst level, spread [95% CI]", "B: best > worst level, spread [95% CI]",
                       "sign", "significant", "agree"], arows)
        out.append(prose("(main effects: each level's mean over the other axes; significant: the spread's interval "
                         "over questions excludes 0; agree: significant in both with the same sign, or in neither)"))
    return "\n".join(out)
