"""Take the screenshots of docs/report/ from a rendered report, with headless Chromium.

    python -m rag_bench.cli run -m +experiment=demo && python -m rag_bench.cli report experiments/demo
    python docs/report/screenshots.py reports/demo/index.html docs/report

Each view is the page's own `#only=<section>` (one section alone) or another URL state; Chromium is
driven over the DevTools protocol (the `websockets` package MLflow already installs) so each shot is
cropped to the section's height, then stored as a palette PNG (each must stay under 300 KB).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VIEWS = [  # (file, URL fragment); head.png is the page's top: the title, the verdict and the contents
    ("head.png", "#"),
    ("versus.png", "#only=versus"),
    ("leaderboard.png", "#only=leaderboard"),
    ("effects.png", "#only=effects"),
    ("effects_ndcg.png", "#only=effects&effect=retrieval/ndcg@10"),
    ("pareto.png", "#only=pareto"),
    ("tags.png", "#only=tags"),
    ("failures.png", "#only=failures"),
    ("depth.png", "#only=depth"),
    ("abstention.png", "#only=abstention"),
    ("conditional.png", "#only=conditional"),
    ("answers.png", "#only=answers"),
    ("trust.png", "#only=trust"),
    ("side.png", "#only=side&side=3&differ=1"),
    ("security.png", "#only=security"),
    ("costs.png", "#only=costs"),
]
WIDTH = 1220


async def _shoot(ws_url: str, page: str, views: list[tuple[str, str]], out: Path, drill: str | None) -> None:
    import websockets
    from PIL import Image

    async with websockets.connect(ws_url, max_size=2**28) as ws:
        counter = 0

        async def call(method: str, **params: object) -> dict:
            nonlocal counter
            counter += 1
            await ws.send(json.dumps({"id": counter, "method": method, "params": params}))
            while True:
                msg = json.loads(await ws.recv())
                if msg.get("id") == counter:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg["result"]

        await call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=900, deviceScaleFactor=1, mobile=False)
        if drill:
            views = [*views, ("drill.png", f"#drill={drill}&only=drill")]
        for name, fragment in views:
            await call("Page.navigate", url="about:blank")
            await call("Page.navigate", url=page + fragment)
            await asyncio.sleep(2.5)  # images, drill scripts
            shown = ".rb-head" if fragment == "#" else "#rb-main > *, #drill, #rb-detail"
            height = (await call("Runtime.evaluate", returnByValue=True, expression=(
                f"Math.ceil(Math.max(...Array.from(document.querySelectorAll('{shown}'))"
                ".filter(e => !e.hidden && e.offsetParent !== null)"
                ".map(e => e.getBoundingClientRect().bottom + window.scrollY), 100)) + 16")))["result"]["value"]
            width = WIDTH  # the page is laid out for this width; a wider table scrolls inside it
            await call("Emulation.setDeviceMetricsOverride", width=width, height=int(height), deviceScaleFactor=1,
                       mobile=False)
            await asyncio.sleep(0.5)
            shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                              clip={"x": 0, "y": 0, "width": width, "height": int(height), "scale": 1})
            image = Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")
            image.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(out / name, optimize=True)
            print(f"{name}: {image.size[0]}x{image.size[1]}, {(out / name).stat().st_size // 1024} KB")
            await call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=900, deviceScaleFactor=1,
                       mobile=False)


def main(argv: list[str]) -> int:
    index, out = Path(argv[0]).resolve(), Path(argv[1])
    drill = argv[2] if len(argv) > 2 else None  # e.g. '<cell_id>&label=generation&q=q004'
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("chromium is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 "--hide-scrollbars", "--disable-background-networking", "--disable-sync",
                                 f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            for _ in range(100):
                if port_file.is_file() and len(port_file.read_text().split()) >= 2:
                    break
                time.sleep(0.1)
            port = port_file.read_text().split()[0]
            from urllib.request import urlopen

            targets = json.loads(urlopen(f"http://127.0.0.1:{port}/json").read())
            ws_url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            asyncio.run(_shoot(ws_url, index.as_uri(), VIEWS, out, drill))
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
