"""A minimal Chrome DevTools Protocol driver for the report's browser tests: headless Chromium,
one page, navigate, evaluate JavaScript, wait for a condition. Nothing else (no Selenium or
Playwright in the environment; ``websockets`` ships with the test dependencies)."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Page:
    """Headless Chromium with one page, driven over its DevTools websocket."""

    def __init__(self, profile: Path, size: str = "1250,1000") -> None:
        from websockets.sync.client import connect

        assert CHROMIUM is not None
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                      f"--window-size={size}", "about:blank"], stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        deadline, port = time.monotonic() + 60, None
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("chromium exited before its DevTools endpoint was up")
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            port = int(m.group(1)) if m else None
        assert port is not None, "no DevTools endpoint within 60 s"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            target = next(t for t in json.load(r) if t["type"] == "page")
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(target["webSocketDebuggerUrl"], max_size=None))
        self.n = 0
        self.errors: list[str] = []
        self.send("Runtime.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("method") == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(msg["params"])[:2000])
            if msg.get("id") == self.n:
                assert "error" not in msg, msg
                return msg["result"]

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        out = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in out, out["exceptionDetails"]
        return out["result"].get("value")

    def wait(self, expression: str, timeout: float = 30) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.eval(expression)
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && document.body.dataset.imagesOk !== undefined")

    def close(self) -> None:
        self.stack.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
