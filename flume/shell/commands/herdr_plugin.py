"""flume's herdr plugin, its shell side: sidebar reports, the invoking context, the place meant.

Theory of operation. herdr's sidebar draws rows the user's config names, from tokens plugins
report (reference/herdr.md §6): ``$name`` in ``[ui.sidebar.agents] rows`` is a pane token from
``pane.report_metadata``, and in ``[ui.sidebar.spaces] rows`` a workspace token from
``workspace.report_metadata``. :func:`reports` turns every place in flight on the host into such
reports, and nothing else:

- the pane of each place whose agent runs in herdr gets ``flume`` (one line: place, stage,
  agent, tasks), ``flume_place``, ``flume_kind``, ``flume_stage``, ``flume_agent`` and
  ``flume_tasks`` (cleared when the place has no tasks);
- each herdr workspace of a repository with places (flume's own, labelled as its tmux session
  would be, or any whose panes stand in the repository) gets ``flume`` (how many places are in
  flight and how many wait on the caller) and one row token a place, ``flume_1`` to
  ``flume_12``, those waiting on the caller first, ``flume_more`` for the rest; a slot with no
  place is cleared, as is every flume token of a workspace no repository is in any more.

Every report keeps herdr's rules: a source of ``[A-Za-z0-9:._-]``, at most 16 tokens, names of
``[A-Za-z0-9_-]``, each text at most 80 characters (cut here with an ellipsis, not by herdr).

A plugin's actions get no arguments: the place they mean is read from
``HERDR_PLUGIN_CONTEXT_JSON`` (:func:`place_meant`): the focused pane's agent, else the place
the focused pane's folder is in, else the only place in flight in the focused workspace's
repository.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from flume.core.errors import UsageError
from flume.core.kinds import ReportFile
from flume.core.launch import Panes
from flume.core.observations import Activity
from flume.core.place import LaneState, Life, Place, current_step
from flume.core.settings import Settings
from flume.core.status import PhaseWord, PlaceStatus, status
from flume.shell.agents.runner import tmux_group
from flume.shell.panes.herdr import SESSION_TOKEN, Client, HerdrError
from flume.shell.panes.tmux import tidy_name
from flume.shell.store import places
from flume.shell.supervisor import client

#: Row tokens a workspace gets, at most: with ``flume`` and ``flume_more``, 14 of herdr's 16.
ROWS = 12
TEXT_LIMIT = 80
#: Lives in flight: a place is shown until it is tidied or dropped.
_IN_FLIGHT = frozenset({Life.MAKING, Life.ACTIVE, Life.FINISHED})
_WORKSPACE_TOKENS = ("flume", *(f"flume_{n}" for n in range(1, ROWS + 1)), "flume_more")


@attrs.frozen(kw_only=True)
class InFlight:
    """A place in flight: its state, and its status as ``flume status`` shows it."""

    place: Place
    view: PlaceStatus

    @property
    def name(self) -> str:
        """``<kind>--<name>``."""
        return str(self.view.place)

    @property
    def repository(self) -> Path:
        """The repository's main worktree."""
        return Path(self.view.repository)


@attrs.frozen(kw_only=True)
class HerdrRequest:
    """One request to send herdr: a method and its params."""

    method: str
    params: dict[str, Any]


def in_flight(repositories: Sequence[Path] | None = None) -> list[InFlight]:
    """Every place in flight in the repositories (default: every one flume knows)."""
    known = client.ping(timeout=1.0) is not None
    found: list[InFlight] = []
    for repository in repositories if repositories is not None else places.remembered():
        for each in places.places_of(repository, Settings()):
            if each.place is None or each.place.life not in _IN_FLIGHT:
                continue
            view = status(each.place, agent_known=known)
            found.append(InFlight(place=each.place, view=view))
    return found


def waits_on_caller(each: InFlight) -> bool:
    """The place waits on its caller: a word, a retry, a person's answer, or its report read.

    A paused workflow run waits on a person too: approve, resume, raise or resolve lets it go on
    (or, a lane dropped, only drop). A run whose lanes run or merge waits on them, not on you.
    """
    view = each.view
    finished_report = view.life is Life.FINISHED and isinstance(
        current_step(each.place).deliverable, ReportFile
    )
    return (
        view.waits_on_caller
        or view.phase in {PhaseWord.WAITS_WORD, PhaseWord.SHORT, PhaseWord.PAUSED}
        or view.agent is Activity.ASKING
        or finished_report
    )


def fit(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` on one line, at most ``limit`` characters (cut with an ellipsis)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "\u2026"


def row(each: InFlight) -> str:
    """A place in one sidebar row: name, stage and attempt, agent or what it waits on, tasks."""
    view = each.view
    tasks = f" tasks {view.tasks[0]}/{view.tasks[1]}" if view.tasks else ""
    if view.life is Life.FINISHED:
        doing = "finished: read its report, then tidy" if waits_on_caller(each) else "finished"
    elif view.phase is PhaseWord.WAITS_WORD:
        doing = "waits on your word (proceed)"
    elif view.phase is PhaseWord.SHORT:
        doing = f"stopped short: {view.needs or view.short_cause or 'retry or drop'}"
    elif view.phase is PhaseWord.PAUSED:
        doing = f"paused ({view.paused}): {view.resolve}"
    elif view.phase is PhaseWord.LANES:
        doing = f"lanes: {_lanes_said(each.place)}"
    elif view.phase is PhaseWord.MERGING:
        doing = "merging its lanes"
    elif view.agent is Activity.ASKING:
        doing = "asks you a question"
    else:
        doing = view.agent.value
    return fit(f"{view.place} {view.key or view.stage}#{view.attempt} {doing}{tasks}")


def _lanes_said(place: Place) -> str:
    """How many of the parallel's lanes wait, run, finished or ended, in that order."""
    counts = Counter(run.state for run in place.lanes.values())
    return ", ".join(f"{counts[state]} {state.value}" for state in LaneState if counts[state])


def _pane_tokens(each: InFlight) -> dict[str, str | None]:
    view = each.view
    tasks = f"{view.tasks[0]}/{view.tasks[1]}" if view.tasks else None
    return {
        "flume": row(each),
        "flume_place": fit(str(view.place)),
        "flume_kind": fit(str(view.kind)),
        "flume_stage": fit(f"{view.stage}#{view.attempt}"),
        "flume_agent": view.agent.value,
        "flume_tasks": tasks,
    }


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def reports(
    found: Sequence[InFlight],
    panes: Sequence[Mapping[str, Any]],
    workspaces: Sequence[Mapping[str, Any]],
    source: str,
) -> list[HerdrRequest]:
    """The metadata reports that show ``found`` in herdr's sidebar (see the module's note).

    ``panes`` and ``workspaces`` are herdr's ``pane.list`` and ``workspace.list`` as listed.
    """
    sent: list[HerdrRequest] = []
    by_session = {
        str((pane.get("tokens") or {}).get(SESSION_TOKEN)): pane
        for pane in panes
        if (pane.get("tokens") or {}).get(SESSION_TOKEN)
    }
    for each in found:
        agent = each.place.agent
        pane = by_session.get(agent.session) if agent is not None else None
        if pane is not None and each.place.launch.agent.panes is Panes.HERDR:
            params = {"pane_id": pane["pane_id"], "source": source}
            sent.append(
                HerdrRequest(
                    method="pane.report_metadata",
                    params={**params, "tokens": _pane_tokens(each)},
                )
            )
    repositories = {each.repository for each in found}
    for workspace in workspaces:
        workspace_id = str(workspace["workspace_id"])
        mine = _repositories_of(workspace, workspace_id, panes, repositories)
        shown = [each for each in found if each.repository in mine]
        held = workspace.get("tokens") or {}
        if not shown and not any(name in held for name in _WORKSPACE_TOKENS):
            continue
        sent.append(
            HerdrRequest(
                method="workspace.report_metadata",
                params={
                    "workspace_id": workspace_id,
                    "source": source,
                    "tokens": _workspace_tokens(shown),
                },
            )
        )
    return sent


def _repositories_of(
    workspace: Mapping[str, Any],
    workspace_id: str,
    panes: Sequence[Mapping[str, Any]],
    repositories: set[Path],
) -> set[Path]:
    """The repositories a workspace is of: flume's own by its label, any by its panes' folders."""
    label = workspace.get("label")
    mine = {repo for repo in repositories if label == tidy_name(tmux_group(str(repo)))}
    for pane in panes:
        cwd = pane.get("cwd")
        if pane.get("workspace_id") == workspace_id and isinstance(cwd, str):
            mine |= {repo for repo in repositories if _inside(cwd, repo)}
    return mine


def _workspace_tokens(shown: Sequence[InFlight]) -> dict[str, str | None]:
    ordered = sorted(shown, key=lambda each: (not waits_on_caller(each), each.name))
    waiting = sum(1 for each in shown if waits_on_caller(each))
    tokens: dict[str, str | None] = dict.fromkeys(_WORKSPACE_TOKENS)
    if shown:
        summary = f"flume: {len(shown)} in flight"
        tokens["flume"] = summary + (f", {waiting} wait on you" if waiting else "")
    for number, each in enumerate(ordered[:ROWS], start=1):
        tokens[f"flume_{number}"] = row(each)
    if len(ordered) > ROWS:
        tokens["flume_more"] = f"+{len(ordered) - ROWS} more: flume status"
    return tokens


def send(herdr: Client, sent: Sequence[HerdrRequest]) -> list[str]:
    """Send each report; the problems herdr answered, one line each ([] when all were taken)."""
    problems: list[str] = []
    for each in sent:
        try:
            herdr.call(each.method, each.params)
        except HerdrError as error:
            problems.append(f"{each.method}: {error.message} ({error.code})")
    return problems


def planned(
    herdr: Client, source: str, repositories: Sequence[Path] | None = None
) -> list[HerdrRequest]:
    """The reports that would show every place in flight now (herdr's panes listed once)."""
    panes = herdr.call("pane.list", {}).get("panes", [])
    workspaces = herdr.call("workspace.list", {}).get("workspaces", [])
    return reports(in_flight(repositories), panes, workspaces, source)


def show(herdr: Client, source: str, repositories: Sequence[Path] | None = None) -> list[str]:
    """HerdrRequest every place in flight to herdr's sidebar, once; the problems herdr answered."""
    return send(herdr, planned(herdr, source, repositories))


def follow(herdr: Client, source: str, every: float | None, stopping: threading.Event) -> list[str]:
    """HerdrRequest the sidebar, then again every ``every`` seconds (once with None) until stopped.

    Following ends, with no problem, when herdr goes away: the sidebar it fed went with it.
    The problems of the last report are returned.
    """
    while True:
        try:
            problems = show(herdr, source)
        except HerdrError as error:
            if every is not None and error.code in {"unreachable", "no_answer"}:
                return []
            raise
        if every is None or stopping.wait(every):
            return problems


# --- the invoking context ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Context:
    """What herdr says an action or pane was invoked on (``HERDR_PLUGIN_CONTEXT_JSON``)."""

    plugin_id: str | None = None
    workspace_id: str | None = None
    workspace_cwd: str | None = None
    focused_pane_id: str | None = None
    focused_pane_cwd: str | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Context:
        """The context herdr gave this process; empty fields when it gave none."""
        env = os.environ if environ is None else environ
        try:
            data = json.loads(env.get("HERDR_PLUGIN_CONTEXT_JSON") or "{}")
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}

        def text(key: str, fallback: str | None = None) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) and value else fallback

        return cls(
            plugin_id=env.get("HERDR_PLUGIN_ID") or None,
            workspace_id=text("workspace_id", env.get("HERDR_WORKSPACE_ID")),
            workspace_cwd=text("workspace_cwd"),
            focused_pane_id=text("focused_pane_id", env.get("HERDR_PANE_ID")),
            focused_pane_cwd=text("focused_pane_cwd"),
        )

    @property
    def source(self) -> str:
        """The metadata source: ``plugin:<id>`` when run as a plugin (herdr's convention)."""
        return f"plugin:{self.plugin_id}" if self.plugin_id else "flume"

    def folders(self) -> Iterator[str]:
        """The folders the context names, the focused pane's first."""
        yield from (cwd for cwd in (self.focused_pane_cwd, self.workspace_cwd) if cwd)


def place_meant(
    context: Context, found: Sequence[InFlight], panes: Sequence[Mapping[str, Any]] = ()
) -> InFlight | None:
    """The place an action means: the focused pane's agent, the focused folder's, or the only one.

    ``panes`` is herdr's ``pane.list`` (for the focused pane's session token); None when the
    context names no single place.
    """
    focused = next((p for p in panes if p.get("pane_id") == context.focused_pane_id), None)
    session = (focused.get("tokens") or {}).get(SESSION_TOKEN) if focused else None
    for each in found:
        agent = each.place.agent
        if session and agent is not None and agent.session == session:
            return each
    for folder in context.folders():
        for each in found:
            if _inside(folder, Path(each.place.path)):
                return each
    for folder in context.folders():
        ours = [each for each in found if _inside(folder, each.repository)]
        if len(ours) == 1:
            return ours[0]
    return None


def repository_meant(context: Context) -> Path | None:
    """The repository the focused workspace (or pane) stands in, if any."""
    for folder in context.folders():
        try:
            return places.repository_of(Path(folder))
        except UsageError:
            continue
    return None
