"""Drafting golden questions from a corpus (``rag-bench draft``, docs/drafting.md): a slot planner,
two drafters (templates, a model), filters that say why they drop a draft, the journal."""
