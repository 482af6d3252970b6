"""Mutation testing of flume/core: how many of mutmut's mutants the fast tests kill.

Run it from the clone's root, after ``pip install -e '.[test,mutation]'``::

    python bench/mutation.py            # every mutant of the five modules
    python bench/mutation.py 'flume.core.tell.*'   # some of them (mutmut's name globs)
    python bench/mutation.py --report   # only the tally of the last run
    python bench/mutation.py --set workflow 'flume.core.workflow.caps.*'   # another set

Not run by CI: a full run takes about an hour of two cores. It mutates the modules
``[tool.mutmut]`` in pyproject.toml names (delivery, tell, stage, tidy, status) and runs, for
each mutant, the model tests that reach the mutated function (tests/model: the example tests
and the state machines under the small, fixed Hypothesis profile ``mutation``), at the lowest
useful priority. Mutants that mypy --strict rejects (a None where a value is typed, mostly) are
marked caught by the type check and run no test: they could never pass CI. It prints, per
module, the mutants killed by a test, rejected by mypy, surviving, timed out or never checked,
and two scores over those checked: killed by the tests alone, and caught by tests or mypy; then
the survivors by name, each to be killed by a test or named in docs/mutation.md as equivalent,
with why. ``mutmut show NAME`` prints one mutant's diff. ``--typed FILE`` takes mypy's
verdicts from a JSON object keyed by mutant name, for a run made without the type check.

``--set NAME`` mutates another set of modules: a table ``[tool.flume.mutation.NAME]`` in
pyproject.toml whose keys take over those of ``[tool.mutmut]`` (``workflow``: the workflow
engine's modules). mutmut reads its configuration only from ``[tool.mutmut]`` in the
pyproject.toml of the folder it runs in, so a set runs in a copy, ``.mutation/NAME/`` (flume/,
tests/ and a pyproject.toml whose ``[tool.mutmut]`` is the set's), made afresh from the clone at
each run; mutmut's results stay in ``.mutation/NAME/mutants/`` between runs, as the default
set's stay in ``mutants/``. pyproject.toml itself is never edited.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")
#: the set ``[tool.mutmut]`` itself names, run in the clone's root.
DEFAULT_SET = "place"
#: ``[tool.mutmut]`` in pyproject.toml: its header and its lines up to the next table.
SECTION = re.compile(r"^\[tool\.mutmut\]\n(?:(?!\[).*\n)*", re.MULTILINE)

#: mutmut's exit codes, as its ``stats.py`` names them; any other is "suspicious".
STATUS = {
    0: "survived",
    1: "killed",
    3: "killed",
    36: "timeout",
    37: "mypy",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    5: "no tests",
    33: "no tests",
    None: "not checked",
}


def toml_value(value: object) -> str:
    """One value of ``[tool.mutmut]`` as TOML: a string or a list of them, a bool, a number."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value)  # a JSON string, or list of strings, is the same TOML


def mutmut_section(pyproject: dict[str, Any], name: str) -> dict[str, Any]:
    """The ``[tool.mutmut]`` a set runs with: pyproject's, its set's keys taking over."""
    tool = pyproject["tool"]
    sets = tool.get("flume", {}).get("mutation", {})
    if name not in sets:
        known = ", ".join([DEFAULT_SET, *sorted(sets)])
        print(
            f"no mutation set {name!r} in pyproject.toml's [tool.flume.mutation]: use {known}",
            file=sys.stderr,
        )
        sys.exit(2)
    # The copy's files are copies: git (which sees the clone around it) has nothing to say.
    return {**tool["mutmut"], **sets[name], "use_git_change_detection": False}


def workdir(name: str) -> Path:
    """The folder mutmut runs in for a set: the root for the default, else a fresh copy."""
    if name == DEFAULT_SET:
        return ROOT
    text = (ROOT / "pyproject.toml").read_text()
    section = mutmut_section(tomllib.loads(text), name)
    lines = [f"{key} = {toml_value(value)}" for key, value in section.items()]
    copied = SECTION.sub(lambda _: "\n".join(["[tool.mutmut]", *lines, "", ""]), text, count=1)
    if tomllib.loads(copied)["tool"]["mutmut"] != section:
        print(
            "pyproject.toml's [tool.mutmut] could not be replaced in the copy: one table?",
            file=sys.stderr,
        )
        sys.exit(2)
    here = ROOT / ".mutation" / name
    here.mkdir(parents=True, exist_ok=True)
    for folder in ["flume", "tests", *section.get("also_copy", [])]:
        shutil.rmtree(here / folder, ignore_errors=True)
        if (ROOT / folder).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
            shutil.copytree(ROOT / folder, here / folder, ignore=ignore)
        elif (ROOT / folder).is_file():
            shutil.copy2(ROOT / folder, here / folder)
    (here / "pyproject.toml").write_text(copied)
    return here


def run(names: list[str], children: int, niceness: int, where: Path) -> None:
    """Run mutmut at low priority in ``where``, with the fast Hypothesis profile."""
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # mutmut calls the type checker by name: this venv's mypy.
    env["PATH"] = os.pathsep.join([str(MUTMUT.parent), env.get("PATH", "")])
    argv = ["nice", "-n", str(niceness), str(MUTMUT), "run", "--max-children", str(children)]
    subprocess.run([*argv, *names], cwd=where, env=env, check=False)  # noqa: S603 (our own argv)


def verdict(name: str, code: int | None, typed: set[str]) -> str:
    """What became of one mutant: mypy's verdict first, as mutmut gives it when configured."""
    return "mypy" if name in typed else STATUS.get(code, "suspicious")


def tally(typed: set[str], where: Path) -> int:
    """Print each module's counts and scores, then the survivors; the number surviving."""
    counts: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    core = where / "mutants" / "flume" / "core"
    for meta in sorted(core.rglob("*.py.meta")):
        module = meta.relative_to(core).as_posix().removesuffix(".py.meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if not codes:  # nothing to mutate (a package's __init__)
            continue
        found = {name: verdict(name, code, typed) for name, code in codes.items()}
        counts[module] = Counter(found.values())
        survivors += sorted(name for name, status in found.items() if status == "survived")
    total: Counter[str] = Counter()
    print(
        f"{'module':<20} {'mutants':>7} {'killed':>7} {'mypy':>5} {'survived':>8} {'timeout':>7} "
        f"{'unchecked':>9} {'tests':>7} {'+mypy':>7}"
    )
    for module, found in [*counts.items(), ("all", None)]:
        count = total if found is None else found
        if found is not None:
            total.update(found)
        caught = count["killed"] + count["timeout"]
        run = caught + count["survived"] + count["suspicious"]
        checked = run + count["mypy"]
        tests = f"{caught / run:.1%}" if run else "-"
        both = f"{(caught + count['mypy']) / checked:.1%}" if checked else "-"
        print(
            f"{module:<20} {sum(count.values()):>7} {count['killed']:>7} {count['mypy']:>5} "
            f"{count['survived']:>8} {count['timeout']:>7} "
            f"{count['not checked'] + count['no tests']:>9} {tests:>7} {both:>7}"
        )
    print(f"\nsurviving ({len(survivors)}):")
    for name in survivors:
        print(f"  {name}")
    return len(survivors)


def main() -> None:
    """Run the mutants asked for (all by default) and print the tally."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="mutmut name globs, e.g. 'flume.core.tell.*'")
    parser.add_argument("--report", action="store_true", help="only tally the last run")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once")
    parser.add_argument("--nice", type=int, default=15, help="the runs' niceness (default 15)")
    parser.add_argument(
        "--set",
        default=DEFAULT_SET,
        help="the modules to mutate: [tool.mutmut]'s (place, the default) or a table of "
        "[tool.flume.mutation] in pyproject.toml (workflow)",
    )
    parser.add_argument("--typed", type=Path, help="mypy's verdicts, for a run made without them")
    args = parser.parse_args()
    if args.report:
        if args.set != DEFAULT_SET:  # a set pyproject.toml does not name is named as such
            mutmut_section(tomllib.loads((ROOT / "pyproject.toml").read_text()), args.set)
        where = ROOT if args.set == DEFAULT_SET else ROOT / ".mutation" / args.set
    else:
        where = workdir(args.set)
        run(args.names, args.children, args.nice, where)
    typed = set(json.loads(args.typed.read_text())) if args.typed else set()
    try:
        tally(typed, where)
    except BrokenPipeError:  # the reader (head, a pager) stopped reading: nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
