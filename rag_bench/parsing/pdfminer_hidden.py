"""Hidden PDF text for the parsers built on pdfminer.six (pdfplumber, markitdown's PDF converter).

pdfminer hands its layout every glyph with the fill colour only: it ignores ``gs`` (so a fill
opacity of 0 is unknown), and keeps render mode 3 (invisible), ``0 Tz`` (squeezed) and off-page
text. :func:`layout` interprets a page with a graphics state that tracks the fill opacity
(``/ca`` of the ExtGState ``gs`` names; saved by ``q``/``Q``) and a device that leaves out every
glyph :mod:`rag_bench.parsing.hidden`'s rules call hidden (faint colour, transparent, invisible
render mode, below the minimum size in height or width, off the page), counting its characters by
reason. A glyph's colour is judged against what is behind it: the last filled shape drawn before it
under its centre (white on a dark table header is read; black on a black box is hidden), else the
white page. What the device leaves out never reaches the parser's text. Invisible text (render mode 3)
on a page that draws an image is a scanned page's OCR text layer and is read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from rag_bench.parsing.hidden import MIN_ALPHA, Rgb, is_faint, is_tiny, to_rgb


def _counts() -> dict[str, int]:
    return {"white": 0, "transparent": 0, "invisible": 0, "tiny": 0, "off-page": 0}


def _background(char: Any, fills: list[tuple[tuple[float, float, float, float], Rgb]]) -> Rgb:
    """The colour behind a glyph: the last filled shape drawn before it under its centre, else the
    white page."""
    cx, cy = (char.x0 + char.x1) / 2, (char.y0 + char.y1) / 2
    for (x0, y0, x1, y1), rgb in reversed(fills):
        if x0 <= cx <= x1 and y0 <= cy <= y1:
            return rgb
    return (1.0, 1.0, 1.0)


def glyph_hidden(char: Any, scaling: float, ncs: Any, graphicstate: Any, render: int, box: tuple[float, ...],
                 fills: list[tuple[tuple[float, float, float, float], Rgb]]) -> str:
    """Why a person does not see a pdfminer glyph ('' when they do), by rag_bench.parsing.hidden's rules."""
    color = to_rgb(graphicstate.ncolor, str(getattr(ncs, "name", "")))
    if color is not None and is_faint(color, _background(char, fills)):
        return "white"  # white on the page, or any colour on a filled shape of its own colour
    if float(getattr(graphicstate, "alpha", 1.0)) <= MIN_ALPHA:
        return "transparent"
    if render in (3, 7):
        return "invisible"
    size = float(getattr(char, "size", 0) or 0)
    if is_tiny(size) or is_tiny(size * abs(float(scaling))):
        return "tiny"
    x0, y0, x1, y1 = box
    if char.x1 < x0 or char.x0 > x1 or char.y1 < y0 or char.y0 > y1:
        return "off-page"
    return ""


@lru_cache(maxsize=4)  # pure in its argument (a class in, two classes out): safe to share
def _classes(device_base: Any) -> tuple[Any, Any]:
    """An interpreter and a ``device_base`` subclass dropping hidden glyphs (built on first use:
    pdfminer is imported only by the parsers that need it)."""
    from pdfminer.pdfinterp import PDFGraphicState, PDFPageInterpreter
    from pdfminer.pdftypes import dict_value
    from pdfminer.psparser import literal_name

    class GState(PDFGraphicState):
        alpha = 1.0

        def copy(self) -> GState:
            obj = GState()
            obj.__dict__.update(super().copy().__dict__)
            obj.alpha = self.alpha
            return obj

    class Interpreter(PDFPageInterpreter):
        def init_state(self, ctm: Any) -> None:
            super().init_state(ctm)
            self.graphicstate = GState()

        def do_gs(self, name: Any) -> None:
            try:
                states = dict_value(dict_value(self.resources).get("ExtGState"))
                state = dict_value(states.get(literal_name(name)))
                if "ca" in state:
                    self.graphicstate.alpha = float(state["ca"])  # type: ignore[attr-defined]
            except Exception:  # a malformed or missing state: nothing changes
                pass

    class Device(device_base):  # type: ignore[misc,valid-type]
        hidden_counts: dict[str, int]
        _render = 0
        _box: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
        _image = False

        def begin_page(self, page: Any, ctm: Any) -> None:
            super().begin_page(page, ctm)
            self._box = tuple(float(v) for v in self.cur_item.bbox)
            self._image = False
            self._invisible: list[tuple[Any, Any]] = []  # (container, glyph) drawn in render mode 3 or 7
            self._fills: list[tuple[tuple[float, float, float, float], Rgb]] = []  # filled shapes, in order

        def paint_path(self, gstate: Any, stroke: bool, fill: bool, evenodd: bool, path: Any) -> None:
            before = len(self.cur_item._objs)
            super().paint_path(gstate, stroke, fill, evenodd, path)
            if fill:
                rgb = to_rgb(gstate.ncolor, str(getattr(gstate.ncs, "name", "")))
                for shape in self.cur_item._objs[before:]:
                    if rgb is not None and getattr(shape, "fill", False):
                        self._fills.append((tuple(float(v) for v in shape.bbox), rgb))  # type: ignore[arg-type]

        def render_image(self, name: Any, stream: Any) -> None:
            self._image = True
            super().render_image(name, stream)

        def end_page(self, page: Any) -> None:
            # Invisible glyphs on a page with an image are a scan's OCR text layer (the image shows
            # that text): read. On a page without one they hide text: left out and counted.
            if not self._image and self._invisible:
                gone = {id(glyph) for _, glyph in self._invisible}
                for container in {id(c): c for c, _ in self._invisible}.values():
                    container._objs = [o for o in container._objs if id(o) not in gone]
                self.hidden_counts["invisible"] += sum(sum(not c.isspace() for c in g.get_text())
                                                       for _, g in self._invisible)
            super().end_page(page)

        def render_string(self, textstate: Any, seq: Any, ncs: Any, graphicstate: Any) -> None:
            self._render = int(getattr(textstate, "render", 0) or 0)
            super().render_string(textstate, seq, ncs, graphicstate)

        def render_char(self, matrix: Any, font: Any, fontsize: float, scaling: float, rise: float, cid: int,
                        ncs: Any, graphicstate: Any) -> float:
            adv = float(super().render_char(matrix, font, fontsize, scaling, rise, cid, ncs, graphicstate))
            objs = self.cur_item._objs
            if not objs:
                return adv
            char = objs[-1]
            why = glyph_hidden(char, scaling, ncs, graphicstate, self._render, self._box, self._fills)
            if why == "invisible":  # decided at the page's end (an OCR layer over a scan is read)
                self._invisible.append((self.cur_item, char))
            elif why:
                objs.pop()
                self.hidden_counts[why] += sum(not c.isspace() for c in char.get_text())
            return adv

    return Interpreter, Device


def layout(page_obj: Any, rsrcmgr: Any, device_base: Any, counts: dict[str, int], **device_kwargs: Any) -> Any:
    """The pdfminer layout (LTPage) of ``page_obj`` without its hidden glyphs, counted in ``counts``."""
    interpreter_cls, device_cls = _classes(device_base)
    device = device_cls(rsrcmgr, **device_kwargs)
    device.hidden_counts = counts
    interpreter_cls(rsrcmgr, device).process_page(page_obj)
    return device.get_result()


def count_hidden(data: bytes) -> dict[str, int]:
    """Characters of a PDF's hidden glyphs by reason (for a parser that reads the text itself and
    cannot be handed this layout: it keeps them, the wrapper warns)."""
    import io

    from pdfminer.converter import PDFPageAggregator
    from pdfminer.pdfinterp import PDFResourceManager
    from pdfminer.pdfpage import PDFPage

    counts = _counts()
    rsrcmgr = PDFResourceManager()
    for page in PDFPage.get_pages(io.BytesIO(data)):
        layout(page, rsrcmgr, PDFPageAggregator, counts)
    return counts
