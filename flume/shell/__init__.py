"""flume's shell: it gathers observations, performs actions and keeps the journal.

It decides nothing: every rule is in :mod:`flume.core`. Its packages are layers; each imports
only the layers below it (import-linter holds this: pyproject.toml), never ``flume.testing``,
and never hides an import in a function or under ``TYPE_CHECKING`` (tests/test_shell_layout.py).
From the top down:

``commands/``
    The caller's verbs, shell side, which :mod:`flume.api` calls: a place's commands
    (``verbs.py``), their words and folder checked at once (``input_checks.py``), tidy
    (``tidying.py``), attach (``attach.py``), herdr's plugin (``herdr_plugin.py``), and what a
    fleet host's worker asks for a spread block's lanes (``spread.py``). May import everything
    below.
``supervisor/``
    The supervisor: its loop and its state (``loop.py``), the daemon that runs it, holds the
    host's lock and answers the socket (``daemon.py``), the socket's commands and typed answers
    (``protocol.py``), a launch handed to it (``handover.py``), and the client that finds,
    starts and asks it (``client.py``). May import observe, perform and everything below.
``observe/`` | ``perform/``
    Independent of each other. ``observe/``: the batch observers behind one protocol
    (``port.py``): branch heads (``branches.py``), agents (``watch.py``), landings seen on the
    base (``landings.py``), OpenSpec changes (``changes.py``), report files (``reports.py``).
    ``perform/``: the performer (``performer.py``), the landers (``lander.py``), a launch checked
    and journaled (``launcher.py``, ``launch_words.py``). What both ask (does a base hold a
    branch's work, where a base is fetched from, is a change archived) is in ``tools/``.
    May import agents and everything below.
``agents/``
    The agent port (``port.py``; ``agents.of`` finds an agent's module by its name) and one
    module per agent, each its command line, files, hooks, registry and screen: Claude Code
    (``claude.py``), Codex (``codex.py``), flume's test agent (``scripted.py``). Agents run in
    panes (``runner.py``), the pane's first program (``agentexec.py``), hooks recorded
    (``hookrecord.py``), the one tail reader (``tail.py``), each agent's lines read
    (``claude_lines.py``, ``codex_lines.py``), a turn's usage summed as they are read
    (``turns.py``), and ``inspection.py``.
    May import panes and everything below.
``panes/``
    The pane port (``port.py``, with the mark a typed pane keeps) and its backends: ``tmux.py``,
    ``herdr.py``, ``printed.py`` (a pane is a file whose command a person runs: ``--panes
    print``); the launch's ``--panes`` picks one. Attaching a terminal (``attach.py``). May
    import declared and everything below.
``declared/``
    What a repository declares: ``.flume.toml`` (``config.py``), kinds in TOML (``kinds.py``),
    a declared command run as written (``command.py``), scenario files (``scenario.py``).
    May import store and everything below.
``store/``
    What flume keeps: the one converter and the journal's line codec (``codec.py``), journal
    files (``journal.py``), the one journal follower the supervisor and the events stream share
    (``follower.py``), the places' events read back (``events.py``), places found and read back
    (``places.py``), a transcript line's journal words read into the core's neutral facts
    (``transcript_words.py``), what this host hands its fleet worker for spread lanes
    (``outbox.py``). May import tools, host and below.
``tools/`` | ``host.py``
    ``tools/``: one adapter per outside program: ``git.py``, ``openspec.py``, Unix sockets
    (``sockets.py``), where installed programs are (``locate.py``). ``host.py``: flume's folder
    on this host and its registry of repositories. May import only the two below.
``environment.py`` | ``process.py``
    The bottom: the environment a command's checks read (the caller's, or this process's); the
    one runner of outside programs and its count (``process.py``), and whether a process runs.
    They import nothing of flume's shell.
"""

from __future__ import annotations
