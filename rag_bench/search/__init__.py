"""Searching a grid (docs/search.md): ``rounds`` the pure parts of ``search=halving`` (rounds,
question subsets, pruning), ``halving`` the rounds run by the sweeper."""
