"""Statistics over per-question results: paired comparisons and multiple-testing correction."""
