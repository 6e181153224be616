"""``parser=python_docx``: Word (.docx) by python-docx: paragraphs in body order, ``Heading N``
and ``Title`` styles as ``#`` headings, list styles as list items, tables as Markdown tables.
Macros and embedded objects are never run (a .docx cannot hold macros; embedded parts are not read).
Runs a person does not see -- hidden (``w:vanish``), a faint colour (white, ``FFFFFE``, theme
``background1``) or below 2pt, each resolved through the document defaults, the paragraph and
character styles and their ``basedOn`` chains -- are stripped from the file before it is read
(:func:`strip_hidden`, shared with parser=mammoth) and counted in a ``hidden text`` warning
(rag_bench.parsing.hidden)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from rag_bench.parsing.base import Parsed, ParseFailure, markdown_table, package_version, require
from rag_bench.parsing.hidden import RULES, hex_rgb, is_faint, is_tiny, warning

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_THEME_SLOT = {"dark1": "dk1", "light1": "lt1", "dark2": "dk2", "light2": "lt2", "text1": "dk1", "background1": "lt1",
               "text2": "dk2", "background2": "lt2", "hyperlink": "hlink", "followedHyperlink": "folHlink",
               **{f"accent{i}": f"accent{i}" for i in range(1, 7)}}
_THEME_DEFAULT = {"dk1": "000000", "lt1": "FFFFFF", "dk2": "44546A", "lt2": "E7E6E6", "hlink": "0563C1",
                  "folHlink": "954F72", "accent1": "4472C4", "accent2": "ED7D31", "accent3": "A5A5A5",
                  "accent4": "FFC000", "accent5": "5B9BD5", "accent6": "70AD47"}
_HIGHLIGHT = {"black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF",
              "red": "FF0000", "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080",
              "darkGreen": "008000", "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000",
              "darkGray": "808080", "lightGray": "C0C0C0"}


def _on(el: Any) -> bool:
    """A toggle property (``<w:vanish/>``, ``w:val="false"`` turns it off)."""
    return str(el.get(W + "val", "true")).lower() not in ("0", "false", "off")


class RunStyles:
    """What a run's properties resolve to in one document: document defaults, then the paragraph's
    style (or the default paragraph style) and its ``basedOn`` chain, then the run's character style
    and its chain, then the run's own properties; theme colours read from the theme part."""

    def __init__(self, styles: Any, theme: Any) -> None:
        self.styles = {str(st.get(W + "styleId")): st for st in (styles.iter(W + "style") if styles is not None else ())}
        self.default_para = next((sid for sid, st in self.styles.items() if st.get(W + "type") == "paragraph"
                                  and _on_default(st)), None)
        rpr = styles.find(f"{W}docDefaults/{W}rPrDefault/{W}rPr") if styles is not None else None
        self.defaults = self._props(rpr, {})
        self.theme = dict(_THEME_DEFAULT)
        scheme = theme.find(f".//{A}clrScheme") if theme is not None else None
        for slot in (scheme if scheme is not None else ()):
            name = str(slot.tag).rsplit("}", 1)[-1]
            for color in slot:
                value = color.get("val") if str(color.tag).endswith("srgbClr") else color.get("lastClr")
                if value and hex_rgb(value):
                    self.theme[name] = value
        self._cache: dict[str | None, dict[str, Any]] = {}

    def _color(self, el: Any) -> Any:
        theme = el.get(W + "themeColor")
        value = self.theme.get(_THEME_SLOT.get(str(theme), ""), "") if theme else str(el.get(W + "val", ""))
        if not value or value == "auto":
            return "auto"
        rgb = hex_rgb(value)
        if rgb is None:
            return "auto"
        shade, tint = el.get(W + "themeShade"), el.get(W + "themeTint")
        r, g, b = rgb
        if shade and hex_rgb(shade * 3):
            f = int(shade, 16) / 255
            r, g, b = r * f, g * f, b * f
        if tint and hex_rgb(tint * 3):
            t = 1 - int(tint, 16) / 255
            r, g, b = r + (1 - r) * t, g + (1 - g) * t, b + (1 - b) * t
        return (r, g, b)

    def _props(self, rpr: Any, base: dict[str, Any]) -> dict[str, Any]:
        props = dict(base)
        if rpr is None:
            return props
        for el in rpr:
            tag = str(el.tag).removeprefix(W)
            if tag == "vanish":
                props["vanish"] = _on(el)
            elif tag == "color":
                props["color"] = self._color(el)
            elif tag == "sz":
                try:
                    props["size"] = int(str(el.get(W + "val"))) / 2
                except ValueError:
                    pass
            elif tag == "shd" and el.get(W + "fill") not in (None, "auto"):
                props["background"] = hex_rgb(str(el.get(W + "fill")))
            elif tag == "highlight" and el.get(W + "val") in _HIGHLIGHT:
                props["background"] = hex_rgb(_HIGHLIGHT[str(el.get(W + "val"))])
        return props

    def style(self, style_id: str | None, seen: frozenset[str] = frozenset()) -> dict[str, Any]:
        """A style's run properties with those it is based on (a loop in ``basedOn`` is cut)."""
        if style_id is None or style_id not in self.styles or style_id in seen:
            return {}
        if style_id in self._cache:
            return self._cache[style_id]
        st = self.styles[style_id]
        based = st.find(W + "basedOn")
        base = self.style(str(based.get(W + "val")), seen | {style_id}) if based is not None else {}
        props = self._props(st.find(W + "rPr"), base)
        self._cache[style_id] = props
        return props

    def run_properties(self, r: Any, p: Any) -> dict[str, Any]:
        """The run ``r``'s resolved properties inside paragraph ``p`` (None: not in a paragraph)."""
        props = dict(self.defaults)
        ppr = p.find(W + "pPr") if p is not None else None
        pstyle = ppr.find(W + "pStyle") if ppr is not None else None
        props.update(self.style(str(pstyle.get(W + "val")) if pstyle is not None else self.default_para))
        rpr = r.find(W + "rPr")
        rstyle = rpr.find(W + "rStyle") if rpr is not None else None
        if rstyle is not None:
            props.update(self.style(str(rstyle.get(W + "val"))))
        props = self._props(rpr, props)
        if "background" not in props:  # the paragraph's or the table cell's shading
            for holder in ((ppr,) if ppr is not None else ()) + tuple(r.iterancestors(W + "tcPr", W + "tc")):
                shd = holder.find(W + "shd") if holder.tag == W + "pPr" else holder.find(f"{W}tcPr/{W}shd")
                if shd is not None and shd.get(W + "fill") not in (None, "auto"):
                    props["background"] = hex_rgb(str(shd.get(W + "fill")))
                    break
        return props


def _on_default(style: Any) -> bool:
    return str(style.get(W + "default", "")).lower() in ("1", "true", "on")


def run_hidden(props: dict[str, Any]) -> str:
    """Why a person does not see a run with these resolved properties ('' when they do): vanish,
    a faint colour against its shading or the white page (rag_bench.parsing.hidden's one rule), tiny."""
    if props.get("vanish"):
        return "vanish"
    color, background = props.get("color", "auto"), props.get("background") or (1.0, 1.0, 1.0)
    if color != "auto" and is_faint(color, background):
        return "white"
    size = props.get("size")
    return "tiny" if size is not None and is_tiny(size) else ""


STORY_PARTS = ("word/document.xml", "word/footnotes.xml", "word/endnotes.xml")  # the text parts the parsers read


def strip_hidden(data: bytes) -> tuple[bytes, dict[str, int]]:
    """The DOCX without the runs of its body, footnotes and endnotes a person does not see, and
    their characters by reason (styles resolved: :class:`RunStyles`). Every DOCX parser reads the
    stripped file, so each drops the same text; unchanged bytes when nothing is hidden."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    counts = {"vanish": 0, "white": 0, "tiny": 0}
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())

        def part(name: str) -> Any:
            return etree.fromstring(z.read(name), parser) if name in names else None

        styles, theme = part("word/styles.xml"), part("word/theme/theme1.xml")
        resolver = RunStyles(styles, theme)
        changed: dict[str, Any] = {}
        for name in STORY_PARTS:
            root = part(name)
            hidden = []
            for r in root.iter(W + "r") if root is not None else ():
                why = run_hidden(resolver.run_properties(r, next(r.iterancestors(W + "p"), None)))
                if why:
                    counts[why] += sum(not c.isspace() for t in r.iter(W + "t") for c in (t.text or ""))
                    hidden.append(r)
            for r in hidden:
                if r.getparent() is not None:
                    r.getparent().remove(r)
            if hidden:
                changed[name] = root
        if not changed:
            return data, counts
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as w:
            for info in z.infolist():
                body = (etree.tostring(changed[info.filename], xml_declaration=True, encoding="UTF-8",
                                       standalone=True) if info.filename in changed else z.read(info.filename))
                w.writestr(info, body)
    return out.getvalue(), counts


MAX_UNPACKED = 256 << 20  # a zip bomb is refused before python-docx unpacks it


def _paragraph(p: Any) -> str:
    text = " ".join(str(p.text).split())
    if not text:
        return ""
    style = str(getattr(p.style, "name", "") or "")
    if style == "Title":
        return "# " + text
    if style.startswith("Heading"):
        level = style.removeprefix("Heading").strip()
        n = int(level) if level.isdigit() else 1
        return "#" * min(n + 1, 6) + " " + text
    if style.startswith("List Number"):
        return "1. " + text
    if style.startswith("List"):
        return "- " + text
    return text



def check_unpacked(data: bytes) -> None:
    """Refuse a DOCX (a zip) that unpacks past :data:`MAX_UNPACKED` before any of it is read
    (a zip bomb); a file that is not a zip raises ``zipfile.BadZipFile``."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        unpacked = sum(i.file_size for i in z.infolist())
    if unpacked > MAX_UNPACKED:
        raise ParseFailure(f"unpacks to {unpacked >> 20} MiB (limit {MAX_UNPACKED >> 20} MiB)")

class DocxParser:
    """DOCX paragraphs, headings, lists and tables, in body order."""

    suffixes: tuple[str, ...] = (".docx",)

    def __init__(self, name: str = "python_docx") -> None:
        self.name = name
        require("docx", "python-docx", name)

    def version(self) -> str:
        """python-docx's version."""
        return f"{package_version('python-docx')}+{RULES}"

    def parse(self, data: bytes, suffix: str) -> Parsed:
        """The document's Markdown."""
        docx = require("docx", "python-docx", self.name)
        try:
            check_unpacked(data)
            data, counts = strip_hidden(data)
            document = docx.Document(io.BytesIO(data))
            blocks: list[str] = []
            for item in document.iter_inner_content():
                if hasattr(item, "rows"):
                    blocks.append(markdown_table([["\n".join(str(p.text) for p in c.paragraphs)
                                                   for c in row.cells] for row in item.rows]))
                else:
                    blocks.append(_paragraph(item))
        except ParseFailure:
            raise
        except Exception as exc:
            raise ParseFailure(f"unreadable DOCX ({type(exc).__name__}: {str(exc)[:200]})") from exc
        text = _join(blocks)
        if not text.strip():
            raise ParseFailure("no text in the DOCX")
        return Parsed(text=text, warnings=tuple(warning(counts, dropped=True)))


def _join(blocks: list[str]) -> str:
    """Blocks separated by blank lines, consecutive list items kept together."""
    out: list[str] = []
    for b in blocks:
        if not b:
            continue
        is_item = b.startswith(("- ", "1. "))
        if out and is_item and out[-1].split("\n")[-1].startswith(("- ", "1. ")):
            out[-1] += "\n" + b
        else:
            out.append(b)
    return "\n\n".join(out) + "\n"
