"""Headless Chromium for report tests (Playwright for Python, system Chromium, no network)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "report"))

CHROMIUM = os.environ.get("AXL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Watched:
    """A page whose requests, console errors and dialogs are recorded."""

    def __init__(self, page: Any, file_url: str) -> None:
        self.page = page
        self.file_url = file_url
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

        def on_dialog(d: Any) -> None:
            self.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", on_dialog)

        def route(r: Any) -> None:
            if r.request.url.split("#")[0] == file_url:
                r.continue_()
            else:
                r.abort()

        page.route("**/*", route)

    def open(self, fragment: str = "") -> Any:
        self.page.goto(self.file_url + fragment)
        self.page.wait_for_selector("#explorer[data-ready=true]", timeout=30_000)
        self.settle()
        return self.page

    def settle(self) -> None:
        """Wait until the page unpacks nothing more (an opened item's chunk, a text search)."""
        self.page.wait_for_selector("#explorer[data-ready=true]:not([data-busy])", timeout=30_000)


@pytest.fixture
def open_report(browser: Any, tmp_path: Path) -> Iterator[Any]:
    contexts: list[Any] = []

    def _open(html: str, *, name: str = "report.html", viewport: dict[str, int] | None = None) -> Watched:
        path = tmp_path / name
        path.write_text(html, encoding="utf-8")
        ctx = browser.new_context(viewport=viewport or {"width": 1280, "height": 900})
        contexts.append(ctx)
        return Watched(ctx.new_page(), path.as_uri())

    yield _open
    for ctx in contexts:
        ctx.close()
