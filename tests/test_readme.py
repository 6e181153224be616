"""The README's first screen: the two commands, then a Quickstart saying what you should see."""

from __future__ import annotations

from tests.conftest import REPO


def test_the_first_screen_is_the_quickstart():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[3].startswith("make demo") and lines[4].startswith("make test")  # still the first commands
    start = lines.index("## Quickstart")
    assert start < 12
    section = "\n".join(lines[start:lines.index("", start + 2) + 30])
    for needle in ("leaderboard", "reports/demo/index.html",
                   "mlflow ui --backend-store-uri sqlite:///experiments/mlflow.db", "notebooks/design_review.ipynb"):
        assert needle in section, needle
    assert (REPO / "notebooks" / "design_review.ipynb").is_file()


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
