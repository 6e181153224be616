"""What every command of the ``rag-bench`` command line shares: printing for a person (untrusted
text made visible), exit 2 with one line for bad input, Hydra's configuration errors made readable,
output files written whole or not at all, and cells read from a folder or a run id."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from rag_bench.errors import RagBenchError
from rag_bench.untrusted import visible

# Keys an earlier release had: the message of an override that names one says what replaced it.
RENAMED = {"chunker.max_chars": "chunker.size, in characters, for every chunker",
           "chunker.child_chars": "chunker.size (the children's size, in characters)",
           "chunker.parent_chars": "chunker.parent_ratio (parents are size × parent_ratio characters)"}


LOG_WIDTH = 120  # no line of a command's report wider than this in a file, pipe or CI log


def say(text: object = "", *, file: TextIO | None = None, wrap: bool = False) -> None:
    """Print for a person: what the line carries from datasets, answers, labels and cell folders
    cannot drive the terminal (control characters shown escaped: rag_bench.untrusted). ``wrap``: each
    line longer than :data:`LOG_WIDTH` wrapped at spaces, its continuations indented."""
    shown = visible(str(text))
    if wrap:
        import textwrap

        shown = "\n".join(line if len(line) <= LOG_WIDTH else textwrap.fill(
            line, LOG_WIDTH, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
            for line in shown.split("\n"))
    print(shown, file=file or sys.stdout)


def fail(exc: BaseException | str) -> int:
    """Print ``error: <message>`` on standard error; exit code 2 (bad input or configuration)."""
    say(f"error: {exc}", file=sys.stderr)
    return 2


def exit2_on_error(body: Callable[[], int], *, also: type[Exception] | None = None, what: str = "",
                    fix: str = "") -> int:
    """Run the body of a command that reads cells, labels or a policy (gate, calibrate, label): bad input
    (RagBenchError) exits 2 with its own message; with ``also``, such an error too, in one line
    ``what: Type: message -- fix: ...`` -- never a traceback, and never exit 1 (the gate's verdict)."""
    try:
        return body()
    except RagBenchError as exc:
        return fail(exc)
    except Exception as exc:
        if also is None or not isinstance(exc, also):
            raise
        msg = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        return fail(f"{what}: {msg} -- fix: {fix}")


def config_message(exc: BaseException, args: list[str] | None = None, config: str = "config") -> str:
    """Hydra's message plus its causes (OmegaConf puts the useful part, e.g. the type, there); the
    valid keys of a misspelt one are listed from ``config`` (``draft`` for ``rag-bench draft``)."""
    parts = [str(exc).strip()]
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(parts) < 4:
        text = str(cause).strip()
        if text and text not in parts[-1] and "$VALUE" not in text:
            parts.append(text)
        cause = cause.__cause__ or cause.__context__
    msg = "\n  ".join(parts)
    if "Could not override" in msg:
        msg += "\n  (no such key: check its spelling; use +key=value only to add a new key on purpose)"
        missing = re.search(r"Could not override '([^']+)'", msg)
        listing = valid_keys(args or [], missing.group(1), config) if missing else ""
        if listing:
            msg += f"\n  {listing}"
        old = missing.group(1) if missing else ""
        if old in RENAMED:
            msg += f"\n  ({old} was renamed: {RENAMED[old]})"
    return msg


def missing_option(exc: BaseException) -> str:
    """One line for an option a config group does not have (``chunker=secton``): the option, the
    closest one and the group's options, from Hydra's own listing (which also holds the options of
    plugins and search paths); empty for every other error."""
    import difflib

    text = str(exc)
    found = re.search(r"Could not (?:find|load) '([^']+)/([^'/]+)'", text)
    if not found:
        return ""
    group, option = found.groups()
    listing = re.search(r"Available options in '[^']+':\n((?:\t[^\n]*\n?)*)", text)
    options = [line.strip() for line in listing.group(1).splitlines() if line.strip()] if listing else []
    near = difflib.get_close_matches(option, options, n=1)
    return (f"configuration: {group}={option}: {group} has no option {option!r} -- fix: "
            + (f"did you mean {group}={near[0]}? (" if near else "use one of ")
            + (f"{group}'s options: {', '.join(options)}" if options else f"the options in {group}/ of the config")
            + (")" if near else ""))


def valid_keys(args: list[str], full_key: str, config: str = "config") -> str:
    """``valid keys of chunker: size, overlap (did you mean size?)`` for a key that does
    not exist, from the config ``config`` composed without it; empty when that cannot be composed."""
    import difflib

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import DictConfig, OmegaConf

    from rag_bench.runner.config import CONF_DIR

    parent, _, leaf = full_key.rpartition(".")
    rest = [_first_value(a) for a in args if not a.startswith("-") and a.lstrip("+~").split("=", 1)[0] != full_key]
    try:
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config, overrides=rest)
        node = OmegaConf.select(cfg, parent) if parent else cfg
    except Exception:  # noqa: BLE001 -- a listing is a courtesy; the error above stands alone
        return ""
    finally:
        GlobalHydra.instance().clear()
    if not isinstance(node, DictConfig):
        return ""
    keys = [str(k) for k in node.keys() if k not in ("_target_", "name") and not str(k).startswith("_")]
    if not keys:
        return ""
    close = difflib.get_close_matches(leaf, keys, n=1)
    return f"valid keys of {parent or 'the config'}: {', '.join(keys)}" + \
        (f" (did you mean {parent + '.' if parent else ''}{close[0]}?)" if close else "")


def _first_value(arg: str) -> str:
    """A sweep override as one cell's (``pipeline.k=1,5`` -> ``pipeline.k=1``), so that a sweep's
    config composes for :func:`valid_keys`; any other override as it is.

    >>> _first_value("pipeline.k=1,5"), _first_value("eval.ks=[1,3]"), _first_value("chunker=fixed")
    ('pipeline.k=1', 'eval.ks=[1,3]', 'chunker=fixed')
    """
    key, eq, value = arg.partition("=")
    if not eq or "," not in value or value.lstrip()[:1] in "[{'\"" or "(" in value:
        return arg
    return f"{key}={value.split(',', 1)[0]}"


def load_cells_of(ref: str, command: str = "") -> list:
    """The finished cells of an experiment folder (one dataset version), or the one cell ``ref`` names
    (a folder or an MLflow run id); anything else is a FolderError saying what ``ref`` is."""
    from rag_bench.cells import check_folder
    from rag_bench.tracking.download import load_cell_or_run

    if check_folder(ref, "cell or experiment", command).kind == "experiment":
        return experiment_cells_of(ref)
    return [load_cell_or_run(ref)]


def experiment_cells_of(ref: str | Path, *, records: bool = False) -> list:
    """The finished cells of an experiment folder, of one dataset version (the notice naming the
    others, when there are several, on standard error)."""
    from rag_bench.cells import experiment_cells, one_dataset

    cells, notice = one_dataset(experiment_cells(ref, records=records))
    if notice:
        say(notice, file=sys.stderr)
    return cells


# The words that pick a cell of an experiment folder by role rather than by name (gate --cell,
# compare EXPERIMENT A B, export --cell): a cell whose name is one of them is picked by its id.
PICKS = ("best", "baseline")
PICK_HELP = ("best (the leaderboard's first: the primary measure, ties to the faster parse, the fewer generator tokens, then the "
             "name), baseline (the cell at the config's defaults on every swept axis), a cell id (or a unique "
             "prefix of one, 6+ characters) or "
             "the name the leaderboard and the report print, e.g. 'section hybrid rr=none k=5'")


def pick_cell(cells: list, ref: str, option: str, experiment: str | Path = "") -> tuple:
    """``(cell, why)``: the cell of ``cells`` (one experiment's) that ``ref`` names, and a line
    saying which cell that is and why (:func:`rag_bench.decision.decide.pick`, the API's picker
    too). ConfigError naming ``option`` otherwise."""
    from rag_bench.decision import decide

    return decide.pick(cells, ref, option=option, where=str(experiment or (cells[0].path.parent if cells else "")))


def output_file(name: str, option: str) -> Path:
    """Check, before any work, that ``option``'s file can be written: not a folder, its folder exists
    and is writable. Nothing is created here."""
    from rag_bench.errors import ConfigError, Problem

    path = Path(name).expanduser()

    def bad(msg: str, fix: str) -> ConfigError:
        return ConfigError(str(Problem(str(path), 0, option, msg, fix)))

    if path.is_dir():
        raise bad("is a folder, not a file", f"pass a file inside it, e.g. {path / 'outputs.jsonl'}")
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise bad(f"{folder} is a file, not a folder", "pass a file in an existing folder")
    if not folder.is_dir():
        raise bad(f"folder {folder} does not exist", f"create it first (mkdir -p {folder}) or pass a file in an "
                  "existing folder")
    if not os.access(folder, os.W_OK | os.X_OK) and not (path.exists() and os.access(path, os.W_OK)):
        raise bad(f"cannot write in {folder} (permission denied)", "pass a file in a folder you can write")
    return path


def write_output(path: Path, text: str, option: str) -> None:
    """Write a command's output file whole or not at all: a regular file through a temporary file
    renamed over it; a device or pipe (``/dev/stdout``) written in place. An OSError (disk full,
    quota, permissions) is an OutputError naming the file; no temporary file is left."""
    from rag_bench.errors import OutputError, Problem

    special = path.exists() and not path.is_file()
    tmp = path if special else path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            if not special:
                os.fsync(fh.fileno())
        if not special:
            os.replace(tmp, path)
    except OSError as exc:
        if not special:
            tmp.unlink(missing_ok=True)
        raise OutputError(str(Problem(str(path), 0, option, f"cannot write ({exc.strerror or exc})",
                                      "free disk space or pass another file; nothing was written"))) from exc

