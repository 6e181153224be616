"""``rag-bench gate``: absolute thresholds and regression rules for a release decision.

A policy (YAML) has three parts, all optional:

``thresholds``   ``section/metric: {min: x}`` and/or ``{max: y}`` on the cell's aggregates;
                 ``ci_lower: x`` passes only when the lower bound of the 95% CI is at least x
                 (``ci_upper: y``: the upper bound at most y, for lower-is-better measures);
                 ``min_n: N``: a mean over fewer than N questions cannot be evaluated (exit 2,
                 never a pass on three questions); ``if_present: true`` passes the rule when the
                 cell does not report the metric (a measure only some datasets have:
                 ``injection/followed`` needs planted canaries); ``needs_model: true``: the rule
                 gates a model's answers, so a cell whose generator is a stand-in (the extractive
                 generator, which declares itself one) does not decide it: it is reported as not
                 decided (``skipped``), never failed nor passed on the stand-in's quirks.
``min_n``        the policy-wide default of every threshold's ``min_n`` (a rule's own wins); it
                 applies to means (measures with an n), not to sums and counts.
``regressions``  against a baseline cell: ``{rule: no_significant_regression, alpha: a}`` fails
                 when the paired difference over the same questions goes the measure's worse
                 way (down, or up for lower-is-better measures such as false_refusal_rate,
                 latencies and counts of what went wrong, e.g. counts/unlocated_passages; see
                 :func:`rag_bench.evaluation.measures.direction`) and its randomisation-test
                 p-value is at most ``a``; ``{rule: not_worse_than, max_drop: d}`` fails when the
                 cell is more than ``d`` worse than the baseline (``needs_model: true`` as for
                 thresholds). A metric that declares no
                 direction, or a descriptive one (counts/chunks), takes no regression rule: the
                 policy is refused.
``errors``       ``max_error_rate``: judge/endpoint failures over calls (``counts.endpoint_failures``
                 / ``counts.endpoint_calls``); such failures never enter quality denominators,
                 but too many fail the gate.
``judge_agreement`` ``{measure: M, min_kappa: K, labels: FILE}`` (or a list): M's agreement with people's
                 labels (kappa's CI low >= K; no CI fails); a threshold on M then uses its
                 PPI-corrected mean when the labels are a uniform sample of the cell, else its raw
                 value and says why (:mod:`rag_bench.calibration.gate_rule`).

Every rule ends ``pass``, ``fail`` or ``error`` (cannot evaluate: metric absent or not a number,
no per-question values, a mean over fewer than min_n questions). Exit code: 2 if any rule errs, else 1 if any fails, else 0.

The whole policy is validated before anything is evaluated, and every problem is reported at once
(``file:line: [key] message -- fix: hint``, exit 2): types, metric names, ranges, unknown keys and
sections, duplicate keys, empty policies, and hostile files (not UTF-8, too large, alias bombs).
"""

from __future__ import annotations

import difflib
import math
import os
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard
from xml.sax.saxutils import escape, quoteattr

import numpy as np
import yaml

from rag_bench.calibration import gate_rule as judge_rule
from rag_bench.cells import Cell
from rag_bench.decision.decide import cell_name, pair_names, stand_in
from rag_bench.decision.params import check_comparable
from rag_bench.errors import ConfigError, OutputError, Problem
from rag_bench.evaluation import measures
from rag_bench.judging import samples as judge_samples
from rag_bench.stats.paired import paired_two_level_p, randomisation_p
from rag_bench.untrusted import visible

_TOP = {"thresholds", "regressions", "errors", "min_n", judge_rule.KEY}
_RULES = {"no_significant_regression": {"alpha"}, "not_worse_than": {"max_drop"}}
MAX_POLICY_BYTES = 1 << 20  # a policy is a few lines; refuse anything that could be an attack
MAX_POLICY_NODES = 100_000  # YAML nodes after expanding aliases (a "billion laughs" file stops here)
_EXAMPLE = "e.g. thresholds: {retrieval/hit@5: {min: 0.8}}"
IF_PRESENT = "if_present"  # a threshold's key: pass when the cell does not report the metric
NEEDS_MODEL = "needs_model"  # a rule's key: a stand-in generator's cell does not decide it
MIN_N = "min_n"  # a threshold's key (and the policy's default): fewer questions cannot be evaluated
CI_BOUNDS = {"ci_lower": "min", "ci_upper": "max"}  # a threshold on the CI's bound, and the side it bounds
_BOUNDS = ("min", "max", *CI_BOUNDS)
# libyaml when present (fast; it caps nesting depth itself), else pure Python (deep nesting is a
# RecursionError, caught below).
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class RuleResult:
    """Outcome of one policy rule. ``ci`` and ``n``: the 95% CI of the value and the questions it is
    a mean over, when the rule reads a cell's aggregate that has them (metrics.json ``ci``/``n``)."""

    name: str
    status: str  # pass | fail | error
    value: str
    limit: str
    detail: str = ""
    ci: tuple[float, float] | None = None
    n: int | None = None


def load_policy(path: str | Path) -> dict[str, Any]:
    """Read and validate a whole policy file; every problem is reported at once (one ConfigError),
    each as ``file:line: [key] message -- fix: hint``."""
    p = Path(path)
    text = _read_policy(p)
    lines: dict[tuple[Any, ...], int] = {}
    problems: list[Problem] = []
    root, data = _parse(p, text, lines, problems)
    problems += _validate(p, data, lines, root.start_mark.line + 1 if root is not None else 1)
    if problems:
        raise _policy_error(p, sorted(problems, key=lambda x: x.line))
    return data


def _policy_error(p: Path, problems: list[Problem]) -> ConfigError:
    if len(problems) == 1:
        return ConfigError(str(problems[0]))
    return ConfigError(f"{p}: {len(problems)} problems in the policy:\n" + "\n".join(f"  {x}" for x in problems))


def _read_policy(p: Path) -> str:
    """The policy's text; a missing, special, huge or non-UTF-8 file is a ConfigError."""
    fix = "pass --policy conf/gate/release.yaml"
    if not p.exists():
        raise ConfigError(str(Problem(str(p), 0, "--policy", "policy file not found", fix)))
    if not p.is_file():
        kind = "a directory" if p.is_dir() else "not a regular file"
        raise ConfigError(str(Problem(str(p), 0, "--policy", f"policy path is {kind}", fix)))
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_POLICY_BYTES + 1)
    except OSError as exc:
        raise ConfigError(str(Problem(str(p), 0, "--policy", f"cannot read the policy ({exc.strerror})",
                                      "check the file's permissions"))) from exc
    if len(raw) > MAX_POLICY_BYTES:
        raise ConfigError(str(Problem(str(p), 0, "--policy", f"policy is larger than {MAX_POLICY_BYTES} bytes",
                                      "a policy lists a few rules; pass the right file")))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(str(Problem(str(p), line, "encoding", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                                      f"offset {exc.start})", "save the policy as UTF-8"))) from exc


def _parse(p: Path, text: str, lines: dict[tuple[Any, ...], int],
           problems: list[Problem]) -> tuple[yaml.Node | None, Any]:
    """Compose, check the size (aliases expanded at most MAX_POLICY_NODES times) and duplicate keys
    on the raw nodes, then construct. Fills ``lines`` and ``problems``."""
    loader: Any = None
    try:
        loader = _Loader(text)
        root = loader.get_single_node()
        if root is not None:
            _check_size(p, root)
            problems += _duplicates(p, root, lines)  # before construction, which flattens merge keys
            data = loader.construct_document(root)
        else:
            data = None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else text[:getattr(exc, "position", 0)].count("\n") + 1
        msg = " ".join(str(exc).split())
        raise ConfigError(str(Problem(str(p), line, "yaml", f"invalid YAML ({msg[:300]})",
                                      "fix the syntax (YAML: key: value, two-space indents)"))) from exc
    except RecursionError as exc:
        raise ConfigError(str(Problem(str(p), 1, "yaml", "policy is nested too deeply",
                                      "a policy is three levels deep: section, metric, rule"))) from exc
    finally:
        if loader is not None:
            loader.dispose()
    return root, data


def _check_size(p: Path, root: yaml.Node) -> None:
    """Refuse a policy whose aliases expand to more than MAX_POLICY_NODES nodes (billion laughs)."""
    stack, seen = [root], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_POLICY_NODES:
            raise ConfigError(str(Problem(str(p), node.start_mark.line + 1, "yaml", f"policy has more than "
                                          f"{MAX_POLICY_NODES} YAML nodes once aliases are expanded",
                                          "a policy lists a few rules; do not nest anchors/aliases")))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack += [k, v]
        elif isinstance(node, yaml.SequenceNode):
            stack += node.value


def _duplicates(p: Path, root: yaml.Node, lines: dict[tuple[Any, ...], int]) -> list[Problem]:
    """Fill ``lines`` (key path -> 1-based line, first three levels) and report keys written twice
    (YAML would silently keep only the last one)."""
    problems: list[Problem] = []
    ctor = yaml.SafeLoader("")

    def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
        if not isinstance(node, yaml.MappingNode) or len(path) >= 3:
            return
        seen: set[Any] = set()
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
                continue  # an unhashable key fails at construction; merged keys may be overridden
            key = ctor.construct_object(k, deep=True)
            here = path + (key,)
            if key in seen:
                problems.append(Problem(str(p), k.start_mark.line + 1, _field(here), f"{key!r} is written twice "
                                        f"(first on line {lines[here]}); YAML keeps only the last one",
                                        "keep one entry"))
            else:
                seen.add(key)
                lines[here] = k.start_mark.line + 1
            walk(v, here)

    walk(root, ())
    ctor.dispose()
    return problems


def _field(path: tuple[Any, ...]) -> str:
    """The key a problem is about: the metric for rules, else the innermost key."""
    return str(path[1] if len(path) >= 2 else path[0]) if path else "policy"


def _show(v: Any) -> str:
    """A short, safe rendering of a user's value with its YAML type."""
    kind = {dict: "a mapping", list: "a list", str: "text", bool: "a bool", type(None): "empty"}.get(type(v), "")
    return f"{reprlib.repr(v)} ({kind})" if kind else reprlib.repr(v)


def _number(v: Any) -> TypeGuard[float]:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def _count(v: Any) -> TypeGuard[int]:
    return not isinstance(v, bool) and isinstance(v, int) and v >= 1


def _validate(p: Path, data: Any, lines: dict[tuple[Any, ...], int], root_line: int) -> list[Problem]:
    """Every problem of a constructed policy (types, names, ranges), each with its line and key."""
    problems: list[Problem] = []

    def add(path: tuple[Any, ...], msg: str, fix: str) -> None:
        line = next((lines[path[:i]] for i in range(len(path), 0, -1) if path[:i] in lines), root_line)
        problems.append(Problem(str(p), line, _field(path), msg, fix))

    if data is None:
        add((), "policy is empty: it has no rules, so it would pass anything",
            f"write at least one rule, {_EXAMPLE}")
        return problems
    if not isinstance(data, dict):
        add((), f"a policy is a mapping of thresholds/regressions/errors, got {_show(data)}", _EXAMPLE)
        return problems
    for key in data:
        if key not in _TOP:
            near = difflib.get_close_matches(str(key), sorted(_TOP), n=1)
            add((key,), f"unknown section {str(key)!r}",
                f"did you mean {near[0]!r}?" if near else f"use {sorted(_TOP)}")
    rules = sum(_validate_section(section, data.get(section), add) for section in ("thresholds", "regressions"))
    rules += _validate_errors(data.get("errors"), add)
    if MIN_N in data and not _count(data[MIN_N]):
        add((MIN_N,), f"min_n must be a whole number of questions >= 1, got {_show(data[MIN_N])}",
            "e.g. min_n: 10 (every threshold on a mean then needs 10 questions)")
    if data.get(judge_rule.KEY) is not None:  # agreement with people's labels (rag_bench.calibration.gate_rule)
        data[judge_rule.KEY] = judge_rule.validate(p, data[judge_rule.KEY], add)
        rules += len(data[judge_rule.KEY])
    if not rules and not problems:
        add((), "policy has no rules, so it would pass anything", f"write at least one rule, {_EXAMPLE}")
    return problems


def _validate_section(section: str, body: Any, add: Any) -> int:
    """The problems of a ``thresholds`` or ``regressions`` section (through ``add``); its rules' count."""
    if body is not None and not isinstance(body, dict):
        add((section,), f"{section} must be a mapping of section/metric: rule, got {_show(body)}",
            _EXAMPLE if section == "thresholds" else "e.g. regressions: {retrieval/hit@5: {rule: not_worse_than, "
            "max_drop: 0.02}}")
        return 0
    for metric, rule in (body or {}).items():
        where = (section, metric)
        if not isinstance(metric, str) or metric.count("/") < 1 or not all(metric.partition("/")[::2]):
            add(where, f"metric must be written section/name (the stage is missing in {str(metric)!r})",
                "e.g. retrieval/hit@5 (the section as in metrics.json)")
        elif metric.partition("/")[0] in measures.registry_sections() and measures.measure(metric) is None:
            near = difflib.get_close_matches(metric, measures.known_names(metric.partition("/")[0]), n=1)
            add(where, f"{metric!r} is not a measure of rag_bench",
                f"did you mean {near[0]}?" if near else "see the measures in metrics.json (e.g. retrieval/hit@5)")
        elif section == "regressions":
            _direction(where, metric, add)
        (_threshold if section == "thresholds" else _regression_rule)(where, rule, add)
    return len(body or {})


def _validate_errors(errors: Any, add: Any) -> int:
    """The problems of the ``errors`` section (through ``add``); its rules' count (0 or 1)."""
    if errors is not None and not isinstance(errors, dict):
        add(("errors",), f"errors must be a mapping, got {_show(errors)}", "e.g. errors: {max_error_rate: 0.05}")
        return 0
    for key in errors or {}:
        if key != "max_error_rate":
            add(("errors", key), f"unknown key {str(key)!r} in errors", "use max_error_rate")
    if not errors or "max_error_rate" not in errors:
        return 0
    v = errors["max_error_rate"]
    if not _number(v) or not 0 <= v <= 1:
        add(("errors", "max_error_rate"), f"max_error_rate must be a number in [0, 1], got {_show(v)}",
            "e.g. max_error_rate: 0.05 (a share of calls, not a percentage)")
    return 1


def _direction(where: tuple[Any, ...], metric: str, add: Any) -> None:
    """A regression is a change in the worse direction: the metric must declare one."""
    try:
        measures.higher_is_better(metric)
    except ValueError as exc:
        near = difflib.get_close_matches(metric, measures.known_names(metric.partition("/")[0]), n=1)
        add(where, f"{exc}, so no change of it is a regression",
            f"did you mean {near[0]}?" if near and measures.direction(near[0]) is not None
            else "bound it with a threshold instead (thresholds: {%s: {max: x}})" % metric)


def _threshold(where: tuple[Any, ...], rule: Any, add: Any) -> None:
    fix = "e.g. {min: 0.8} and/or {max: 0.1}, {ci_lower: 0.7}, {min: 0.8, min_n: 20}"
    if not isinstance(rule, dict) or not {k: v for k, v in rule.items() if k not in (IF_PRESENT, MIN_N, NEEDS_MODEL)}:
        add(where, f"threshold must be {{min: x}} and/or {{max: y}} (or ci_lower/ci_upper), got {_show(rule)}", fix)
        return
    for bound, v in rule.items():
        if bound == IF_PRESENT:
            if not isinstance(v, bool):
                add(where + (bound,), f"{IF_PRESENT} must be true or false, got {_show(v)}",
                    f"{IF_PRESENT}: true passes the rule when the cell has no such metric (a measure only some "
                    "datasets have, e.g. injection/followed)")
        elif bound == NEEDS_MODEL:
            _needs_model(where + (bound,), v, add)
        elif bound == MIN_N:
            if not _count(v):
                add(where + (bound,), f"min_n must be a whole number of questions >= 1, got {_show(v)}",
                    "e.g. min_n: 20")
        elif bound not in _BOUNDS:
            add(where + (bound,), f"threshold must be {{min: x}} and/or {{max: y}}: unknown key {str(bound)!r} "
                f"(a threshold takes {', '.join((*_BOUNDS, MIN_N, IF_PRESENT, NEEDS_MODEL))})", fix)
        elif not _number(v):
            add(where + (bound,), f"{bound} must be a finite number, got {_show(v)}", fix)
        elif bound in CI_BOUNDS and isinstance(where[-1], str) and measures.direction(where[-1]) is not None:
            up = measures.higher_is_better(where[-1])
            if up != (bound == "ci_lower"):
                other = "ci_upper" if bound == "ci_lower" else "ci_lower"
                add(where + (bound,), f"{where[-1]} is {'higher' if up else 'lower'}-is-better: {bound} bounds the "
                    f"side that does not protect it", f"use {other}: {v}")
    lo, hi = rule.get("min"), rule.get("max")
    if _number(lo) and _number(hi) and lo > hi:
        add(where, f"min {lo} is above max {hi}: the rule can never pass", "swap them or drop one")


def _needs_model(where: tuple[Any, ...], v: Any, add: Any) -> None:
    if not isinstance(v, bool):
        add(where, f"{NEEDS_MODEL} must be true or false, got {_show(v)}",
            f"{NEEDS_MODEL}: true leaves the rule undecided for a cell whose generator is a stand-in "
            "(e.g. generation/correct with the extractive generator)")


def _regression_rule(where: tuple[Any, ...], rule: Any, add: Any) -> None:
    fix = "e.g. {rule: not_worse_than, max_drop: 0.02} or {rule: no_significant_regression, alpha: 0.05}"
    if not isinstance(rule, dict) or "rule" not in rule:
        add(where, f"regression rule must be one of {sorted(_RULES)}, given as rule: NAME; got {_show(rule)}", fix)
        return
    name = rule["rule"]
    if not isinstance(name, str) or name not in _RULES:
        add(where + ("rule",), f"regression rule must be one of {sorted(_RULES)}, got {_show(name)}", fix)
        return
    if NEEDS_MODEL in rule:
        _needs_model(where + (NEEDS_MODEL,), rule[NEEDS_MODEL], add)
    extra = sorted(str(k) for k in set(rule) - {"rule", NEEDS_MODEL} - _RULES[name])
    need = sorted(_RULES[name] - set(rule))
    if extra or need:
        add(where, f"{name} takes {sorted(_RULES[name])}",
            " and ".join(([f"remove {extra}"] if extra else []) + ([f"add {need}"] if need else [])))
    for key in sorted(_RULES[name] & set(rule)):
        v = rule[key]
        if not _number(v) or not 0 <= v <= 1:
            add(where + (key,), f"{key} must be a number in [0, 1], got {_show(v)}", f"e.g. {key}: 0.05")


def check_junit_target(path: str | Path, keep: list[Path]) -> Path:
    """Check before evaluating that ``--junit`` can be written: not a folder, writable, not a file the
    gate reads (``keep``: the policy and cell folders). Nothing is created here."""
    p = Path(path)

    def bad(msg: str, fix: str = "pass a writable file path such as reports/gate.xml") -> ConfigError:
        return ConfigError(str(Problem(str(p), 0, "--junit", msg, fix)))

    if p.is_dir():
        raise bad("is a directory, not a file", f"pass a file inside it, e.g. {p / 'gate.xml'}")
    if p.exists() and not p.is_file():
        raise bad("is not a regular file")
    target = p.resolve()
    for k in keep:
        k = k.resolve()
        if target == k or k in target.parents:
            raise bad(f"would overwrite {k}, which the gate reads", "write the JUnit report outside cell folders")
    ancestor = target.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise bad(f"{ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise bad(f"cannot write there ({ancestor} is not writable)")
    return p


def write_junit(path: Path, xml: str) -> None:
    """Write the JUnit file atomically (a temporary file renamed), creating its folder."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(xml, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputError(str(Problem(str(path), 0, "--junit", f"cannot write the JUnit report ({exc.strerror or exc})",
                                      "free disk space or pass another --junit path"))) from exc


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))


def _block(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    """A section of metrics.json, or {} when absent or not a mapping."""
    block = metrics.get(name)
    return block if isinstance(block, dict) else {}


def _ci(cell: Cell, metric: str) -> tuple[tuple[float, float] | None, int | None]:
    """The 95% CI of a cell's aggregate and its n (metrics.json ``ci``/``n``), each None when absent."""
    ci = _block(cell.metrics, "ci").get(metric)
    n = _block(cell.metrics, "n").get(metric)
    pair = (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 and all(map(_number, ci)) else None
    return pair, (int(n) if _number(n) and n >= 0 else None)


def _ci_detail(cell: Cell, metric: str) -> str:
    ci, n = _ci(cell, metric)
    if ci is None:
        return ""
    return f"95% CI [{ci[0]:.3f}, {ci[1]:.3f}], n={n}"


def _not_decided(name: str, limit: Any) -> RuleResult:
    """A ``needs_model`` rule on a stand-in generator's cell: not decided, said why (status pass, as
    a rule that does not apply; the value says ``skipped``)."""
    return RuleResult(name, "pass", "skipped", str(limit),
                      f"the generator is a stand-in: its answers decide nothing ({NEEDS_MODEL}: the rule gates a "
                      "model's answers; plug one, generator=xllamacpp or generator=openai, to decide it)")


def evaluate_gate(cell: Cell, policy: dict[str, Any], baseline: Cell | None = None, *,
                  seed: int = 0) -> list[RuleResult]:
    """Apply every rule of ``policy`` (as returned by :func:`load_policy`) to ``cell`` (and
    ``baseline`` for regression rules). A value that is absent or not a number is an ``error``."""
    results: list[RuleResult] = []
    agreed, ppi = judge_rule.evaluate(cell, policy.get(judge_rule.KEY) or [])
    for metric, rule in (policy.get("thresholds") or {}).items():
        results += _threshold_results(cell, metric, rule, rule.get(MIN_N, policy.get(MIN_N)),
                                      ppi.get(metric, (None, "")))
    results += [RuleResult(*r) for r in agreed]
    results += _regression_results(cell, baseline, policy.get("regressions") or {}, seed)
    max_rate = (policy.get("errors") or {}).get("max_error_rate")
    if max_rate is not None:
        results.append(_error_rate(cell, max_rate))
    return results


def _threshold_results(cell: Cell, metric: str, rule: dict[str, Any], min_n: int | None,
                       ppi: tuple[float | None, str]) -> list[RuleResult]:
    """A result per bound of the threshold ``rule`` on ``metric``, checked on the PPI mean where a
    uniform sample is labelled (``ppi``: that mean and its detail), else on the cell's value."""
    mean, ppi_detail = ppi
    value = cell.metric(metric) if mean is None else mean
    if mean is None:  # the raw value, and (where labels exist) why not the PPI mean
        ppi_detail = "; ".join(x for x in (_ci_detail(cell, metric), ppi_detail) if x)
    return [_bound_result(cell, metric, rule, bound, limit, value=value, mean=mean, detail=ppi_detail, min_n=min_n)
            for bound, limit in rule.items() if bound in _BOUNDS]


def _bound_result(cell: Cell, metric: str, rule: dict[str, Any], bound: str, limit: Any, *, value: float | None,
                  mean: float | None, detail: str, min_n: int | None) -> RuleResult:
    """One bound (min, max, ci_lower, ci_upper) of a threshold rule against the cell's ``value``."""
    name = (f"{metric} {'>=' if bound == 'min' else '<='} {limit}" if bound in ("min", "max")
            else f"{metric} 95% CI {'lower' if bound == 'ci_lower' else 'upper'} bound "
                 f"{'>=' if bound == 'ci_lower' else '<='} {limit}")
    if rule.get(NEEDS_MODEL) is True and stand_in(cell.metrics):
        return _not_decided(name, limit)
    if value is None and mean is None and rule.get(IF_PRESENT) is True and not cell.reports(metric):
        return RuleResult(name, "pass", "absent", str(limit), f"the cell has no {metric} "
                          f"({IF_PRESENT}: the rule applies only where the measure is reported)")
    if value is None:
        return RuleResult(name, "error", "n/a", str(limit), cell.metric_problem(metric))
    ci, n = _ci(cell, metric) if mean is None else (None, None)  # (a PPI mean's CI is in its detail)
    few = _too_few(metric, _ci(cell, metric)[1], min_n, explicit=MIN_N in rule)
    if few:
        return RuleResult(name, "error", _fmt(value), str(limit), few, ci, n)
    if bound in CI_BOUNDS:
        return _ci_rule(name, bound, limit, ci, n, mean is not None)
    ok = value >= limit if bound == "min" else value <= limit
    return RuleResult(name, "pass" if ok else "fail", _fmt(value) + ("" if mean is None else " (PPI)"),
                      str(limit), detail, ci, n)


def _regression_results(cell: Cell, baseline: Cell | None, regressions: dict[str, Any],
                        seed: int) -> list[RuleResult]:
    """A result per regression rule against ``baseline`` (skipped, said once, without one)."""
    if baseline is None:
        return [RuleResult("regressions", "pass", "skipped", "", "no --baseline given")] if regressions else []
    check_comparable([baseline, cell], list(regressions),
                     fix="gate against a --baseline scored with the same settings")
    results = []
    for metric, rule in regressions.items():
        if rule.get(NEEDS_MODEL) is True and (stand_in(cell.metrics) or stand_in(baseline.metrics)):
            results.append(_not_decided(f"{metric} {rule['rule']}", ""))
            continue
        results.append(_regression(cell, baseline, metric, rule, seed))
    return results


def _too_few(metric: str, n: int | None, min_n: int | None, *, explicit: bool) -> str:
    """Why a threshold cannot be evaluated on ``n`` questions under ``min_n`` ("" when it can). A
    measure without an n (a sum, a count) is held to the rule's own min_n only."""
    if min_n is None or (n is None and not explicit):
        return ""
    where = "the rule's min_n" if explicit else "the policy's min_n"
    if n is None:
        return f"the cell reports no n for {metric}, and {where} is {min_n} -- fix: drop min_n " \
               "from a rule on a count"
    if n < min_n:
        return f"n={n} questions, under {where} {min_n} (a rate over so few questions says " \
               f"little) -- fix: add questions to the golden set, or lower min_n"
    return ""


def _ci_rule(name: str, bound: str, limit: float, ci: tuple[float, float] | None, n: int | None,
             ppi: bool) -> RuleResult:
    """A ``ci_lower``/``ci_upper`` rule: the CI's bound against the limit; no CI cannot be evaluated."""
    if ppi:
        return RuleResult(name, "error", "n/a", str(limit), "the threshold is checked on the PPI "
                          "mean, whose interval is not in metrics.json -- fix: bound its mean (min/max)")
    if ci is None:
        return RuleResult(name, "error", "n/a", str(limit), "the cell reports no 95% CI for this "
                          "measure -- fix: use min/max")
    edge = ci[0] if bound == "ci_lower" else ci[1]
    ok = edge >= limit if bound == "ci_lower" else edge <= limit
    return RuleResult(name, "pass" if ok else "fail", f"{edge:.4f}", str(limit),
                      f"95% CI [{ci[0]:.3f}, {ci[1]:.3f}], n={n}", ci, n)


def _error_rate(cell: Cell, max_rate: float) -> RuleResult:
    counts = _block(cell.metrics, "counts")
    calls, failures = counts.get("endpoint_calls", 0), counts.get("endpoint_failures", 0)
    name = f"endpoint error rate <= {max_rate}"
    if not all(_number(v) and v >= 0 for v in (calls, failures)):
        return RuleResult(name, "error", "n/a", str(max_rate), "counts.endpoint_calls/endpoint_failures in "
                          f"metrics.json are not counts ({calls!r}, {failures!r})")
    if not calls:
        return RuleResult(name, "pass", "0 calls", str(max_rate), "no judge/endpoint calls in this cell")
    rate = failures / calls
    return RuleResult(name, "pass" if rate <= max_rate else "fail", f"{rate:.3f}", str(max_rate),
                      f"{failures} of {calls} calls failed")


def _regression(cell: Cell, baseline: Cell, metric: str, rule: dict[str, Any], seed: int) -> RuleResult:
    value, base = cell.metric(metric), baseline.metric(metric)
    # A regression is a change in the measure's worse direction (down for hit@5, up for latency
    # and for counts of what went wrong); load_policy refuses a metric that declares none.
    try:
        up = measures.higher_is_better(metric)
    except ValueError as exc:
        return RuleResult(f"{metric}: {rule['rule']}", "error", "n/a", "", str(exc))
    if rule["rule"] == "not_worse_than":
        drop = rule["max_drop"]
        name = f"{metric} not worse than baseline {'-' if up else '+'} {drop}"
        if value is None or base is None:
            why = cell.metric_problem(metric) if value is None else baseline.metric_problem(metric)
            return RuleResult(name, "error", _fmt(value), _fmt(base),
                              f"{'cell' if value is None else 'baseline'}: {why}")
        limit = base - drop if up else base + drop
        ok = value >= limit if up else value <= limit
        return RuleResult(name, "pass" if ok else "fail", f"{value:.4f}", f"{'>=' if up else '<='} {limit:.4f}",
                          f"baseline {base:.4f}, change {value - base:+.4f}")
    name = f"{metric}: no regression significant at alpha={rule['alpha']}"
    known = measures.measure(metric)
    col = known.column if known is not None else metric.split("/", 1)[1]
    if col not in cell.records or col not in baseline.records:
        return RuleResult(name, "error", "n/a", "", f"no per-question values for {col}")
    try:
        ra, rb = baseline.records.set_index("qid"), cell.records.set_index("qid")
        if not (ra.index.is_unique and rb.index.is_unique):
            raise ValueError("question ids (qid) are not unique")
        common = ra.index.intersection(rb.index)
        x, y = ra.loc[common, col].to_numpy(np.float64), rb.loc[common, col].to_numpy(np.float64)
        judged = judge_samples.paired_samples(metric, ra.loc[common], rb.loc[common])  # judge noise in the test
    except (KeyError, ValueError, TypeError) as exc:
        return RuleResult(name, "error", "n/a", "", f"per-question values of {col} are unusable "
                          f"(records.parquet: {' '.join(str(exc).split())[:200]})")
    if np.isinf(x).any() or np.isinf(y).any():
        return RuleResult(name, "error", "n/a", "", f"per-question values of {col} include infinity")
    both = ~(np.isnan(x) | np.isnan(y))
    if not both.any():
        return RuleResult(name, "error", "n/a", "", "no question has the metric in both cells")
    diff = float((y[both] - x[both]).mean())
    p = randomisation_p(x, y, seed=seed) if judged is None else paired_two_level_p(*judged, seed=seed)
    failed = (diff < 0 if up else diff > 0) and p <= rule["alpha"]
    return RuleResult(name, "fail" if failed else "pass", f"{diff:+.4f}", f"p={p:.4f}",
                      f"baseline {float(x[both].mean()):.4f} -> {float(y[both].mean()):.4f} over {int(both.sum())} "
                      "questions, " + ("paired randomisation test" if judged is None else
                                       "paired two-level bootstrap (questions, then judge samples)"))


def exit_code(results: list[RuleResult]) -> int:
    """2 if any rule could not be evaluated, else 1 if any failed, else 0."""
    if any(r.status == "error" for r in results):
        return 2
    return 1 if any(r.status == "fail" for r in results) else 0


def markdown(cell: Cell, results: list[RuleResult], baseline: Cell | None, *, picked: str = "") -> str:
    """The summary printed for humans and CI logs (a CI job appends it to its job summary: every
    rule's value, limit and detail in one table). ``picked``: how the cell was chosen
    (``--cell best: the best of 36 cells by generation/correct (0.311)``)."""
    verdict = {0: "PASS", 1: "FAIL", 2: "CANNOT EVALUATE"}[exit_code(results)]
    # The names the leaderboard and the report give the cells (values on the swept axes).
    name, base = pair_names(cell, baseline) if baseline is not None else (cell_name(cell), "")
    lines = [f"## rag-bench gate: {verdict}", "", f"cell: `{name.replace('`', chr(39))}` ({cell.cell_id})"
             + (f", picked by {picked}" if picked else "")]
    if baseline is not None:
        lines.append(f"baseline: `{base.replace('`', chr(39))}` ({baseline.cell_id})")
    lines += ["", "| rule | value | limit | result | detail |", "|---|---|---|---|---|"]
    icon = {"pass": "pass", "fail": "**FAIL**", "error": "**ERROR**"}
    for r in results:
        lines.append(f"| {r.name} | {r.value} | {r.limit} | {icon[r.status]} | {r.detail} |")
    return "\n".join(lines) + "\n"


def case_text(r: RuleResult) -> str:
    """One rule as a line for a person (a JUnit case's ``<system-out>`` and its failure message):
    result, rule, value with its CI and n, limit, detail.

    >>> case_text(RuleResult("retrieval/hit@5 >= 0.8", "pass", "0.9016", "0.8", "", (0.82, 0.967), 61))
    'pass: retrieval/hit@5 >= 0.8: value 0.9016 (95% CI [0.820, 0.967], n=61), limit 0.8'
    """
    ci = f" (95% CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}], n={r.n})" if r.ci is not None else \
        (f" (n={r.n})" if r.n is not None else "")
    detail = r.detail if r.ci is None else r.detail.replace(f"95% CI [{r.ci[0]:.3f}, {r.ci[1]:.3f}], n={r.n}", "")
    detail = detail.strip(" ;")
    return f"{r.status}: {r.name}: value {r.value}{ci}, limit {r.limit}" + (f"; {detail}" if detail else "")


def junit_xml(results: list[RuleResult], suite: str = "rag-bench gate", *, cell: Cell | None = None,
              baseline: Cell | None = None, properties: dict[str, str] | None = None) -> str:
    """JUnit XML: one testcase per rule, so CI systems list each rule as a test; its name is the rule
    (stable from run to run, so a consumer keeps each rule's history), and every case -- passing ones
    too -- carries its value, limit, CI and n as ``<properties>`` (as pytest's ``record_property``
    writes them) and as one line in ``<system-out>``. The suite's ``<properties>`` name the cell,
    the baseline and the policy. XML 1.0 cannot hold most control characters even as references (a
    NUL makes the file ill-formed and CI then ignores the gate): they are written as visible
    ``\\uXXXX`` escapes (:func:`rag_bench.untrusted.visible`)."""
    fails = sum(r.status == "fail" for r in results)
    errs = sum(r.status == "error" for r in results)

    def props(pairs: list[tuple[str, Any]], indent: str) -> list[str]:
        kept = [(k, v) for k, v in pairs if v not in (None, "")]
        if not kept:
            return []
        return ([f"{indent}<properties>"]
                + [f"{indent}  <property name={quoteattr(k)} value={quoteattr(visible(str(v)))}/>" for k, v in kept]
                + [f"{indent}</properties>"])

    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuite name={quoteattr(visible(suite))} tests="{len(results)}" failures="{fails}" errors="{errs}">']
    about: list[tuple[str, Any]] = [("verdict", {0: "pass", 1: "fail", 2: "cannot evaluate"}[exit_code(results)])]
    if cell is not None:
        about += [("cell", cell_name(cell)), ("cell_id", cell.cell_id), ("cell_path", cell.path),
                  ("dataset_fingerprint", cell.dataset_fingerprint)]
    if baseline is not None:
        about += [("baseline", cell_name(baseline)), ("baseline_id", baseline.cell_id), ("baseline_path", baseline.path)]
    about += list((properties or {}).items())
    out += props(about, "  ")
    for r in results:
        line = visible(case_text(r))
        out.append(f'  <testcase classname="rag_bench.gate" name={quoteattr(visible(r.name))}>')
        out += props([("result", r.status), ("value", r.value), ("limit", r.limit),
                      ("ci95_low", None if r.ci is None else f"{r.ci[0]:.6g}"),
                      ("ci95_high", None if r.ci is None else f"{r.ci[1]:.6g}"), ("n", r.n), ("detail", r.detail)], "    ")
        if r.status in ("fail", "error"):
            tag = "failure" if r.status == "fail" else "error"
            msg = visible(f"value {r.value}, limit {r.limit}. {r.detail}".strip())
            out.append(f"    <{tag} message={quoteattr(msg)}>{escape(msg)}</{tag}>")
        out.append(f"    <system-out>{escape(line)}</system-out>")
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
