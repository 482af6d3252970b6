"""The monitor in a real headless Chromium, against real runs of flume's test agent.

Each test launches a workflow run on a repository of its own (the real supervisor, the test
agent in tmux, as test_workflow_run.py does) and serves the monitor of its host; the browser
opens the URL with the token, as a person opens the one ``flume monitor`` printed, and does what
a person does there: approves, raises a budget, answers a question, resolves a merge by hand,
drops after reading what is kept. Every control is a form the keyboard reaches and works.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flume.core.place import Life, PauseCause, Paused
from flume.shell.panes.tmux import Tmux
from flume.shell.store import places
from flume.shell.supervisor import client
from flume.web.monitor import key_of
from tests.integration import browser_kit
from tests.integration.agents_kit import agent_repository, place_of, script, wait_for
from tests.integration.places_kit import flume_process, run_git

#: flume runs here in processes of its own (the daemon, agents in tmux), which coverage does not
#: see: outside scripts/test's coverage gate, run in its second pass.
pytestmark = pytest.mark.processes


def launch(tmp_path: Path, repo: Path, kind: str, agent_script: str, name: str) -> Path:
    """Launch the kind ``kind`` declares (kind ``wf``), its steps run by the test agent."""
    kind_file = tmp_path / f"{name}.toml"
    kind_file.write_text(kind, encoding="utf-8")
    steps = script(tmp_path, agent_script, name=f"{name}-script.toml")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", name,
        "--brief", "the greeting", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={steps}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return places.journals_dir(repo) / f"wf--{name}" / places.JOURNAL


def paused_on(path: Path, cause: PauseCause) -> bool:
    """The place stands paused for ``cause``."""
    phase = place_of(path).stage.phase
    return isinstance(phase, Paused) and phase.cause is cause


def page_of(driver: Any, served: Any, path: Path) -> None:
    """Open the place's page, entering with the token's URL first."""
    place = place_of(path)
    driver.get(served.url)
    address = key_of(place.launch.repository, place.launch.place)
    driver.get(f"http://127.0.0.1:{served.port}/p/{address}")
    browser_kit.until(
        lambda: place.launch.place in driver.find_element("css selector", "h1").text,
        15,
        "the place's page",
    )


def press(driver: Any, selector: str) -> None:
    """Activate the control ``selector`` with the keyboard: focused, then Enter.

    The page's script may draw the control's part anew meanwhile (a live event): it is found
    again then, as a person's next key goes to the control drawn in its place.
    """
    from selenium.webdriver.common.keys import Keys  # noqa: PLC0415 (Selenium's, loaded late)

    def pressed() -> bool:
        found = driver.find_element("css selector", selector)
        driver.execute_script("arguments[0].focus()", found)
        assert driver.switch_to.active_element == found
        found.send_keys(Keys.ENTER)
        return True

    browser_kit.until(pressed, 15, f"{selector} pressed")


def typed(driver: Any, selector: str, text: str) -> None:
    """Type ``text`` into the field ``selector`` (found again if its part was drawn anew)."""

    def done() -> bool:
        field = driver.find_element("css selector", selector)
        field.clear()
        field.send_keys(text)
        return driver.find_element("css selector", selector).get_attribute("value") == text

    browser_kit.until(done, 15, f"{text[:20]!r} typed into {selector}")


def chosen(driver: Any, selector: str) -> None:
    """Choose the radio button ``selector`` (found again if its part was drawn anew)."""

    def done() -> bool:
        driver.find_element("css selector", selector).click()
        return bool(driver.find_element("css selector", selector).is_selected())

    browser_kit.until(done, 15, f"{selector} chosen")


APPROVAL = """\
[kind]
name = "wf"
body = ["sign"]

[step.sign]
prompt = "Say the greeting is ready for a person's approval."
gate = "approval"
"""
SAY_READY = """
[[turn]]
steps = [{say = "The greeting is ready."}]
"""


def test_a_run_paused_at_an_approval_is_approved_by_a_click_and_finishes(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """Paused (approval): the page names it and offers Approve; pressed, the run finishes.

    The page goes on live: the finished phase is shown without reloading it.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = launch(tmp_path, repo, APPROVAL, SAY_READY, "sign")
    wait_for(lambda: paused_on(path, PauseCause.APPROVAL), 60, "the approval pause")
    page_of(browser, monitored, path)
    ways = browser.find_element("css selector", "#ways").text
    assert "It waits on you" in ways
    assert (
        "paused (approval): step sign waits for approval"
        in browser.find_element("css selector", "#state").text
    )
    press(browser, "form[action$='/do/approve'] button")
    said = browser_kit.until(
        lambda: browser.find_element("css selector", "#said").text, 15, "the approve's answer"
    )
    assert "step sign is approved" in said
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the approved run to finish")
    browser_kit.until(
        lambda: "finished" in browser.find_element("css selector", "#state").text,
        15,
        "the page to show the run finished, live "
        + repr(browser.execute_script("return window.flumeMonitor"))
        + repr(browser.get_log("browser") if hasattr(browser, "get_log") else ""),
    )


BUDGETED = """\
[kind]
name = "wf"
body = ["plan", "build"]
budgets = { turns = 1 }

[step.plan]
prompt = "Plan $brief: write PLAN.md."
gate = "artifact:PLAN.md"

[step.build]
prompt = "Build it: write BUILD.md."
gate = "artifact:BUILD.md"
"""
PLAN_AND_BUILD = """
[[turn]]
match = ":plan:1"
steps = [{write = {path = "PLAN.md", text = "a plan\\n"}}]

[[turn]]
match = ":build:"
steps = [{write = {path = "BUILD.md", text = "built\\n"}}]
"""


def test_a_budget_pause_raised_from_the_page_goes_on(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """One turn allowed: build pauses before it starts; +2 turns typed in the page, it runs."""
    del panes
    repo = agent_repository(tmp_path)
    path = launch(tmp_path, repo, BUDGETED, PLAN_AND_BUILD, "budget")
    wait_for(lambda: paused_on(path, PauseCause.BUDGET), 60, "the budget pause")
    page_of(browser, monitored, path)
    labels = browser.find_element("css selector", "form[action$='/do/raise']").text
    assert "More turns (spent 1 of 1)" in labels
    assert "tokens" not in labels  # only the budgets the kind sets
    typed(browser, "form[action$='/do/raise'] input[name='turns']", "2")
    press(browser, "form[action$='/do/raise'] button")
    said = browser_kit.until(
        lambda: browser.find_element("css selector", "#said").text, 15, "the raise's answer"
    )
    assert "budgets raised; step build starts (attempt 1)" in said
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the raised run to finish")
    assert place_of(path).budgets.turns == 3


LANE_ASKS = """\
[kind]
name = "wf"
body = ["slices"]

[parallel.slices]
branches = ["greet"]
join = "all"
merge = "merge"

[step.greet]
prompt = "Write the greeting in GREETING.md; ask which if unsure; commit."
gate = "commit"
may = ["ask"]
"""
ASKS = """
[[turn]]
match = ":greet:1"
steps = [{run = ["flume", "ask", "Hello or Hi?", "--option", "Hello", "--option", "Hi"]}]

[[turn]]
match = "The answer to your question q1"
steps = [{write = {path = "GREETING.md", text = "Hi\\n"}}, {commit = "Say hi"}]
"""


def test_a_question_answered_from_the_page_reaches_the_child_s_transcript(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """A lane asks; its page offers the question's options; the answer is in its transcript.

    The run's page links to its lane; the lane's page shows the question, its options, and an
    answer chosen there reaches the lane's agent as a message its transcript holds.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = launch(tmp_path, repo, LANE_ASKS, ASKS, "asks")
    lane = places.journals_dir(repo) / "wf--asks+greet" / places.JOURNAL
    wait_for(lambda: lane.exists() and place_of(lane).questions, 60, "the lane's question")
    page_of(browser, monitored, path)
    browser.find_element("link text", "wf--asks+greet").click()
    browser_kit.until(
        lambda: browser.find_element("css selector", "form[action$='/do/answer']"),
        15,
        "the lane's answer form",
    )
    assert "q1: Hello or Hi?" in browser.find_element("css selector", "#ways").text
    chosen(browser, "form[action$='/do/answer'] input[value='Hi']")
    press(browser, "form[action$='/do/answer'] button")
    said = browser_kit.until(
        lambda: browser.find_element("css selector", "#said").text, 15, "the answer's answer"
    )
    assert "question q1 answered" in said
    wait_for(lambda: place_of(path).life is Life.FINISHED, 90, "the run to finish")
    chat = flume_process("transcript", "wf--asks+greet", "--repository", str(repo))
    assert "The answer to your question q1" in chat.stdout
    assert "Hi" in chat.stdout


CONFLICTING = """\
[kind]
name = "wf"
body = ["slices"]

[parallel.slices]
branches = ["left", "right"]
join = "all"
merge = "merge"

[step.left]
prompt = "Greet from the left: GREETING.md; commit."
gate = "commit"

[step.right]
prompt = "Greet from the right: GREETING.md; commit."
gate = "commit"
"""
BOTH_GREET = """
[[turn]]
match = ":left:1"
steps = [{write = {path = "GREETING.md", text = "left\\n"}}, {commit = "Greet left"}]

[[turn]]
match = ":right:1"
steps = [{write = {path = "GREETING.md", text = "right\\n"}}, {commit = "Greet right"}]
"""


def test_a_merge_conflict_resolved_by_hand_from_the_page(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """Two lanes write one file: the merge pauses; merged by hand, resolved from the page."""
    del panes
    repo = agent_repository(tmp_path)
    path = launch(tmp_path, repo, CONFLICTING, BOTH_GREET, "clash")
    wait_for(lambda: paused_on(path, PauseCause.MERGE_CONFLICT), 90, "the merge conflict")
    page_of(browser, monitored, path)
    assert "paused (merge-conflict)" in browser.find_element("css selector", "#state").text
    worktree = Path(place_of(path).path)
    run_git(worktree, "merge", "--no-ff", "-m", "Merge right", "wf/clash+right", "-X", "ours")
    chosen(browser, "form[action$='/do/resolve'] input[value='by hand']")
    press(browser, "form[action$='/do/resolve'] button")
    said = browser_kit.until(
        lambda: browser.find_element("css selector", "#said").text, 15, "the resolve's answer"
    )
    assert "merged by hand" in said
    wait_for(lambda: place_of(path).life is Life.FINISHED, 60, "the run to finish")


WORKS_LONG = """\
[kind]
name = "wf"
body = ["code"]

[step.code]
prompt = "Write GREETING.md and commit; then think it over."
gate = "verdict"
"""
COMMITS_THEN_THINKS = """
[[turn]]
steps = [
    {write = {path = "GREETING.md", text = "hello\\n"}},
    {commit = "Say hello"},
    {work = 600},
]
"""


def test_an_open_page_shows_the_supervisor_start_and_stop_answering_with_nothing_else_moving(
    monitored: Any, browser: Any
) -> None:
    """The supervisor's warning comes and goes on an open page by itself, no event needed."""

    def warned() -> bool:
        found = browser.find_elements("css selector", "p.warning")
        return bool(found) and "supervisor does not answer" in found[0].text

    browser.get(monitored.url)
    browser_kit.until(warned, 15, "the warning that no supervisor answers")
    client.ensure(wait=30)
    browser_kit.until(lambda: not warned(), 20, "the warning gone once the supervisor answers")
    assert browser.execute_script("return window.flumeMonitor.events") == 0
    client.stop(timeout=10)
    browser_kit.until(warned, 20, "the warning back once the supervisor stopped")


def test_drop_asks_for_confirmation_naming_what_is_kept(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """Drop goes to a page naming what tidy keeps; nothing is done until it is confirmed.

    The branch holds a commit main lacks: the page says it is kept; confirmed, the run is
    dropped and its branch is there still.
    """
    del panes
    repo = agent_repository(tmp_path)
    path = launch(tmp_path, repo, WORKS_LONG, COMMITS_THEN_THINKS, "drop")
    wait_for(
        lambda: place_of(path).head not in {None, place_of(path).start},
        60,
        "the agent's commit",
    )
    page_of(browser, monitored, path)
    browser.find_element("link text", "Drop…").click()
    body = browser_kit.until(
        lambda: browser.find_element("css selector", "main").text, 15, "the confirmation"
    )
    assert "Drop wf--drop?" in body
    assert "keeps wf/drop: wf/drop holds 1 commit main lacks: kept" in body
    assert place_of(path).life is Life.ACTIVE  # nothing done yet
    press(browser, "form[action$='/do/drop'] button")
    browser_kit.until(
        lambda: "dropped" in browser.find_element("css selector", "#said").text, 15, "the drop"
    )
    wait_for(lambda: place_of(path).life in {Life.DROPPED, Life.TIDIED}, 60, "the drop")
    assert "wf/drop" in run_git(repo, "branch", "--list", "wf/drop")


#: Text a brief, a tell, a verdict's summary, a handoff or a transcript line may hold, each of
#: which would run, or add to the page, were it ever taken as markup, code or a link.
PAYLOADS = (
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    '<svg onload="window.__xss=3"></svg>',
    '<a href="javascript:window.__xss=4">four</a>',
    "javascript:window.__xss=5",
    '"><script>window.__xss=6</script>',
    "'><img src=x onerror=window.__xss=7>",
    '<iframe src="javascript:window.__xss=8"></iframe>',
    '<body onload="window.__xss=9">',
    '<details open ontoggle="window.__xss=10">',
    '<input autofocus onfocus="window.__xss=11">',
    "<style>body{display:none}</style>",
    '<math><mi xlink:href="javascript:window.__xss=13">x</mi></math>',
    "{{ 7*7 }} {% if true %}jinja{% endif %}",
    '<object data="javascript:window.__xss=15"></object>',
    '<embed src="javascript:window.__xss=16">',
    '<form action="javascript:window.__xss=17"><button>x</button></form>',
    '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=18">',
    '<base href="javascript:window.__xss=19//">',
    "&lt;script&gt;window.__xss=20&lt;/script&gt;",
    "</textarea><script>window.__xss=21</script>",
    "</pre><script>window.__xss=22</script>",
    '<link rel="stylesheet" href="data:text/css,body{display:none}">',
    "<template><script>window.__xss=24</script></template>",
    '<noscript><p title="</noscript><img src=x onerror=window.__xss=25>">',
)
SAID = "\n".join(PAYLOADS)
#: The words a person tells the agent from the page, payloads and all.
TOLD = "XSS-TELL\n" + SAID

BLOCKED = """\
[kind]
name = "wf"
body = ["work"]

[step.work]
prompt = "Do the work: $brief. Write $verdict."
gate = "verdict"
"""


def blocked_script() -> str:
    """The agent says the payloads and works; takes the tell; then blocks, saying them again."""
    said = json.dumps(SAID)
    verdict = json.dumps(json.dumps({"result": "blocked", "summary": SAID}))
    return f"""
[[turn]]
match = ":work:1"
steps = [{{say = {said}}}, {{work = 4}}]

[[turn]]
match = "XSS-TELL"
steps = [{{say = "told"}}]

[[turn]]
match = "did not pass"
steps = [
    {{write = {{path = "$board/work/handoff.md", text = {said}}}}},
    {{write = {{path = "$board/work/verdict.json", text = {verdict}}}}},
]
"""


def clean(driver: Any, where: str, *, whole: bool = True) -> str:
    """The page shows every payload as text (``whole``), and nothing of them ran or was added."""
    found = driver.execute_script(browser_kit.DOM_CHECK)
    assert found["xss"] is None, (where, found["xss"])
    assert found["foreign_scripts"] == [], (where, found["foreign_scripts"])
    assert found["handlers"] == [], (where, found["handlers"])
    assert found["scripted"] == [], (where, found["scripted"])
    assert found["injected"] == 0, where
    if whole:
        missing = [payload for payload in PAYLOADS if payload not in found["text"]]
        assert missing == [], (where, missing)
    text: str = found["text"]
    return text


def test_text_from_a_brief_tell_verdict_handoff_or_transcript_is_shown_as_text(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """25 payloads in a brief, a tell, a verdict, a handoff, the agent's words: shown as text.

    The tell is typed in the page; the verdict's summary is a blocked gate's words; the pages
    are drawn at first and redrawn live.

    Checked in the browser's DOM: no script of theirs ran, no element or handler of theirs was
    added, no ``javascript:`` link made; each payload reads as it was written.
    """
    del panes
    repo = agent_repository(tmp_path)
    kind_file = tmp_path / "blocked.toml"
    kind_file.write_text(BLOCKED, encoding="utf-8")
    steps = script(tmp_path, blocked_script(), name="blocked-script.toml")
    ran = flume_process(
        "launch", "--repository", str(repo), "--kind-file", str(kind_file), "--name", "xss",
        "--brief", f"The greeting.\n{SAID}", "--agent", "test",
        "--agent-arg=--script", f"--agent-arg={steps}",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    path = places.journals_dir(repo) / "wf--xss" / places.JOURNAL
    wait_for(lambda: any(each.proven for each in [place_of(path).agent] if each), 60, "delivery")
    page_of(browser, monitored, path)
    typed(browser, "#f-tell-text", TOLD)
    press(browser, "form[action$='/do/tell'] button")
    said = browser_kit.until(
        lambda: browser.find_element("css selector", "#said").text, 15, "the tell's answer"
    )
    assert "tell 1 is held while the agent works" in said
    # The page stays open: the pause comes to it live, its parts drawn anew by its script.
    browser_kit.until(
        lambda: "paused (gate-blocked)" in browser.find_element("css selector", "#state").text,
        90,
        "the gate-blocked pause, shown live",
    )
    browser_kit.until(
        lambda: browser.execute_script("return window.flumeMonitor.refreshed") > 0, 15, "redraw"
    )
    clean(browser, "the place's page, redrawn live", whole=False)
    browser.refresh()
    text = clean(browser, "the place's page")
    assert "XSS-TELL" not in text  # a tell's words are the agent's to read: they are in its chat
    browser.find_element("link text", "Read each attempt's chat").click()
    chat = clean(browser, "the chat")
    assert "XSS-TELL" in chat
    browser.get(f"http://127.0.0.1:{monitored.port}/")
    clean(browser, "every place", whole=False)


def test_every_control_is_reached_and_worked_by_keyboard_and_axe_finds_nothing_serious(
    tmp_path: Path, panes: Tmux, monitored: Any, browser: Any
) -> None:
    """A lane's question, a budget and a run: every link, field and button gets the focus by Tab.

    axe-core, run in each page (every place, a place with its controls, its chat, the drop's
    confirmation), at a laptop's width and a phone's, finds no serious or critical violation.
    """
    del panes
    repo = agent_repository(tmp_path)
    run = launch(tmp_path, repo, LANE_ASKS, ASKS, "keys")
    budget = launch(tmp_path, repo, BUDGETED, PLAN_AND_BUILD, "spent")
    lane = places.journals_dir(repo) / "wf--keys+greet" / places.JOURNAL
    wait_for(lambda: lane.exists() and place_of(lane).questions, 60, "the lane's question")
    wait_for(lambda: paused_on(budget, PauseCause.BUDGET), 60, "the budget pause")
    from selenium.webdriver.common.action_chains import ActionChains  # noqa: PLC0415
    from selenium.webdriver.common.keys import Keys  # noqa: PLC0415 (Selenium's, loaded late)

    for path in (lane, budget):
        page_of(browser, monitored, path)
        # Each control by what it is, not by its element: the page's script may draw a part
        # anew meanwhile (a live event), its controls the same ones.
        wanted = set(browser.execute_script(browser_kit.FOCUSABLE))
        reached: set[str] = set()
        browser.find_element("css selector", "body").click()
        for _ in range(len(wanted) + 5):
            # A key pressed as a person presses it, to whatever holds the focus: an element
            # found first may be drawn anew by a live event before the key reaches it (stale).
            ActionChains(browser).send_keys(Keys.TAB).perform()
            reached.add(browser.execute_script(browser_kit.DESCRIBE_FOCUSED))
        assert wanted - reached == set()
    page_of(browser, monitored, lane)
    address = key_of(place_of(lane).launch.repository, "wf--keys+greet")
    spent = key_of(place_of(budget).launch.repository, "wf--spent")
    ran = key_of(place_of(run).launch.repository, "wf--keys")
    pages = [
        "/",
        f"/p/{address}",
        f"/p/{address}/chat",
        f"/p/{address}/drop",
        f"/p/{spent}",
        f"/p/{ran}",
    ]
    for width, height in (browser_kit.WIDE, browser_kit.NARROW):
        browser.set_window_size(width, height)
        for each in pages:
            browser.get(f"http://127.0.0.1:{monitored.port}{each}")
            assert browser_kit.axe(browser) == [], (width, each)
    browser.set_window_size(*browser_kit.WIDE)
