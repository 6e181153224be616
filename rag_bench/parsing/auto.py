"""``parser=auto`` (the default): by file type. ``.md``/``.txt`` are read as they always were
(:mod:`rag_bench.data.native`: no parser touches them); ``.pdf`` by pypdf, ``.html``/``.htm`` by
html2text, ``.docx`` by python-docx -- each imported only when a dataset holds such a file."""

from __future__ import annotations

from rag_bench.parsing.base import Parsed, ParseFailure, Parser, package_version
from rag_bench.parsing.hidden import RULES

# suffix -> the package whose version keys the cache
_BY_SUFFIX = {".pdf": "pypdf", ".html": "html2text", ".htm": "html2text", ".docx": "python-docx"}


def default_parser(suffix: str) -> Parser:
    """The parser ``auto`` uses for ``suffix`` (ConfigError "install ..." when its package is missing)."""
    if suffix == ".pdf":
        from rag_bench.parsing.pdf_pypdf import PypdfParser

        return PypdfParser()
    if suffix in (".html", ".htm"):
        from rag_bench.parsing.html_text import Html2textParser

        return Html2textParser()
    if suffix == ".docx":
        from rag_bench.parsing.docx_text import DocxParser

        return DocxParser()
    raise ParseFailure(f"no parser for {suffix} files")


class AutoParser:
    """Each file type by its default parser."""

    suffixes = tuple(_BY_SUFFIX)

    def __init__(self, name: str = "auto") -> None:
        self.name = name

    def version(self) -> str:
        """The default parsers' package versions (installed ones)."""
        packages = ";".join(f"{pkg}={package_version(pkg)}" for pkg in dict.fromkeys(_BY_SUFFIX.values()))
        return f"{packages};{RULES}"  # the wrappers' hidden-text rules change their parses too

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The file by its type's default parser."""
        return default_parser(suffix).parse(data, suffix)
