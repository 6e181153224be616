"""Limits on untrusted files, through the real runner (a forkserver child with time and memory
bounds and no network): a 10,000-page PDF and a decompression bomb end as recorded outcomes, never
a hung or crashed load; an HTML page's external images, frames and stylesheets are never fetched."""

from __future__ import annotations

import http.server
import importlib
import threading

import pytest

from rag_bench.parsing.files import parse_files
from tests.parsing.render import OWN, to_html, write_many_pages_pdf, write_stream_bomb_pdf

PDF_PARSERS = [("rag_bench.parsing.pdf_pypdf", "PypdfParser"), ("rag_bench.parsing.pdf_plumber", "PdfplumberParser"),
               ("rag_bench.parsing.pdf_pymupdf4llm", "Pymupdf4llmParser")]


_PACKAGE = {"PypdfParser": "pypdf", "PdfplumberParser": "pdfplumber", "Pymupdf4llmParser": "pymupdf4llm"}


def _parser(module: str, cls: str):
    pytest.importorskip(_PACKAGE[cls], reason="the parse extra is not installed (pip install 'rag-bench-harness[parse]')")
    return getattr(importlib.import_module(module), cls)()


@pytest.mark.parametrize(("module", "cls"), PDF_PARSERS)
def test_a_10000_page_pdf_is_a_recorded_failure(tmp_path, module, cls):
    path = write_many_pages_pdf(tmp_path / "ten-thousand.pdf", 10_000)
    outcome = parse_files([path], _parser(module, cls), None)[0]
    assert outcome.parsed is None and outcome.reason == "10000 pages (limit 2000)"


@pytest.mark.parametrize(("module", "cls"), PDF_PARSERS)
def test_a_small_pdf_of_the_same_build_is_read(tmp_path, module, cls):
    # the control: the hand-written PDF is valid, so the failure above is the page bound's
    outcome = parse_files([write_many_pages_pdf(tmp_path / "three.pdf", 3)], _parser(module, cls), None)[0]
    assert outcome.parsed is not None and outcome.parsed.text.count("page text") == 3


def test_a_decompression_bomb_is_refused_by_pypdf_and_read_in_bounds_by_the_others(tmp_path):
    path = write_stream_bomb_pdf(tmp_path / "bomb.pdf", 100)  # ~100 KB on disk, 100 MiB inflated
    assert path.stat().st_size < 200_000
    out = {cls: parse_files([path], _parser(module, cls), None)[0] for module, cls in PDF_PARSERS}
    # pypdf stops inflating at its own limit (75 MB): a recorded failure with the reason
    assert out["PypdfParser"].parsed is None and "LimitReachedError" in out["PypdfParser"].reason
    # pdfplumber and pymupdf4llm inflate it inside the bounded child and find the one word
    for cls in ("PdfplumberParser", "Pymupdf4llmParser"):
        assert out[cls].parsed is not None and out[cls].parsed.text.split() == ["bombword"], out[cls]


def test_a_bomb_that_outlasts_the_time_bound_is_a_recorded_failure_and_not_cached(tmp_path):
    from rag_bench.parsing.files import ParseCache

    path = write_stream_bomb_pdf(tmp_path / "bomb.pdf", 100)
    store = ParseCache(tmp_path / "parses.sqlite")
    # the bound lowered far below what inflating and scanning 100 MiB takes (seconds)
    outcome = parse_files([path], _parser(*PDF_PARSERS[2]), store, timeout=0.2)[0]
    assert outcome.parsed is None and outcome.reason == "timed out after 0.2 s"
    assert len(store) == 0


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        _Counter.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"<p>FETCHED-CONTENT</p>")

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("isolated", [False, True], ids=["in-process", "runner"])
def test_html_with_external_images_frames_and_stylesheets_fetches_nothing(tmp_path, isolated):
    pytest.importorskip("html2text")
    from rag_bench.parsing.html_text import Html2textParser

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    _Counter.hits.clear()
    try:
        page = to_html("Shop policy", OWN).replace("<head>", f"<head><link rel='stylesheet' href='{base}/s.css'>"
                                                   f"<script src='{base}/x.js'></script>")
        page = page.replace("<h2>Refunds</h2>", f"<img src='{base}/pixel.png' alt='a picture'>"
                            f"<iframe src='{base}/frame.html'>frame fallback</iframe>"
                            f"<object data='{base}/o.swf'></object><h2>Refunds</h2>")
        if isolated:
            f = tmp_path / "page.html"
            f.write_text(page, encoding="utf-8")
            outcome = parse_files([f], Html2textParser(), None)[0]
            assert outcome.parsed is not None, outcome.reason
            text = outcome.parsed.text
        else:
            text = Html2textParser().parse(page.encode(), ".html").text
    finally:
        server.shutdown()
        server.server_close()
    assert _Counter.hits == []
    assert "FETCHED-CONTENT" not in text and "frame fallback" not in text and base not in text
    assert "thirty days" in text and "## Refunds" in text
