"""Agreement of the automatic answer measures with people: labels, kappa, PPI (``rag-bench calibrate``)."""
