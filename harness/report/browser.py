"""Open a page of the harness in headless Chromium (Debian's `chromium`, driven by Playwright): the
script errors it raised, the plots it drew, a screenshot. The pages' tests and the README's screenshots
use it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError

#: flags for a machine with no network beyond loopback: no background connections, no first-run work
FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")
INSTALL = "run `bash scripts/install.sh --all` (Debian's chromium and the playwright package)"


@dataclass
class Opened:
    errors: list[str] = field(default_factory=list)  # uncaught script errors and console errors
    plots: list[str] = field(default_factory=list)  # the titles of the plots that drew an SVG
    words: list[str] = field(default_factory=list)  # the result badges shown (PASS, FAIL, ...)
    title: str = ""


def chromium() -> str:
    """The Chromium executable (KSH_CHROMIUM, else `chromium` on PATH), installed from Debian on first use where
    this process may (`ensure_chromium`); one line naming the fix if none."""
    return ensure_chromium()


def _found() -> str | None:
    return os.environ.get("KSH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def ensure_chromium() -> str:
    """Debian's chromium, installed with apt-get on first use when running as root on a Debian-like machine (the
    main job's install leaves it out: only the pages' tests and plot images need it), one process at a time
    (a lock in the cache), with a progress line; elsewhere one line naming the fix."""
    path = _found()
    if path:
        return path
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None:
        raise HarnessError(f"no Chromium found (KSH_CHROMIUM or `chromium` on PATH): {INSTALL}")
    import fcntl
    import subprocess

    from harness.sys.paths import cache_dir  # (deferred: only on a first use that installs)
    from harness.sys.progress import progress  # (deferred: only on a first use that installs)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "chromium.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it
        if _found() is None:
            progress("installing Debian's chromium with apt-get (first use: the pages' browser; about a minute)")
            env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
            for step in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
                try:
                    proc = subprocess.run(step, env=env, capture_output=True, text=True, timeout=900)
                except subprocess.TimeoutExpired:
                    raise HarnessError(f"`{' '.join(step[:2])}` took over 15 minutes: check that Debian's mirror "
                                       f"is reachable, or {INSTALL}") from None
                if proc.returncode != 0:
                    said = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
                    raise HarnessError(f"`apt-get {step[1]}` failed ({said[-1].strip() if said else proc.returncode})"
                                       f": install chromium yourself (apt-get install chromium) or set KSH_CHROMIUM")
    path = _found()
    if not path:
        raise HarnessError(f"apt-get installed chromium but no `chromium` is on PATH: set KSH_CHROMIUM to its path")
    return path


def open_page(page_path: Path, screenshot: Path | None = None, width: int = 1300, timeout_s: float = 60) -> Opened:
    """Load `page_path` (a file) and wait until every `.plot` drew its SVG (or `timeout_s` passes). The
    screenshot goes into a directory that exists (Playwright would make any missing one: never asked for)."""
    if screenshot is not None and not Path(screenshot).absolute().parent.is_dir():
        raise HarnessError(f"the screenshot {screenshot}: its directory {Path(screenshot).absolute().parent} does not "
                           f"exist: give a PNG path in an existing directory")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise HarnessError(f"the playwright package is not installed: {INSTALL}") from None
    opened = Opened()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=list(FLAGS), timeout=timeout_s * 1000)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("pageerror", lambda exc: opened.errors.append(f"script error: {exc}"))
            page.on("console", lambda msg: msg.type == "error" and opened.errors.append(f"console: {msg.text}"))
            page.goto(page_path.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
            expected = page.locator("div.plot").count()
            try:
                page.wait_for_function(f"document.querySelectorAll('div.plot .main-svg').length >= {expected}",
                                       timeout=timeout_s * 1000)
            except Error as exc:  # reported as plots missing, not raised: the caller names what is wrong
                opened.errors.append(f"plots not drawn within {timeout_s:.0f} s: {str(exc).splitlines()[0]}")
            opened.plots = page.eval_on_selector_all(
                "div.plot", "els => els.filter(e => e.querySelector('.main-svg')).map(e => e.dataset.title)")
            opened.words = page.eval_on_selector_all(".word", "els => els.map(e => e.textContent)")
            opened.title = page.title()
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return opened
