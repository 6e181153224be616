"""Text a person does not see: what counts as hidden, and the per-document warning.

A parser wrapper drops hidden text where the parser tells it apart cheaply (html2text: elements
with ``display:none``/``visibility:hidden``/``hidden``, comments; python_docx: ``w:vanish``, white
and tiny runs; pdfplumber: white and tiny characters) and warns with the count of characters; where
it cannot drop it (pypdf: the text is extracted before its colour is known) it counts and warns.
The warning starts ``hidden text`` (what metrics.json's ``hidden_text_warnings`` collects).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

# Part of every wrapper's version() (so of the parse cache key): a parse cached before the wrappers
# dropped or counted hidden text is never served for one made by these rules. Bump when they change.
RULES = "hidden-2"
MIN_SIZE = 2.0  # points: smaller text is not readable on a page (1pt text is a hiding technique)
MIN_CONTRAST = 1.2  # WCAG contrast ratio against the white page below which text is not seen (0.97 gray: 1.07)
MIN_ALPHA = 0.1  # fill opacity at or below which text is not seen
OFF_PAGE_PT = 700.0  # CSS: an element moved this far off the page (left:-999px, text-indent:-9999px)

Rgb = tuple[float, float, float]


def to_rgb(values: Any, space: str = "") -> Rgb | None:
    """A colour's components (0..1) as RGB: by ``space`` (a PDF colour space name: DeviceGray,
    DeviceRGB, DeviceCMYK, CalGray, CalRGB, ICCBased, Separation, DeviceN; '' = by the number of
    components: 1 gray, 3 RGB, 4 CMYK). None for what has no colour (a pattern, an unknown space)."""
    if isinstance(values, (int, float)):
        values = (values,)
    if not isinstance(values, (tuple, list)) or not values or not all(isinstance(c, (int, float)) for c in values):
        return None
    v = [min(1.0, max(0.0, float(c))) for c in values]
    space = space.rsplit("/", 1)[-1]
    if space in ("Separation", "DeviceN"):  # tints: 0 is no ink (the paper), 1 full ink
        ink = max(v)
        return (1.0 - ink, 1.0 - ink, 1.0 - ink)
    if space in ("Pattern", "Indexed"):
        return None
    if len(v) == 1:
        return (v[0], v[0], v[0])
    if len(v) == 3:
        return (v[0], v[1], v[2])
    if len(v) == 4:
        c, m, y, k = v
        return ((1 - c) * (1 - k), (1 - m) * (1 - k), (1 - y) * (1 - k))
    return None


def _luminance(rgb: Rgb) -> float:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def is_faint(rgb: Rgb | None, background: Rgb = (1.0, 1.0, 1.0)) -> bool:
    """The one colour rule of every format: text of colour ``rgb`` on ``background`` (the white page
    unless a shading says otherwise) is not seen when their contrast ratio is below
    :data:`MIN_CONTRAST` -- white, near-white (0.97 gray, ``FFFFFE``), pale yellow on white."""
    if rgb is None:
        return False
    a, b = _luminance(rgb), _luminance(background)
    return (max(a, b) + 0.05) / (min(a, b) + 0.05) < MIN_CONTRAST



def hex_rgb(value: str) -> Rgb | None:
    """``FFFFFE``, ``#fff``, ``#ffffff80`` (alpha ignored) as RGB; None when it is not hex."""
    h = value.strip().lstrip("#")
    if len(h) in (3, 4):
        h = "".join(c * 2 for c in h[:3])
    if len(h) == 8:
        h = h[:6]
    if len(h) != 6 or any(c not in "0123456789abcdefABCDEF" for c in h):
        return None
    return (int(h[0:2], 16) / 255, int(h[2:4], 16) / 255, int(h[4:6], 16) / 255)


def is_tiny(size: Any) -> bool:
    """A font size (points) below :data:`MIN_SIZE` (0 included)."""
    return isinstance(size, (int, float)) and float(size) < MIN_SIZE


# --- HTML: an element's own style attribute, parsed as a browser parses it (rag_bench.parsing.css) ---
_NAMED = {"white": "ffffff", "snow": "fffafa", "ghostwhite": "f8f8ff", "whitesmoke": "f5f5f5", "ivory": "fffff0",
          "floralwhite": "fffaf0", "azure": "f0ffff", "mintcream": "f5fffa", "seashell": "fff5ee",
          "honeydew": "f0fff0", "aliceblue": "f0f8ff", "lavenderblush": "fff0f5", "linen": "faf0e6",
          "oldlace": "fdf5e6", "cornsilk": "fff8dc", "lightyellow": "ffffe0", "lightcyan": "e0ffff",
          "beige": "f5f5dc", "black": "000000", "red": "ff0000", "blue": "0000ff", "gray": "808080",
          "grey": "808080", "silver": "c0c0c0", "yellow": "ffff00"}


def css_color(value: str) -> tuple[Rgb, float] | None:
    """A CSS colour as (RGB, alpha): named, ``#rgb[a]``, ``#rrggbb[aa]``, ``rgb[a]()``, ``hsl[a]()``,
    ``transparent``; None for what is not read (``currentcolor``, ``inherit``, a variable)."""
    import colorsys

    from rag_bench.parsing.css import number

    value = value.strip().lower()
    if value == "transparent":
        return (0.0, 0.0, 0.0), 0.0
    if value in _NAMED:
        rgb = hex_rgb(_NAMED[value])
        return (rgb, 1.0) if rgb else None
    if value.startswith("#"):
        h = value[1:]
        rgb = hex_rgb(h)
        if rgb is None:
            return None
        alpha = int(h[3] * 2, 16) / 255 if len(h) == 4 else int(h[6:8], 16) / 255 if len(h) == 8 else 1.0
        return rgb, alpha
    for fn in ("rgba(", "rgb(", "hsla(", "hsl("):
        if value.startswith(fn) and value.endswith(")"):
            parts = value[len(fn):-1].replace(",", " ").replace("/", " ").split()
            if len(parts) not in (3, 4):
                return None
            read = number(parts[3]) if len(parts) == 4 else 1.0
            if read is None:
                return None
            alpha = read
            if fn.startswith("rgb"):
                chans = [number(p) if p.endswith("%") else (number(p) or 0.0) / 255 for p in parts[:3]]
                if any(c is None or number(p) is None for c, p in zip(chans, parts[:3], strict=True)):
                    return None
                r, g, b = (min(1.0, max(0.0, float(c or 0.0))) for c in chans)
                return (r, g, b), alpha
            hue = number(parts[0].removesuffix("deg"))
            sat, light = number(parts[1]), number(parts[2])
            if hue is None or sat is None or light is None:
                return None
            r, g, b = colorsys.hls_to_rgb((hue / 360) % 1.0, min(1.0, light), min(1.0, sat))
            return (r, g, b), alpha
    return None


def _length(decls: dict[str, str], name: str) -> float | None:
    from rag_bench.parsing.css import length_pt

    return length_pt(decls[name]) if name in decls else None


def _transparent(decls: dict[str, str]) -> bool:
    """An opacity at most :data:`MIN_ALPHA`."""
    from rag_bench.parsing.css import number

    opacity = number(decls["opacity"]) if "opacity" in decls else None
    return opacity is not None and opacity <= MIN_ALPHA


def _scaled_to_nothing(decls: dict[str, str]) -> bool:
    """A transform with a zero scale."""
    transform = decls.get("transform", "").replace(" ", "")
    return any(transform.startswith(f) or f"){f}" in transform for f in ("scale(0)", "scale(0,", "scalex(0)",
                                                                         "scaley(0)", "scale(0.0)"))


def _clipped(decls: dict[str, str]) -> bool:
    """Clipped to nothing: a ``clip-path`` inset of half the box or more, a circle or ellipse of no
    radius, or a ``clip`` rectangle below :data:`MIN_SIZE` both ways."""
    from rag_bench.parsing.css import length_pt, number, words

    clip_path = decls.get("clip-path", "")
    if clip_path.startswith("inset(") and clip_path.endswith(")"):
        insets = [number(w) if w.endswith("%") else None for w in words(clip_path[6:-1])]
        if any(v is not None and v >= 0.5 for v in insets):
            return True
    if clip_path.replace(" ", "").startswith(("circle(0)", "circle(0%", "circle(0px", "ellipse(0")):
        return True
    clip = decls.get("clip", "").replace(",", " ")
    if clip.startswith("rect(") and clip.endswith(")"):
        box = [length_pt(w) for w in clip[5:-1].split()]
        if len(box) == 4 and all(v is not None for v in box):
            top, right, bottom, left = (float(v or 0.0) for v in box)
            return bottom - top < MIN_SIZE and right - left < MIN_SIZE
    return False


def _off_screen(decls: dict[str, str], position: str) -> bool:
    """Moved :data:`OFF_PAGE_PT` off the page: by a positioned element's offsets, a margin, a text
    indent or a translation."""
    from rag_bench.parsing.css import length_pt, words

    position = decls.get("position", position)
    offsets = [_length(decls, k) for k in ("left", "top", "right", "bottom")] if position in (
        "absolute", "fixed", "relative") else []
    margins = [_length(decls, k) for k in ("margin-left", "margin-top", "text-indent")]
    margin = words(decls.get("margin", ""))
    margins += [length_pt(margin[0]) if margin else None, length_pt(margin[-1]) if len(margin) == 4 else None]
    transform = decls.get("transform", "").replace(" ", "")
    for fn in ("translate(", "translatex(", "translatey(", "translate3d("):
        at = transform.find(fn)
        if at >= 0:
            margins += [length_pt(v) for v in transform[at + len(fn):].split(")")[0].split(",")]
    return any(v is not None and v <= -OFF_PAGE_PT for v in offsets + margins)


def _overflow_nothing(decls: dict[str, str]) -> bool:
    """A box below :data:`MIN_SIZE` in height or width that hides its overflow."""
    overflow = {decls.get(k, "") for k in ("overflow", "overflow-x", "overflow-y")}
    if overflow & {"hidden", "clip"} or decls.get("overflow", "").split()[:1] in (["hidden"], ["clip"]):
        sizes = [_length(decls, k) for k in ("height", "max-height", "width", "max-width")]
        return any(v is not None and v < MIN_SIZE for v in sizes)
    return False


# css_subtree_hidden's checks, in the order it makes them: the first that holds names the reason.
_SUBTREE_HIDDEN: tuple[tuple[str, Callable[[dict[str, str], str], bool]], ...] = (
    ("display-none", lambda d, _: d.get("display") == "none"),
    ("transparent", lambda d, _: _transparent(d)),
    ("zero-size", lambda d, _: _scaled_to_nothing(d)),
    ("clipped", lambda d, _: _clipped(d)),
    ("off-screen", _off_screen),
    ("zero-size", lambda d, _: _overflow_nothing(d)),
)


def css_subtree_hidden(decls: dict[str, str], position: str = "") -> str:
    """Why nothing inside an element with these declarations is seen ('' when something may be):
    ``display:none``, an opacity at most :data:`MIN_ALPHA`, a zero scale, clipped to nothing,
    moved :data:`OFF_PAGE_PT` off the page, or a box of no height or width that hides its overflow.
    Properties a descendant can override (colour, size, visibility) are :func:`css_text_state`'s."""
    return next((reason for reason, hides in _SUBTREE_HIDDEN if hides(decls, position)), "")


def css_text_state(decls: dict[str, str], parent: dict[str, Any]) -> dict[str, Any]:
    """The inherited state (colour and its alpha, background, font size in points, visibility) of
    an element's text, from its parent's state and its own declarations."""
    from rag_bench.parsing.css import length_pt, number

    state = dict(parent)
    if "color" in decls:
        color = css_color(decls["color"])
        if color is not None:
            state["color"], state["alpha"] = color
    for key in ("background-color", "background"):
        if key in decls:
            bg = css_color(decls[key]) or (css_color(decls[key].split()[0]) if decls[key].split() else None)
            if bg is not None and bg[1] > MIN_ALPHA:
                state["background"] = bg[0]
            elif bg is None and any(w in decls[key] for w in ("url(", "gradient(")):
                state["background"] = None  # an image behind the text: its colour is not judged
    if "font-size" in decls:
        value = decls["font-size"]
        em = number(value[:-2]) if value.endswith(("em", "ex")) and not value.endswith("rem") else None
        pct = number(value) if value.endswith("%") else None
        if em is not None:
            state["size"] = state["size"] * em * (0.5 if value.endswith("ex") else 1.0)
        elif pct is not None:
            state["size"] = state["size"] * pct
        else:
            size = length_pt(value)
            if size is not None:
                state["size"] = size
    visibility = decls.get("visibility")
    if visibility in ("hidden", "collapse"):
        state["visible"] = False
    elif visibility == "visible":
        state["visible"] = True
    return state


TEXT_STATE: dict[str, Any] = {"color": (0.0, 0.0, 0.0), "alpha": 1.0, "background": (1.0, 1.0, 1.0),
                              "size": 12.0, "visible": True}


def text_hidden(state: dict[str, Any]) -> str:
    """Why text drawn in ``state`` (:func:`css_text_state`) is not seen ('' when it is)."""
    if not state["visible"]:
        return "invisible"
    if state["alpha"] <= MIN_ALPHA:
        return "transparent"
    if state["background"] is not None and is_faint(state["color"], state["background"]):
        return "white"
    return "tiny" if is_tiny(state["size"]) else ""


def warning(counts: dict[str, int], dropped: bool) -> list[str]:
    """``hidden text: N characters in white/tiny text (dropped)``, or nothing when none."""
    total = sum(counts.values())
    if not total:
        return []
    how = "/".join(k for k, v in counts.items() if v)
    return [f"hidden text: {total} characters in {how} text " + (
        "(dropped from the parse)" if dropped else "(kept: this parser cannot drop it; a person does not see it)")]


class PdfHiddenCounter:
    """A pypdf operator visitor counting characters a person does not see, per text-showing operator
    (``Tj``, ``TJ``, ``'``, ``"``) in the state it draws in: filled in a colour :func:`is_faint`
    calls unseen (``g``/``rg``/``k`` and ``cs``/``sc``/``scn`` in a device, calibrated, ICC, named
    or separation colour space), with a fill opacity at most :data:`MIN_ALPHA` (``/ca`` of an
    ExtGState set by ``gs``), in render mode 3 or 7 (invisible), below :data:`MIN_SIZE` in height or
    in width (``0 Tz`` squeezes text to nothing), or drawn off the page's media box. The graphics
    state is saved and restored by ``q``/``Q``. Call :meth:`page` before each page's extraction and
:meth:`end_page` after the last. Invisible text on a page that draws an image is a scan's OCR text
layer (the image shows it): not counted. A colour is judged against what is behind the text: the
last rectangle filled before it under its start (``re`` then ``f``), else the white page."""

    def __init__(self) -> None:
        self.counts = {"white": 0, "transparent": 0, "invisible": 0, "tiny": 0, "off-page": 0}
        self._state = self._initial()
        self._stack: list[dict[str, Any]] = []
        self._gstates: dict[str, Any] = {}
        self._spaces: dict[str, Any] = {}
        self._fonts: dict[str, Any] = {}
        self._box = (-math.inf, -math.inf, math.inf, math.inf)
        self._xobjects: dict[str, Any] = {}
        self._image = False
        self._invisible = 0  # this page's, counted at its end unless it draws an image (a scan's OCR layer)
        self._rects: list[tuple[float, float, float, float]] = []  # the path being built (``re``)
        self._fills: list[tuple[tuple[float, float, float, float], Rgb]] = []  # filled rectangles, in order

    @staticmethod
    def _initial() -> dict[str, Any]:
        return {"fill": (0.0,), "space": "DeviceGray", "alpha": 1.0, "render": 0, "hscale": 1.0, "size": 0.0,
                "wide": False}

    def page(self, page: Any) -> None:
        """Start a page: its ExtGState, ColorSpace, Font and XObject resources and its media box
        (pypdf objects)."""
        self.end_page()
        self._state, self._stack, self._rects, self._fills = self._initial(), [], [], []
        try:
            res = page.get("/Resources") or {}
            res = res.get_object() if hasattr(res, "get_object") else res
            self._gstates = dict(res.get("/ExtGState") or {})
            self._spaces = dict(res.get("/ColorSpace") or {})
            self._fonts = dict(res.get("/Font") or {})
            self._xobjects = dict(res.get("/XObject") or {})
        except Exception:  # a malformed resource dictionary: no named states, spaces, fonts or images
            self._gstates, self._spaces, self._fonts, self._xobjects = {}, {}, {}, {}
        try:
            box = [float(v) for v in page.mediabox]
            self._box = (min(box[0], box[2]), min(box[1], box[3]), max(box[0], box[2]), max(box[1], box[3]))
        except Exception:
            self._box = (-math.inf, -math.inf, math.inf, math.inf)

    def end_page(self) -> None:
        """Count the page's invisible (render mode 3/7) text unless the page draws an image: on a
        scanned page that text is the OCR layer over the image, which shows it."""
        if not self._image:
            self.counts["invisible"] += self._invisible
        self._invisible, self._image = 0, False

    def _space(self, name: Any) -> str:
        """A colour space operand as its family name (a named resource resolved)."""
        name = str(name)
        if name in ("/DeviceGray", "/DeviceRGB", "/DeviceCMYK", "/Pattern"):
            return name[1:]
        spec: Any = self._spaces.get(name)
        try:
            spec = spec.get_object() if hasattr(spec, "get_object") else spec
            if isinstance(spec, list) and spec:
                family = str(spec[0]).lstrip("/")
                if family == "ICCBased":
                    n = int(spec[1].get_object().get("/N", 3))
                    return {1: "DeviceGray", 3: "DeviceRGB", 4: "DeviceCMYK"}.get(n, "")
                return family
            return str(spec).lstrip("/") if spec is not None else ""
        except Exception:
            return ""

    def before(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        """Track the graphics state the text is drawn with."""
        handler = self._OPERATORS.get(op)
        if handler is None:
            return
        try:
            handler(self, op, args, cm, tm)
        except (TypeError, ValueError, KeyError, AttributeError):
            pass  # a malformed operand: the state stays as it was

    # One handler per operator, all called as (self, op, args, cm, tm); a handler whose operands are
    # missing does nothing.

    def _save(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        self._stack.append(dict(self._state))

    def _restore(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        self._state = self._stack.pop() if self._stack else self._initial()

    def _device_fill(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        self._state["fill"] = tuple(float(a) for a in args)
        self._state["space"] = {b"g": "DeviceGray", b"rg": "DeviceRGB", b"k": "DeviceCMYK"}[op]

    def _fill_space(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            st = self._state
            st["space"] = self._space(args[0])
            st["fill"] = (0.0,) if st["space"] != "DeviceCMYK" else (0.0, 0.0, 0.0, 1.0)

    def _fill_color(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        self._state["fill"] = tuple(float(a) for a in args if isinstance(a, (int, float)))

    def _graphics_state(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            gstate: Any = self._gstates.get(str(args[0]))
            gstate = gstate.get_object() if hasattr(gstate, "get_object") else gstate
            if gstate is not None and "/ca" in gstate:
                self._state["alpha"] = float(gstate["/ca"])

    def _render_mode(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            self._state["render"] = int(args[0])

    def _horizontal_scale(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            self._state["hscale"] = float(args[0]) / 100.0

    def _font(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if len(args) >= 2:
            st = self._state
            st["size"] = float(args[1])
            font: Any = self._fonts.get(str(args[0]))
            font = font.get_object() if hasattr(font, "get_object") else font
            st["wide"] = font is not None and str(font.get("/Subtype", "")) == "/Type0"  # two-byte codes

    def _rectangle(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if len(args) == 4:
            x, y, w, h = (float(a) for a in args)
            xs, ys = zip(*((px * cm[0] + py * cm[2] + cm[4], px * cm[1] + py * cm[3] + cm[5])
                           for px, py in ((x, y), (x + w, y + h), (x, y + h), (x + w, y))), strict=True)
            self._rects.append((min(xs), min(ys), max(xs), max(ys)))

    def _paint(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        rgb = to_rgb(self._state["fill"], self._state["space"])
        if op not in (b"n", b"S", b"s") and rgb is not None:
            self._fills += [(rect, rgb) for rect in self._rects]
        self._rects = []

    def _inline_image(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        self._image = True

    def _draw_object(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            xobject: Any = self._xobjects.get(str(args[0]))
            xobject = xobject.get_object() if hasattr(xobject, "get_object") else xobject
            self._image = self._image or (xobject is not None and str(xobject.get("/Subtype")) == "/Image")

    def _show(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args:
            self._shown([args[-1]], cm, tm)

    def _show_array(self, op: bytes, args: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        if args and isinstance(args[0], list):
            self._shown(args[0], cm, tm)

    _OPERATORS: ClassVar[dict[bytes, Callable[..., None]]] = {
        b"q": _save, b"Q": _restore, b"g": _device_fill, b"rg": _device_fill, b"k": _device_fill,
        b"cs": _fill_space, b"sc": _fill_color, b"scn": _fill_color, b"gs": _graphics_state, b"Tr": _render_mode,
        b"Tz": _horizontal_scale, b"Tf": _font, b"re": _rectangle,
        **dict.fromkeys((b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*", b"n", b"S", b"s"), _paint),
        b"BI": _inline_image, b"INLINE IMAGE": _inline_image, b"Do": _draw_object,
        b"Tj": _show, b"'": _show, b'"': _show, b"TJ": _show_array}

    def _shown(self, strings: Sequence[Any], cm: Sequence[float], tm: Sequence[float]) -> None:
        """Count the characters one text-showing operator draws, in the state it draws them in (pypdf's
        text callback comes later, once per run of operators, in the state of the last one)."""
        st = self._state
        n = 0
        for s in strings:
            if isinstance(s, (int, float)):
                continue
            raw = s.get_original_bytes() if hasattr(s, "get_original_bytes") else bytes(s) if isinstance(
                s, (bytes, bytearray)) else str(s).encode("latin-1", "replace")
            n += len(raw) // 2 if st["wide"] else sum(b not in b" \t\r\n\x00" for b in raw)
        if not n:
            return
        try:
            scale = math.sqrt(abs(tm[0] * tm[3] - tm[1] * tm[2]) * abs(cm[0] * cm[3] - cm[1] * cm[2]))
            x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
            y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        except (TypeError, IndexError):
            scale, x, y = 1.0, 0.0, 0.0
        height = float(st["size"]) * scale
        width = height * abs(float(st["hscale"])) * 0.5 * n  # about half an em per character
        x0, y0, x1, y1 = self._box
        cx, cy = x + min(width, height) / 2, y + height / 3  # inside the first character
        behind = next((rgb for (bx0, by0, bx1, by1), rgb in reversed(self._fills)
                       if bx0 <= cx <= bx1 and by0 <= cy <= by1), (1.0, 1.0, 1.0))
        if is_faint(to_rgb(st["fill"], st["space"]), behind):
            self.counts["white"] += n
        elif float(st["alpha"]) <= MIN_ALPHA:
            self.counts["transparent"] += n
        elif st["render"] in (3, 7):
            self._invisible += n
        elif is_tiny(height) or is_tiny(height * abs(float(st["hscale"]))):
            self.counts["tiny"] += n
        elif x + width < x0 or x > x1 or y + height < y0 or y > y1:
            self.counts["off-page"] += n
