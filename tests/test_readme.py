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
