"""The README's first screen: the two commands, then a Quickstart saying what you should see."""

from __future__ import annotations

from tests.conftest import REPO


def test_the_first_screen_is_the_quickstart():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[3].startswith("make demo") and lines[4].startswith("make test")  # still the first commands
    start = lines.index("## Quickstart")
    assert start < 12
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("## "))
    section = "\n".join(lines[start:end])
    # What `make demo` prints now: a line per cell, the leaderboard with its not-significantly-worse
    # column, the table of where questions were lost, the verdict; then the report, MLflow, the notebook.
    for needle in ("done: section hybrid rr=none k=5 | hit@5=", "ranked by answer/context_all", "≈best",
                   "Where questions were lost", "Best: section hybrid rr=none k=5", "not significantly worse",
                   "reports/demo/index.html", "mlflow ui --backend-store-uri sqlite:///experiments/mlflow.db",
                   "notebooks/design_review.ipynb"):
        assert needle in section, needle
    # Columns and an interval the console no longer prints (issue 41): not described.
    for gone in ("95% CI of nDCG@10", "f1, false_refusal"):
        assert gone not in section, gone
    assert (REPO / "notebooks" / "design_review.ipynb").is_file()


def test_the_quickstart_describes_what_the_sweep_prints(capsys, tmp_path):
    """The console lines the Quickstart quotes are the ones the code writes: the closing lines come from
    the verdict, the cell line from the sweep's summary (both over a 2-cell demo grid here)."""
    from rag_bench.cli import main as cli

    assert cli(["run", "-m", "retriever=bm25,hybrid", "chunker=section", "pipeline.k=5", "tracking=none",
                f"output.root={tmp_path}", "experiment.name=quick"]) == 0
    out = capsys.readouterr().out
    quick = (REPO / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    for printed in ("done: ", " | hit@5=", " mrr=", " correct=", " squad_em=", " squad_f1=", "ranked by answer/context_all",
                    "≈best", "Where questions were lost", "Best: ", "not significantly worse", "than the baseline"):
        assert printed in out, printed
        assert printed.strip() in quick, printed


def test_the_readme_is_a_front_door():
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, "keep the README to 200 lines: move the rest to a page of docs/"
    # No timing figures: speeds are what benchmarks/ prints on the machine at hand.
    timings = re.findall(r"\b\d+(?:[.,]\d+)? ?(?:ms|s|sec|seconds|min|minutes)\b|\b\d+(?:\.\d+)?x faster|\bfaster than\b",
                         text)
    assert not timings, timings
    # One screenshot of the report: its header, with the verdict.
    shots = re.findall(r"!\[[^\]]*\]\((docs/report/[^)]+\.png)\)", text)
    assert shots == ["docs/report/head.png"], shots
    # Your data in 3 steps, with a questions.jsonl line; the stand-in and how to plug a model; the CI recipe;
    # the verdict; MLflow, the console and the primary measure not under a heading about judge samples.
    for heading in ("## Your data in 3 steps", "## The generator", "## Reading the verdict", "## In CI"):
        assert heading in text, heading
    assert "examples/ci/" in text and "--cell best" in text
    assert "generator=llama_cpp" in text and "generator=openai" in text
    for heading in re.findall(r"^#+ .*$", text, flags=re.M):
        assert "judge" not in heading.lower(), heading


def test_the_readme_questions_validate(tmp_path, capsys):
    """The questions.jsonl lines of 'Your data in 3 steps' are a dataset `rag-bench validate` accepts, with
    the document and section they name."""
    import json

    from rag_bench.cli import main as cli

    text = (REPO / "README.md").read_text(encoding="utf-8")
    step = text.split("## Your data in 3 steps", 1)[1].split("\n## ", 1)[0]
    block = step.split("```json", 1)[1].split("```", 1)[0]
    questions = [json.loads(line) for line in block.strip().splitlines()]
    assert {q["answerable"] for q in questions} == {True, False}
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "billing.md").write_text(
        "# Billing\n\n## Annual plans\n\nA full refund is available if you cancel within 14 days of a renewal. "
        "After that, the plan runs to the end of its year.\n", encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n", encoding="utf-8")
    (tmp_path / "dataset.yaml").write_text("name: readme\ndescription: the README's example\nlicense: CC-BY-4.0\n"
                                           "source: README.md\n", encoding="utf-8")
    assert cli(["validate", str(tmp_path)]) == 0, capsys.readouterr().err
    assert "2 questions (1 answerable, 1 unanswerable)" in capsys.readouterr().out


def test_every_docs_page_is_linked_from_the_readme_or_the_docs_index():
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = {(REPO / t.split("#", 1)[0]).resolve() for t in re.findall(r"\]\(([^)\s]+)\)", readme)}
    linked |= {(REPO / "docs" / t.split("#", 1)[0]).resolve() for t in re.findall(r"\]\(([^)\s]+)\)", index)}
    pages = sorted((REPO / "docs").glob("*.md"))
    assert len(pages) >= 10
    for page in pages:
        if page.name != "README.md":
            assert page.resolve() in linked, f"docs/{page.name} is linked from neither README.md nor docs/README.md"
    assert (REPO / "docs" / "README.md").resolve() in linked


def _markdown_files() -> list:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_link_of_the_readme_and_docs_resolves_inside_the_repository():
    import re

    checked = 0
    for md in _markdown_files():
        text = md.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://|mailto:|#", target):
                continue
            path = (md.parent / target.split("#", 1)[0]).resolve()
            assert path.is_relative_to(REPO.resolve()), f"{md.name}: link {target} leaves the repository"
            assert path.exists(), f"{md.name}: link {target} points at nothing"
            checked += 1
    assert checked >= 2  # the README links the contract, which links the report's screenshots


_REFUSED_NAME_EXAMPLES = {"../x"}  # the documented example of a name the config refuses


def test_no_reference_points_outside_the_repository():
    import re

    sources = [*_markdown_files(), *sorted((REPO / "rag_bench").rglob("*.py"))]
    for f in sources:
        text = f.read_text(encoding="utf-8")
        # The contract is docs/contract.md, shipped here: not a design folder beside the checkout.
        assert "ARCHITECTURE" not in text and "shared/design" not in text, f
        # '../x' as an example of a refused name is fine, and so is '../../rag_bench/...' (relative to a
        # file's own folder inside the repository): only a name right beside the checkout is outside it.
        for rel in re.findall(r"(?<![./])\.\./[A-Za-z0-9_][A-Za-z0-9_.-]*", text):
            if rel in _REFUSED_NAME_EXAMPLES:  # whatever happens to sit beside the checkout on this machine
                continue
            assert not (REPO / rel).exists(), f"{f.relative_to(REPO)} refers to {rel}, outside the repository"
    assert (REPO / "docs" / "contract.md").is_file()


def test_the_report_screenshots_are_small_and_each_is_described():
    shots = sorted((REPO / "docs" / "report").glob("*.png"))
    index = (REPO / "docs" / "report" / "README.md").read_text(encoding="utf-8")
    assert len(shots) >= 10
    for png in shots:
        assert png.stat().st_size < 300_000, f"{png.name}: keep each screenshot under 300 KB"
        assert f"]({png.name})" in index, f"{png.name} is not described in docs/report/README.md"
