"""Vector indexes (FAISS flat / HNSW / IVF) with in-search access filtering."""
