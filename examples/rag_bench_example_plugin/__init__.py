"""An example rag_bench plugin: a retriever written outside rag_bench (``retriever=char_ngram``) and
a team's LangChain splitter (``chunker=lc_markdown``), swept beside the built-ins.

Put the folder that holds this package on PYTHONPATH (or ``pip install examples/``) and add its
configs to Hydra's search path::

    PYTHONPATH=examples rag-bench run -m chunker=section,lc_markdown retriever=bm25,char_ngram \\
        hydra.searchpath=[pkg://rag_bench_example_plugin.conf]
"""
