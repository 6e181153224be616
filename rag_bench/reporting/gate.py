"""``rag-bench gate``: absolute thresholds and regression rules for a release decision.

A policy (YAML) has three parts, all optional:

``thresholds``   ``section/metric: {min: x}`` and/or ``{max: y}`` on the cell's aggregates.
``regressions``  against a baseline cell: ``{rule: no_significant_regression, alpha: a}`` fails
                 when the paired difference over the same questions is negative and its
                 randomisation-test p-value is at most ``a``; ``{rule: not_worse_than,
                 max_drop: d}`` fails when the cell is more than ``d`` below the baseline.
``errors``       ``max_error_rate``: judge/endpoint failures over calls (``counts.endpoint_failures``
                 / ``counts.endpoint_calls``); such failures never enter quality denominators,
                 but too many fail the gate.

Every rule ends ``pass``, ``fail`` or ``error`` (cannot evaluate: metric absent, no
per-question values). Exit code: 2 if any rule errs, else 1 if any fails, else 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import yaml

from rag_bench.errors import ConfigError
from rag_bench.reporting.cells import Cell
from rag_bench.stats.paired import randomisation_p

_TOP = {"thresholds", "regressions", "errors"}
_RULES = {"no_significant_regression": {"alpha"}, "not_worse_than": {"max_drop"}}


@dataclass(frozen=True)
class RuleResult:
    """Outcome of one policy rule."""

    name: str
    status: str  # pass | fail | error
    value: str
    limit: str
    detail: str = ""


def load_policy(path: str | Path) -> dict[str, Any]:
    """Read and validate a policy file; problems name the line and key."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: policy file not found -- fix: pass --policy conf/gate/release.yaml")
    text = p.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"{p}:{mark.line + 1 if mark else 0}: invalid YAML ({exc}) -- fix: the syntax") from exc
    lines = _key_lines(root)
    if not isinstance(data, dict):
        raise ConfigError(f"{p}:1: a policy is a mapping of thresholds/regressions/errors")

    def bad(key: str, msg: str, fix: str) -> ConfigError:
        return ConfigError(f"{p}:{lines.get(key, 0)}: [{key}] {msg} -- fix: {fix}")

    for key in data:
        if key not in _TOP:
            raise bad(key, f"unknown section {key!r}", f"use {sorted(_TOP)}")
    for metric, rule in (data.get("thresholds") or {}).items():
        if "/" not in str(metric):
            raise bad(metric, "metric must be written section/name", "e.g. retrieval/hit@5")
        if not isinstance(rule, dict) or not rule or set(rule) - {"min", "max"}:
            raise bad(metric, f"threshold must be {{min: x}} and/or {{max: y}}, got {rule!r}", "e.g. {min: 0.8}")
        for bound, v in rule.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise bad(metric, f"{bound} must be a finite number, got {v!r}", "e.g. {min: 0.8}")
    for metric, rule in (data.get("regressions") or {}).items():
        if not isinstance(rule, dict) or rule.get("rule") not in _RULES:
            raise bad(metric, f"regression rule must be one of {sorted(_RULES)}", "e.g. {rule: not_worse_than, "
                      "max_drop: 0.02}")
        extra = set(rule) - {"rule"} - _RULES[rule["rule"]]
        need = _RULES[rule["rule"]] - set(rule)
        if extra or need:
            raise bad(metric, f"{rule['rule']} takes {sorted(_RULES[rule['rule']])}", f"remove {sorted(extra)} / "
                      f"add {sorted(need)}")
        for v in (rule.get("alpha"), rule.get("max_drop")):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
                raise bad(metric, f"alpha/max_drop must be in [0, 1], got {v!r}", "e.g. alpha: 0.05")
    errors = data.get("errors") or {}
    if set(errors) - {"max_error_rate"}:
        raise bad("errors", f"unknown keys {sorted(set(errors) - {'max_error_rate'})}", "use max_error_rate")
    return data


def _key_lines(node: Any, out: dict[str, int] | None = None) -> dict[str, int]:
    out = {} if out is None else out
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            out.setdefault(str(k.value), k.start_mark.line + 1)
            _key_lines(v, out)
    return out


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def evaluate_gate(cell: Cell, policy: dict[str, Any], baseline: Cell | None = None, *,
                  seed: int = 0) -> list[RuleResult]:
    """Apply every rule of ``policy`` to ``cell`` (and ``baseline`` for regression rules)."""
    results: list[RuleResult] = []
    for metric, rule in (policy.get("thresholds") or {}).items():
        value = cell.metric(metric)
        for bound, limit in rule.items():
            name = f"{metric} {'>=' if bound == 'min' else '<='} {limit}"
            if value is None:
                results.append(RuleResult(name, "error", "n/a", str(limit), f"{metric} is not in metrics.json"))
                continue
            ok = value >= limit if bound == "min" else value <= limit
            ci = cell.metrics.get("ci", {}).get(metric)
            detail = f"95% CI [{ci[0]:.3f}, {ci[1]:.3f}], n={cell.metrics.get('n', {}).get(metric)}" if ci else ""
            results.append(RuleResult(name, "pass" if ok else "fail", _fmt(value), str(limit), detail))
    regressions = policy.get("regressions") or {}
    if regressions and baseline is None:
        results.append(RuleResult("regressions", "pass", "skipped", "", "no --baseline given"))
    if baseline is not None:
        for metric, rule in regressions.items():
            results.append(_regression(cell, baseline, metric, rule, seed))
    max_rate = (policy.get("errors") or {}).get("max_error_rate")
    if max_rate is not None:
        counts = cell.metrics.get("counts", {})
        calls, failures = counts.get("endpoint_calls", 0), counts.get("endpoint_failures", 0)
        name = f"endpoint error rate <= {max_rate}"
        if not calls:
            results.append(RuleResult(name, "pass", "0 calls", str(max_rate), "no judge/endpoint calls in this cell"))
        else:
            rate = failures / calls
            results.append(RuleResult(name, "pass" if rate <= max_rate else "fail", f"{rate:.3f}", str(max_rate),
                                      f"{failures} of {calls} calls failed"))
    return results


def _regression(cell: Cell, baseline: Cell, metric: str, rule: dict[str, Any], seed: int) -> RuleResult:
    value, base = cell.metric(metric), baseline.metric(metric)
    if rule["rule"] == "not_worse_than":
        name = f"{metric} not worse than baseline - {rule['max_drop']}"
        if value is None or base is None:
            return RuleResult(name, "error", _fmt(value), _fmt(base), f"{metric} missing in cell or baseline")
        ok = value >= base - rule["max_drop"]
        return RuleResult(name, "pass" if ok else "fail", f"{value:.4f}", f">= {base - rule['max_drop']:.4f}",
                          f"baseline {base:.4f}, change {value - base:+.4f}")
    name = f"{metric}: no regression significant at alpha={rule['alpha']}"
    col = metric.split("/", 1)[1]
    if col not in cell.records or col not in baseline.records:
        return RuleResult(name, "error", "n/a", "", f"no per-question values for {col}")
    ra, rb = baseline.records.set_index("qid"), cell.records.set_index("qid")
    common = ra.index.intersection(rb.index)
    x, y = ra.loc[common, col].to_numpy(np.float64), rb.loc[common, col].to_numpy(np.float64)
    both = ~(np.isnan(x) | np.isnan(y))
    if not both.any():
        return RuleResult(name, "error", "n/a", "", "no question has the metric in both cells")
    diff = float((y[both] - x[both]).mean())
    p = randomisation_p(x, y, seed=seed)
    failed = diff < 0 and p <= rule["alpha"]
    return RuleResult(name, "fail" if failed else "pass", f"{diff:+.4f}", f"p={p:.4f}",
                      f"baseline {float(x[both].mean()):.4f} -> {float(y[both].mean()):.4f} over {int(both.sum())} "
                      "questions, paired randomisation test")


def exit_code(results: list[RuleResult]) -> int:
    """2 if any rule could not be evaluated, else 1 if any failed, else 0."""
    if any(r.status == "error" for r in results):
        return 2
    return 1 if any(r.status == "fail" for r in results) else 0


def markdown(cell: Cell, results: list[RuleResult], baseline: Cell | None) -> str:
    """The summary printed for humans and CI logs."""
    verdict = {0: "PASS", 1: "FAIL", 2: "CANNOT EVALUATE"}[exit_code(results)]
    lines = [f"## rag-bench gate: {verdict}", "", f"cell: `{cell.label}`"]
    if baseline is not None:
        lines.append(f"baseline: `{baseline.label}`")
    lines += ["", "| rule | value | limit | result | detail |", "|---|---|---|---|---|"]
    icon = {"pass": "pass", "fail": "**FAIL**", "error": "**ERROR**"}
    for r in results:
        lines.append(f"| {r.name} | {r.value} | {r.limit} | {icon[r.status]} | {r.detail} |")
    return "\n".join(lines) + "\n"


def junit_xml(results: list[RuleResult], suite: str = "rag-bench gate") -> str:
    """JUnit XML: one testcase per rule, so CI systems list each rule as a test."""
    fails = sum(r.status == "fail" for r in results)
    errs = sum(r.status == "error" for r in results)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name={quoteattr(suite)} tests="{len(results)}" failures="{fails}" errors="{errs}">']
    for r in results:
        msg = f"value {r.value}, limit {r.limit}. {r.detail}".strip()
        out.append(f'  <testcase classname="rag_bench.gate" name={quoteattr(r.name)}>')
        if r.status == "fail":
            out.append(f"    <failure message={quoteattr(msg)}>{escape(msg)}</failure>")
        elif r.status == "error":
            out.append(f"    <error message={quoteattr(msg)}>{escape(msg)}</error>")
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
