"""Our pipeline: the stages of a cell (chunk, index, retrieve, rerank, answer, judge), each checked at
its boundary, producing the run the evaluation reads."""
