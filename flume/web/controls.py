"""The monitor's controls: which a place offers now, and each one carried out through flume.api.

Theory of operation. A place's controls are read off its status (the view model's plain data):
the ways out of what it waits on first, one per command the rules take there (a pause's, from
the core's own table of what each cause accepts, :data:`flume.core.place.PAUSE_ACCEPTS`; a
question's answer; a stop's retry; a waiting stage's proceed), then what a person may always do
to a running place (tell, stop, drop). The page draws each as a form; nothing here decides
whether a command is taken: :func:`perform` gives it to the same ``flume.api`` function the CLI
calls, so a refusal is the CLI's, word for word, and journals nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from flume import api, views
from flume.core.errors import UsageError
from flume.core.observations import (
    ApproveAsked,
    BudgetRaised,
    PassAsked,
    ResolveAsked,
    ResumeAsked,
    RetryAsked,
)
from flume.core.place import PAUSE_ACCEPTS, PauseCause

#: The verb each command a pause accepts is given by, as the CLI names it.
_VERBS = {
    ApproveAsked: "approve",
    ResumeAsked: "resume",
    BudgetRaised: "raise",
    RetryAsked: "retry",
    ResolveAsked: "resolve",
    PassAsked: "pass",
}
#: The order a place's ways out are offered in.
_ORDER = ("answer", "approve", "pass", "raise", "resolve", "resume", "retry", "proceed")
#: Each budget ``flume raise`` raises, as the page names it.
_BUDGET_WORDS = {
    "turns": "turns",
    "tokens": "tokens",
    "wall_minutes": "active minutes",
    "retries": "retries",
    "turns_per_attempt": "turns per attempt",
}


class Field(NamedTuple):
    """One input of a control's form."""

    name: str
    label: str
    #: ``text``, ``textarea``, ``number`` or ``choice`` (one of ``options``, as radio buttons).
    kind: str = "text"
    required: bool = False
    options: tuple[str, ...] = ()
    hint: str = ""
    #: The value it holds already (a hidden field's).
    value: str = ""


class Control(NamedTuple):
    """One thing a person can do to the place now: a form, posted to ``/<place>/do/<verb>``."""

    verb: str
    label: str
    hint: str
    fields: tuple[Field, ...] = ()
    #: It is a way out of what the place waits on (shown with the pause, first).
    way_out: bool = False
    #: It goes to a page that says what it will do, to be confirmed there (drop).
    confirm: bool = False


def ways_out(view: Mapping[str, Any]) -> list[str]:
    """The verbs that lead out of what the place waits on, in :data:`_ORDER`."""
    if view["life"] not in views.RUNNING:
        return []
    found: set[str] = set()
    paused = view.get("paused")
    if view.get("question"):
        found.add("answer")
    elif paused is not None and paused in {cause.value for cause in PauseCause}:
        found.update(_VERBS[command] for command in PAUSE_ACCEPTS[PauseCause(paused)])
    if view["short_cause"] is not None:
        found.add("retry")
    if view["waits_on_caller"]:
        found.add("proceed")
    return [verb for verb in _ORDER if verb in found]


def controls_of(view: Mapping[str, Any]) -> list[Control]:
    """The controls the place offers now: its ways out first, then tell, stop and drop."""
    if view["life"] not in views.RUNNING:
        return []
    made = [_way(verb, view) for verb in ways_out(view)]
    live = view["agent"] != "stopped"
    steps = _steps(view)
    if live:
        made.append(
            Control(
                verb="tell",
                label="Tell its agent",
                hint="Held while the agent works, sent once it waits; counted once its "
                "transcript holds it.",
                fields=(
                    Field("text", "What to tell it", "textarea", required=True),
                    Field("step", "Only at this step (optional)", hint=steps),
                ),
            )
        )
        made.append(
            Control(
                verb="stop",
                label="Stop its agent",
                hint="Ends the agent that went the wrong way; its stage waits for a retry.",
            )
        )
    made.append(
        Control(
            verb="drop",
            label="Drop…",
            hint="Abandons the work. You are shown what tidy keeps before it is done.",
            confirm=True,
        )
    )
    return made


def _steps(view: Mapping[str, Any]) -> str:
    """The step keys a command may name, as a hint."""
    paths = [each["path"] for each in view.get("tree") or () if each.get("block") == "step"]
    return f"a step's key, such as {', '.join(paths[:4])}" if paths else ""


def _way(verb: str, view: Mapping[str, Any]) -> Control:  # noqa: PLR0911 (one a verb)
    """The control of one way out of what the place waits on."""
    key = view.get("key") or view["stage"]
    match verb:
        case "answer":
            question = view["question"]
            return Control(
                verb="answer",
                label=f"Answer {question['id']}",
                hint=f"{question['id']}: {question['text']}: the answer reaches the agent that "
                "asked, counted once its transcript holds it.",
                fields=(
                    Field("question", "Question", "hidden", value=question["id"]),
                    *(
                        (Field("choice", "Its options", "choice", options=tuple(options)),)
                        if (options := question.get("options"))
                        else ()
                    ),
                    Field("text", "Your answer", "textarea", required=not options),
                ),
                way_out=True,
            )
        case "approve":
            return Control(
                verb="approve",
                label=f"Approve {key}",
                hint="Its gate passes and the run goes on.",
                way_out=True,
            )
        case "pass":
            return Control(
                verb="pass",
                label=f"Pass the gate of {key}",
                hint="Your decision, journaled with your words: the step ends as a passed "
                "gate does and the run goes on.",
                fields=(Field("why", "Why you pass it", "textarea", required=True),),
                way_out=True,
            )
        case "raise":
            return Control(
                verb="raise",
                label="Raise the budget",
                hint="Raise a spent budget in place; the paused step goes on.",
                fields=tuple(
                    Field(
                        each["name"],
                        f"More {_BUDGET_WORDS.get(each['name'], each['name'])} "
                        f"(spent {each['spent']} of {each['cap']})",
                        "number",
                    )
                    for each in view.get("caps") or ()
                ),
                way_out=True,
            )
        case "resolve":
            return Control(
                verb="resolve",
                label="Resolve the merge",
                hint="By hand: you merged the lane in the run's worktree and committed. By an "
                "agent: a fresh agent merges the lanes and commits.",
                fields=(
                    Field(
                        "how",
                        "How",
                        "choice",
                        required=True,
                        options=("by hand", "by an agent"),
                    ),
                ),
                way_out=True,
            )
        case "resume":
            return Control(
                verb="resume",
                label=f"Resume at {key}",
                hint="The paused step goes on (a new attempt where it must).",
                way_out=True,
            )
        case "retry":
            return Control(
                verb="retry",
                label=f"Retry {key}",
                hint="The stage again, a fresh agent, your words in its prompt.",
                fields=(
                    Field("words", "Your words for the next attempt (optional)", "textarea"),
                    Field("step", "Only at this step (optional)", hint=_steps(view)),
                ),
                way_out=True,
            )
        case _:
            return Control(
                verb="proceed",
                label=f"Proceed with {key}",
                hint="Your word releases the stage that waits on it.",
                way_out=True,
            )


def _amount(form: Mapping[str, str], name: str) -> int | None:
    """A raise's amount: a whole number of at least 1 (``+5`` or ``5``), or None when empty."""
    text = form.get(name, "").strip().removeprefix("+")
    if not text:
        return None
    if not text.isascii() or not text.isdigit():
        option = api.RAISED_OPTIONS.get(name, name)
        raise UsageError.one(
            option,
            f"{option} is {form[name]!r}, not a whole number of at least 1",
            f"raise by a whole number, such as {option} +5",
        )
    return int(text)


def perform(verb: str, name: str, repository: Path, form: Mapping[str, str]) -> str:
    """Carry ``verb`` out on place ``name`` through flume.api, as the CLI does: what it says.

    Raises :class:`UsageError` as the CLI's command would be refused (its words), and for a
    verb the monitor does not know.
    """
    given = {key: value for key, value in form.items() if key != "token"}
    words = given.get("text", "")
    step = given.get("step", "").strip()
    where = {"repository": repository}
    commands: dict[str, Callable[[], str]] = {
        "approve": lambda: api.approve(name, **where),
        "resume": lambda: api.resume(name, **where),
        "proceed": lambda: api.proceed(name, **where),
        "stop": lambda: api.stop(name, **where),
        "drop": lambda: api.drop(name, **where),
        "tell": lambda: api.tell(name, words, step=step, **where),
        "retry": lambda: api.retry(name, words=given.get("words", ""), step=step, **where),
        "pass": lambda: api.pass_gate(name, given.get("why", ""), step=step, **where),
        "resolve": lambda: api.resolve(
            name, agent=given.get("how") == "by an agent", repository=repository
        ),
        "answer": lambda: api.answer(
            name, given.get("question", ""), words.strip() or given.get("choice", ""), **where
        ),
        "raise": lambda: api.raise_budgets(
            name,
            turns=_amount(given, "turns"),
            tokens=_amount(given, "tokens"),
            wall_minutes=_amount(given, "wall_minutes"),
            retries=_amount(given, "retries"),
            turns_per_attempt=_amount(given, "turns_per_attempt"),
            **where,
        ),
    }
    if verb not in commands:
        raise UsageError.one(
            "verb", f"the monitor knows no command {verb!r}", f"use one of {', '.join(commands)}"
        )
    return commands[verb]()
