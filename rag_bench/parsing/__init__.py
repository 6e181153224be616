"""parsing stage: documents as files (PDF, HTML, DOCX) to Markdown text (docs/parsing.md)."""
