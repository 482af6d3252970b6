"""Kind-file errors, polished (issue 27): each item of the issue's list, and two properties.

- A workflow's blocks are called what the file calls them (``step plan``), never "stage 1 (a)".
- A near miss of a gate, block, prompt field or key gets a "did you mean".
- ``body = []`` is said to be empty, not "must be a list".
- One wrong input, one error: a bad name says nothing more of the prefix taken from it; over
  generated files, any one wrong input is named once, at its line.
- Every unknown key of a file is named, each at its line: over generated files with keys strewn
  in any of their tables.
- No Python error text reaches a person: a file that is missing, a folder or not UTF-8 is said
  so in words; a ``[[kinds]] file`` that is missing names its ``.flume.toml`` line.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flume.core.errors import UsageError
from flume.core.kindfile import BLOCKS, KIND
from flume.shell.declared import kinds
from tests.integration.places_kit import flume, repository

#: Python's own words, which no message a person reads may hold.
PYTHON_WORDS = re.compile(r"Errno|Traceback|Error\b|\bNone\b|\bTrue\b|\bFalse\b|<class|'int'|\{'")


def _problems(path: Path, text: str) -> list[str]:
    """What reading ``text`` as the kind file ``path`` says is wrong, one line a problem."""
    try:
        kinds.parse_document(path, text, tomllib.loads(text))
    except UsageError as error:
        return [problem.render() for problem in error.problems]
    return []


def _refused(tmp_path: Path, text: str) -> list[str]:
    """``flume launch --plan --kind-file`` of ``text``: exit 2 and its lines, checked in words."""
    bad = tmp_path / "kind.toml"
    bad.write_text(text, encoding="utf-8")
    repo = tmp_path / "repo"
    if not repo.exists():
        repository(repo)
    ran = flume("launch", "--plan", "--repository", str(repo), "--kind-file", str(bad),
                "--name", "x")  # fmt: skip
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert not PYTHON_WORDS.search(ran.stderr), ran.stderr
    return [line.removeprefix(f"flume: {bad}") for line in ran.stderr.splitlines()]


REVIEWED = """\
[kind]
name = "reviewed"
body = ["plan", "review-loop"]

[step.plan]
prompt = "Plan $brief in PLAN.md."
gate = "artifact:PLAN.md"

[loop.review-loop]
body = ["review", "fix"]
until = "review"
max = 3

[step.review]
prompt = "Review; write $verdict."

[step.fix]
prompt = "Mend $board/review/verdict.json; commit."
gate = "commit"
"""


def test_the_reviewed_file_is_sound() -> None:
    """The file the cases below break reads as it stands."""
    assert _problems(Path("k.toml"), REVIEWED) == []


def test_a_workflow_s_step_is_named_as_a_step() -> None:
    """A flaw of a step names it ``step <name>``; no message counts stages."""
    said = _problems(Path("k.toml"), REVIEWED.replace("Plan $brief", "Plan $nope"))
    assert said == [
        (
            "k.toml:6: step plan: the prompt names unknown field $nope; use only base, board, "
            "branch, brief, deliverable, goal, handoff, kind, marker, max, name, pass, path, "
            "place, position, question, repository, stage, verdict, words (and $$ for a dollar "
            "sign)"
        )
    ]
    assert not re.search(r"stage \d", said[0])


@pytest.mark.parametrize(
    ("old", "new", "line", "says"),
    [
        (
            'gate = "commit"',
            'gate = "approved"',
            19,
            """gate = "approved" is not a gate flume knows (did you mean 'approval'?)""",
        ),
        (
            '["review", "fix"]',
            '["revue", "fix"]',
            10,
            "body names block 'revue', which is not declared (did you mean 'review'?)",
        ),
        ("Plan $brief", "Plan $breif", 6, "unknown field $breif (did you mean 'brief'?)"),
        (
            'gate = "artifact',
            'gat = "artifact',
            7,
            "[step.plan] has no key 'gat' (did you mean 'gate'?)",
        ),
        ('until = "review"', 'until = "reveiw"', 11, "(did you mean 'review'?)"),
        ("max = 3", 'max = 3\non_max = "pasue"', 13, "(did you mean 'pause'?)"),
    ],
    ids=["gate", "block", "field", "key", "until", "word"],
)
def test_a_near_miss_gets_a_did_you_mean(
    tmp_path: Path, old: str, new: str, line: int, says: str
) -> None:
    """A near miss of a gate, a block, a prompt field, a key or a word: its line, and the word."""
    assert old in REVIEWED
    (said,) = _refused(tmp_path, REVIEWED.replace(old, new, 1))
    assert said.startswith(f":{line}: "), said
    assert says in said, said


def test_an_empty_body_is_said_to_be_empty(tmp_path: Path) -> None:
    """``body = []``: the body is empty, and the mend asks for a block."""
    (said,) = _refused(tmp_path, REVIEWED.replace('["plan", "review-loop"]', "[]"))
    assert said.startswith(":3: body is empty; name at least one block"), said


def test_a_bad_name_is_one_error_not_two(tmp_path: Path) -> None:
    """The prefix is taken from the name: a bad name says nothing of the prefix."""
    said = _refused(tmp_path, REVIEWED.replace('"reviewed"', '"Bad Name"'))
    assert said == [
        (
            ":2: [kind]: 'Bad Name' is not a kind name; use 1-32 lowercase letters, digits or "
            "'-', starting with a letter"
        )
    ]
    # A prefix of its own, as bad, is a second wrong input: a second error.
    both = _refused(tmp_path, REVIEWED.replace('"reviewed"', '"Bad Name"\nprefix = "a b"'))
    assert len(both) == 2, both


def test_every_unknown_key_is_named_at_its_line(tmp_path: Path) -> None:
    """Three tables with keys they do not take: all named, each at its line, in file order."""
    text = (
        REVIEWED.replace('name = "reviewed"', 'name = "reviewed"\ncolour = "red"')
        .replace("max = 3", "max = 3\nbodyy = 1")
        .replace('gate = "commit"', 'gate = "commit"\nsize = 2\nbudgets = { turns = 1 }')
    )
    said = _refused(tmp_path, text)
    step_takes = "a step takes prompt, gate, deliverable, agent, waits_on_caller, may, sandbox"
    assert said == [
        ":3: [kind] has no key 'colour'; [kind] takes name, prefix, body, budgets, finalize",
        (
            ":14: [loop.review-loop] has no key 'bodyy' (did you mean 'body'?); a loop takes "
            "body, until, max, on_max"
        ),
        f":22: [step.fix] has no key 'size'; {step_takes}",
        f":23: [step.fix] has no key 'budgets'; {step_takes}",
    ]


def test_every_unknown_key_of_a_kind_of_stages_is_named_at_its_line() -> None:
    """The older form too: [kind] and each [[kind.stages]], every stray key at its own line."""
    text = (
        '[kind]\nname = "crew"\nprefx = "c"\n'
        '[[kind.stages]]\nname = "a"\nprompt = "A."\ndeliverable = "commit"\nwait = true\n'
        '[[kind.stages]]\nname = "b"\nprompt = "B."\ndeliverable = "commit"\nnote = "x"\n'
    )
    said = _problems(Path("s.toml"), text)
    assert [each.split(";")[0] for each in said] == [
        "s.toml:3: [kind] has no key 'prefx' (did you mean 'prefix'?)",
        "s.toml:8: a stage has no key 'wait'",
        "s.toml:13: a stage has no key 'note'",
    ]


def test_a_file_that_cannot_be_read_is_said_so_in_words(tmp_path: Path) -> None:
    """Missing, a folder, not UTF-8: each in words, never ``[Errno 2] ...``."""
    repo = repository(tmp_path / "repo")
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "latin.toml").write_bytes(b"# caf\xe9\n")
    for name, says in [
        ("../nope.toml", "../nope.toml: no such file; name a readable UTF-8 TOML file"),
        (str(tmp_path / "folder.toml"), "folder.toml: is a folder, not a file;"),
        (str(tmp_path / "latin.toml"), "latin.toml: is not UTF-8 text (byte 6 is not, counting"),
    ]:
        ran = flume("launch", "--plan", "--repository", str(repo), "--kind-file", name,
                    "--name", "x")  # fmt: skip
        assert ran.returncode == 2
        assert says in ran.stderr, ran.stderr
        assert not PYTHON_WORDS.search(ran.stderr), ran.stderr


def test_a_missing_kind_file_of_the_config_names_the_config_s_line(tmp_path: Path) -> None:
    """``[[kinds]] file = "nope.toml"``: the .flume.toml line that names it, and why."""
    config = '# the repository\'s kinds\n[[kinds]]\nfile = "flume/nope.toml"\n'
    repo = repository(tmp_path / "repo", files={".flume.toml": config})
    ran = flume("launch", "--plan", "--repository", str(repo), "--kind", "fix", "--name", "x")
    assert ran.returncode == 2
    assert ran.stderr == (
        f"flume: {repo / '.flume.toml'}:2: the kind file {repo / 'flume' / 'nope.toml'} named "
        "here: no such file; name a readable UTF-8 TOML file inside the repository\n"
    )


def test_a_toml_error_names_its_line_and_column_apart() -> None:
    """TOML's "(at line 2, column 6)" becomes the file's line, and the column in words."""
    with pytest.raises(UsageError) as raised:
        kinds.read_fragment("frag.toml", "[kind]\n[kind\n")
    (problem,) = raised.value.problems
    assert problem.field == "frag.toml:2"
    assert "(column 6)" in problem.what
    assert "at line" not in problem.what


# --- Generated files: every unknown key, and one wrong input, one error -----------------------


@attrs.frozen
class Made:
    """A generated kind file: its lines, and where each table's header is."""

    lines: tuple[str, ...]
    #: (table word, block name or "", line of its header), in the file's order.
    tables: tuple[tuple[str, str, int], ...]

    @property
    def text(self) -> str:
        """The file's text."""
        return "\n".join(self.lines) + "\n"


NAMES = ["plan", "build", "check", "ship", "tidy-up", "notes"]


@st.composite
def workflows(draw: st.DrawFn) -> Made:
    """A sound workflow file: steps, a loop of a verdict step and a fix, a parallel of two."""
    shapes = draw(st.lists(st.sampled_from(["step", "loop", "parallel"]), min_size=1, max_size=4))
    lines = ["[kind]", 'name = "made"']
    tables: list[tuple[str, str, int]] = [("kind", "", 1)]
    body: list[str] = []
    blocks: list[list[str]] = []
    for number, shape in enumerate(shapes):
        name = f"{NAMES[number]}-{shape}"
        body.append(name)
        if shape == "step":
            blocks.append([f"[step.{name}]", 'prompt = "Do $brief."', 'gate = "commit"'])
        elif shape == "loop":
            blocks.append([f"[loop.{name}]", f'body = ["{name}-a", "{name}-b"]',
                           f'until = "{name}-a"', "max = 2"])  # fmt: skip
            blocks.append([f"[step.{name}-a]", 'prompt = "Judge; $verdict."'])
            blocks.append([f"[step.{name}-b]", 'prompt = "Mend."', 'gate = "commit"'])
        else:
            blocks.append([f"[parallel.{name}]", f'branches = ["{name}-a", "{name}-b"]',
                           "cap = 1"])  # fmt: skip
            blocks.append([f"[step.{name}-a]", 'prompt = "A."', 'gate = "commit"'])
            blocks.append([f"[step.{name}-b]", 'prompt = "B."', 'gate = "commit"'])
    lines.append(f"body = {body!r}".replace("'", '"'))
    for block in draw(st.permutations(blocks)):
        lines.append("")
        table, name = block[0].strip("[]").split(".", 1)
        tables.append((table, name, len(lines) + 1))
        lines.extend(block)
    return Made(lines=tuple(lines), tables=tuple(tables))


def _insert(made: Made, after: int, line: str) -> tuple[Made, int]:
    """``made`` with ``line`` put after line ``after``; the new line's number."""
    lines = [*made.lines[:after], line, *made.lines[after:]]
    moved = tuple((t, n, h + (h > after)) for t, n, h in made.tables)
    return Made(lines=tuple(lines), tables=moved), after + 1


@given(made=workflows(), picks=st.lists(st.integers(min_value=0), min_size=1, max_size=5))
def test_every_unknown_key_of_a_generated_file_is_named_at_its_line(
    made: Made, picks: list[int]
) -> None:
    """Keys strewn in any tables of a sound file: each named, at its own line, none else said."""
    assert _problems(Path("f.toml"), made.text) == []
    placed: list[str] = []
    for number, pick in enumerate(picks):
        _table, _name, header = made.tables[pick % len(made.tables)]
        key = f"stray{number}"
        made, _line = _insert(made, header, f"{key} = 1")
        placed.append(key)
    said = _problems(Path("f.toml"), made.text)
    # In the file's order, each at the line it was put on, and nothing but them.
    expected = sorted((made.lines.index(f"{key} = 1") + 1, key) for key in placed)
    found = [re.fullmatch(r"f\.toml:(\d+): \S+ has no key '(stray\d+)'; .*", each) for each in said]
    assert all(found), said
    assert [(int(m.group(1)), m.group(2)) for m in found if m] == expected


#: One wrong input each, by name: the line it is put on (the first that starts so), what that
#: line becomes ("{}": the line as it was), and the words of the one error said of it.
WRONGS: dict[str, tuple[str, str, str]] = {
    "name": ('name = "made"', 'name = "Made Up"', "'Made Up' is not a kind name"),
    "gate": ('gate = "commit"', 'gate = "comit"', "(did you mean 'commit'?)"),
    "field": ('prompt = "', 'prompt = "$breif"', "unknown field $breif"),
    "key": ('prompt = "', 'promt = "x"', "(did you mean 'prompt'?)"),
    "max": ("max = ", "max = 0", "max = 0 is not a whole number"),
    "cap": ("cap = ", 'cap = "one"', 'cap = "one" is not a whole number'),
    "body": ("body = ", "body = []", "body is empty"),
    "until": ("until = ", 'until = "nobody"', "which is not a step of the loop"),
    "join": ("cap = ", 'join = "any"', '"any" is not one of all'),
    "sandbox": ('gate = "commit"', '{}\nsandbox = "yes"', 'sandbox = "yes" is not true or false'),
}


def _wrong(made: Made, wrong: str) -> tuple[str, str, int] | None:
    """``made`` with one input made wrong: its text, the error's words, and the wrong line."""
    starts, becomes, says = WRONGS[wrong]
    lines = list(made.lines)
    at = next((n for n, line in enumerate(lines) if line.startswith(starts)), None)
    if at is None:
        return None
    lines[at] = becomes.replace("{}", lines[at])
    line = at + 1 + becomes.count("\n")
    return "\n".join(lines) + "\n", says, line


@given(made=workflows(), wrong=st.sampled_from(sorted(WRONGS)))
def test_one_wrong_input_in_a_generated_file_is_one_error_at_its_line(
    made: Made, wrong: str
) -> None:
    """A sound file with one input made wrong: one problem said, at that input's line."""
    broken = _wrong(made, wrong)
    if broken is None:
        return
    text, says, line = broken
    said = _problems(Path("f.toml"), text)
    assert len(said) == 1, said
    assert says in said[0], said
    assert said[0].startswith(f"f.toml:{line}:"), (said, line)
    assert not PYTHON_WORDS.search(said[0]), said


def test_the_generated_files_cover_each_block_table() -> None:
    """The generator writes steps, loops and parallels: the tables the reader knows, less one."""
    assert set(BLOCKS) - {"step", "loop", "parallel"} == {"orchestrate"}
    assert KIND.names()[:3] == ("name", "prefix", "body")
