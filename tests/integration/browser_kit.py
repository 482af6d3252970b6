"""The monitor in a real browser: Debian's headless Chromium, driven through its chromedriver.

One browser serves a whole test session (:func:`browser`, a session fixture in conftest.py);
each test serves the monitor of its own host in this process (:class:`Monitored`) and opens it
with the token's URL, as a person opens the URL ``flume monitor`` printed. Chromium is started
with a new empty profile and its background connections off (the machine's closed network would
refuse them), never downloaded: without Debian's ``chromium`` and ``chromium-driver`` the browser
tests skip, saying so, or fail where scripts/test installed them (``FLUME_REQUIRE_BROWSER=1``).

Accessibility is checked with axe-core, run in the page itself from ``.node/`` (installed by
scripts/install-agents beside the pinned agents).

bench/monitor.py and scripts/screenshots.py start their Chromium with :func:`chromium` too: it
is flume's own test machinery (Selenium is the test extra's), not a tool flume.testing ships.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests import shared

#: Set to 1 where the run installed Chromium and its driver (scripts/test).
REQUIRE_BROWSER = "FLUME_REQUIRE_BROWSER"
#: axe-core, as scripts/install-agents installs it.
AXE = shared.ROOT / ".node" / "node_modules" / "axe-core" / "axe.min.js"
#: The widths the pages are checked and shown at: a laptop's, and a phone's.
WIDE = (1280, 800)
NARROW = (390, 844)
#: Chromium's flags: headless, no sandbox (as root in CI), nothing fetched in the background.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


class NoBrowser(RuntimeError):  # noqa: N818 (what is the case, as api.LaunchFailed)
    """Debian's chromium or chromium-driver is not installed; the message says which to add."""


def programs() -> tuple[str, str]:
    """Chromium and chromedriver on this machine; :class:`NoBrowser` when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        message = (
            "Debian's chromium and chromium-driver are not installed "
            "(apt-get install chromium chromium-driver)"
        )
        raise NoBrowser(message)
    return browser, driver


@contextlib.contextmanager
def chromium(width: int = WIDE[0], height: int = WIDE[1]) -> Iterator[Any]:
    """A headless Chromium, ``width`` by ``height``, quit and its profile removed at the end.

    Its Selenium WebDriver is yielded. Raises :class:`NoBrowser` without Chromium or its driver.
    """
    from selenium import webdriver  # noqa: PLC0415 (not every user of the kit drives a browser)
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415

    browser, driver = programs()
    profile = Path(tempfile.mkdtemp(prefix="flume-chromium-"))
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    made = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    made.set_page_load_timeout(30)
    try:
        yield made
    finally:
        made.quit()
        shutil.rmtree(profile, ignore_errors=True)


@contextlib.contextmanager
def started() -> Iterator[Any]:
    """A headless Chromium; a skip (or a failure, if required) without Chromium or its driver."""
    try:
        programs()
    except NoBrowser as error:
        shared.lacking(
            f"NOT TESTED IN A BROWSER: {error}; scripts/test installs them, as root",
            REQUIRE_BROWSER,
        )
    with chromium(*WIDE) as made:
        yield made


def until(predicate: Callable[[], Any], seconds: float, what: str, *, every: float = 0.1) -> Any:
    """Wait on ``predicate`` (no sleep to synchronise: a deadline); its first true value."""
    deadline = time.monotonic() + seconds
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            found = predicate()
        except Exception as error:  # noqa: BLE001 (a page mid-redraw: looked at again)
            last = error
            found = None
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {seconds}s waiting for {what}: {last!r}")


def axe(driver: Any) -> list[dict[str, Any]]:
    """The serious and critical violations axe-core finds in the page as it stands.

    A skip (or failure, where the agents were installed) without axe-core in ``.node/``.
    """
    if not AXE.is_file():
        shared.lacking(
            f"NOT CHECKED FOR ACCESSIBILITY: no axe-core at {AXE}; run scripts/install-agents",
            shared.REQUIRE_AGENTS,
        )
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    found = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then((ran) => done(ran.violations), (error) => done(String(error)));"
    )
    assert isinstance(found, list), found
    return [each for each in found if each.get("impact") in {"serious", "critical"}]


#: What the page holds that it should not, were any shown text taken as markup or code.
DOM_CHECK = (Path(__file__).with_name("dom_check.js")).read_text(encoding="utf-8")

#: How a control is told apart from the others, drawn anew or not: what it is, its id, its
#: name and value, its form, where it goes, its words.
_DESCRIBE = (
    "const describe = (each) => [each.tagName, each.id, each.name || '', each.value || '', "
    "(each.form && each.form.getAttribute('action')) || '', each.getAttribute('href') || '', "
    "(each.textContent || '').trim().slice(0, 40)].join('|');"
)
#: Each control a person reaches with the keyboard, described: links, buttons, fields and
#: summaries shown; of a group of radio buttons (one stop of the Tab key, its arrows moving
#: within it), its first.
FOCUSABLE = (
    _DESCRIBE + "return Array.from(document.querySelectorAll("
    "'a[href], button, input:not([type=hidden]), textarea, summary'))"
    ".filter((each) => each.offsetParent !== null && !(each.type === 'radio' && each.form && "
    "each.form.querySelector(`input[name='${each.name}']`) !== each)).map(describe);"
)
#: The control the keyboard is on, described.
DESCRIBE_FOCUSED = _DESCRIBE + "return describe(document.activeElement);"
