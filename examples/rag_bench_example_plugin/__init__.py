"""An example rag_bench plugin: a component written outside rag_bench, swept beside the built-ins.

Put the folder that holds this package on PYTHONPATH (or ``pip install examples/``) and add its
configs to Hydra's search path::

    PYTHONPATH=examples rag-bench run -m retriever=bm25,char_ngram \\
        hydra.searchpath=[pkg://rag_bench_example_plugin.conf]
"""
