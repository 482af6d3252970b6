"""Mutation testing of flume/core: how many of mutmut's mutants the fast tests kill.

Run it from the clone's root, after ``pip install -e '.[test,mutation]'``::

    python bench/mutation.py            # every mutant of the five modules
    python bench/mutation.py 'flume.core.tell.*'   # some of them (mutmut's name globs)
    python bench/mutation.py --report   # only the tally of the last run

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
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")

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


def run(names: list[str], children: int) -> None:
    """Run mutmut at nice 15, with the fast Hypothesis profile."""
    env = {**os.environ, "HYPOTHESIS_PROFILE": "mutation"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = ["nice", "-n", "15", str(MUTMUT), "run", "--max-children", str(children), *names]
    subprocess.run(argv, cwd=ROOT, env=env, check=False)  # noqa: S603 (our own argv)


def verdict(name: str, code: int | None, typed: set[str]) -> str:
    """What became of one mutant: mypy's verdict first, as mutmut gives it when configured."""
    return "mypy" if name in typed else STATUS.get(code, "suspicious")


def tally(typed: set[str]) -> int:
    """Print each module's counts and scores, then the survivors; the number surviving."""
    counts: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    core = ROOT / "mutants" / "flume" / "core"
    for meta in sorted(core.rglob("*.py.meta")):
        module = meta.relative_to(core).as_posix().removesuffix(".py.meta")
        codes = json.loads(meta.read_text())["exit_code_by_key"]
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
    parser.add_argument("--typed", type=Path, help="mypy's verdicts, for a run made without them")
    args = parser.parse_args()
    if not args.report:
        run(args.names, args.children)
    typed = set(json.loads(args.typed.read_text())) if args.typed else set()
    tally(typed)


if __name__ == "__main__":
    main()
