"""The evaluation layer: a run of a system (:mod:`.run`), scorers that own their measures
(:mod:`.scorers`) and the one evaluation of a cell that runs them (:mod:`.evaluation`)."""
