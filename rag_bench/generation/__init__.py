"""Generation stage: context, prompt contract, generators, answer parsing."""
