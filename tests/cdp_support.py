"""Drive Debian's headless chromium over the Chrome DevTools Protocol, through a pipe (`--remote-debugging-pipe`:
commands on the browser's fd 3, replies and events on its fd 4, each message JSON ended by a NUL byte), so the
browser tests need no driver and no Python package beyond the standard library.

`Browser(exe, profile)` starts one browser with one page; `open(url)` navigates and waits for the load event
(`click_and_wait(selector)` follows a link the same way),
`eval(expr)` returns an expression's value, `click(selector)` / `select(selector, value)` act on the page as a
user would (DOM events), `screenshot(path)` writes a PNG; `errors` collects the console errors, uncaught
exceptions and failed loads the page reported.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any


def chromium() -> str | None:
    """The chromium executable on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class CdpError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless chromium with one page (a viewport of `width` x `height` CSS pixels)."""

    def __init__(self, exe: str, profile: Path, width: int = 1280, height: int = 900, timeout: float = 60.0):
        self.timeout = timeout
        self.errors: list[str] = []
        self._id = 0
        self._buf = b""
        self._events: list[dict[str, Any]] = []
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()

        def _fds() -> None:  # in the child: its fd 3 reads our commands, its fd 4 writes the replies
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            [exe, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_fds,
            pass_fds=(3, 4, to_child_r, from_child_w),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise CdpError("no message from the browser in time")
            chunk = os.read(self._r, 1 << 16)
            if not chunk:
                raise CdpError("the browser closed its pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg = json.loads(raw)
        self._note(msg)
        return msg

    def _note(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append(
                "console: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
            )
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log: {e.get('text')} {e.get('url', '')}")
        if method:
            self._events.append(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> dict[str, Any]:
        """Send one command (to the page's session when `session`) and return its result."""
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url: str) -> None:
        """Navigate to `url` and wait for its load event."""
        self._events.clear()
        self.send("Page.navigate", {"url": url}, session=True)
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            self._read_message(deadline)

    def click_and_wait(self, selector: str) -> None:
        """Click the first element matching `selector` (a link) and wait for the page it opens to load."""
        self._events.clear()
        self.click(selector)
        deadline = time.monotonic() + self.timeout
        while not any(e.get("method") == "Page.loadEventFired" for e in self._events):
            self._read_message(deadline)

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression on the page (promises awaited)."""
        r = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, session=True
        )
        if "exceptionDetails" in r:
            raise CdpError(f"{expression}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def click(self, selector: str) -> None:
        """Click the first element matching `selector`."""
        self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    def press(self, selector: str, key: str = "Enter") -> None:
        """Focus the first element matching `selector` and press `key` (Enter or Space) as a keyboard does: real
        key events through the browser's input pipeline, so a button's keyboard activation is what runs."""
        codes = {"Enter": (13, "\r"), " ": (32, " ")}
        code, text = codes[key]
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        base = {"key": key, "code": "Space" if key == " " else key, "windowsVirtualKeyCode": code}
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": text, **base}, session=True)
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", **base}, session=True)

    def select(self, selector: str, value: str) -> None:
        """Choose `value` in the <select> matching `selector`, with the change event a user's choice fires."""
        self.eval(
            f"(()=>{{const s=document.querySelector({json.dumps(selector)});s.value={json.dumps(value)};"
            "s.dispatchEvent(new Event('change',{bubbles:true}));})()"
        )

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """Write a PNG of the page (the whole page when `full_page`) to `path`."""
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full_page}, session=True)
        path.write_bytes(base64.b64decode(r["data"]))
        return path

    def close(self) -> None:
        """Stop the browser (the one this object started)."""
        with contextlib.suppress(CdpError, OSError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)
