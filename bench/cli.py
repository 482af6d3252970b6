"""The CLI answers at once: each command as a whole process, beside ``python -c pass``.

Target (issue 16): each command below at most 100 ms median, wall time from the process's start
to its exit, with bytecode cached as on a user's machine (``PYTHONDONTWRITEBYTECODE`` is unset
for the commands, and each is run once to warm before timing). Every command takes turns with
the others and with ``python -c pass`` on the same interpreter, round by round, so the ratios
compare like with like on a machine whose load moves.

- ``flume --help``;
- ``flume status`` on a host with no places, and on one with 200 places (each a running fix's
  journal of 64 observations, as in ``bench/status.py``), with the host's supervisor running:
  it answers from the places it already follows; and, for the record, with none running, when
  the command reads every journal itself (R11);
- ``flume status --json``, 200 places, supervisor running;
- ``flume needs`` and ``flume submit`` refused: run outside any place, as a misplaced agent would.

Run: ``python bench/cli.py [--rounds N] [--places N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import median, private_host
from status import host_with

TARGET_MS = 100.0


def flume_argv() -> list[str]:
    """The ``flume`` console script beside this interpreter, as a user runs it."""
    script = Path(sys.executable).parent / "flume"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "flume"]


def cached(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` as on a user's machine: bytecode written and read."""
    return {key: value for key, value in environment.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(
    argv: list[str], environment: dict[str, str], cwd: Path, ok: set[int]
) -> tuple[float, float]:
    """One run of ``argv``: wall seconds from start to exit, and CPU seconds (user and system).

    Its exit status must be in ``ok``. The CPU time moves less than the wall time with the load
    of the rest of the machine.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    ran = subprocess.run(  # noqa: S603 (our own interpreter and script)
        argv, env=environment, cwd=cwd, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if ran.returncode not in ok:
        message = f"{argv} exited {ran.returncode}: {ran.stderr.decode()}"
        raise RuntimeError(message)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu


def supervisor(environment: dict[str, str], *, running: bool) -> None:
    """Start the host's supervisor and wait until it follows every place; or stop it."""
    if not running:
        subprocess.run(  # noqa: S603 (our own script)
            [*flume_argv(), "daemon", "stop"], env=environment, check=False, capture_output=True
        )
        return
    subprocess.Popen(  # noqa: S603 (our own script)
        [*flume_argv(), "daemon", "run"],
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ran = subprocess.run(  # noqa: S603 (our own script)
            [*flume_argv(), "daemon", "status"], env=environment, capture_output=True, check=False
        )
        if b"running, pid" in ran.stdout and b" 0 ticks" not in ran.stdout:
            return
        time.sleep(0.1)
    message = "the supervisor did not answer within 60 s"
    raise TimeoutError(message)


def main() -> None:
    """Build the hosts, time every command in turns, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--places", type=int, default=200)
    arguments = parser.parse_args()
    load_before = os.getloadavg()[0]
    outside = private_host()
    empty = cached(dict(os.environ))
    many = cached(host_with(arguments.places))
    flume = flume_argv()
    # (label, argv, environment, exit statuses that are its answer)
    cases: list[tuple[str, list[str], dict[str, str], set[int]]] = [
        ("python -c pass", [sys.executable, "-c", "pass"], empty, {0}),
        ("flume --help", [*flume, "--help"], empty, {0}),
        ("flume status, no places", [*flume, "status"], empty, {0}),
        (f"flume status, {arguments.places} places", [*flume, "status"], many, {0}),
        (
            f"flume status --json, {arguments.places} places",
            [*flume, "status", "--json"],
            many,
            {0},
        ),
        ("flume needs, refused", [*flume, "needs", "stuck"], empty, {2}),
        ("flume submit, refused", [*flume, "submit"], empty, {2}),
    ]
    supervisor(many, running=True)
    try:
        samples = _rounds(cases, outside, arguments.rounds)
    finally:
        supervisor(many, running=False)
    bare = [
        ("python -c pass", [sys.executable, "-c", "pass"], empty, {0}),
        (
            f"flume status, {arguments.places} places, no supervisor (journals read)",
            [*flume, "status"],
            many,
            {0},
        ),
    ]
    samples.update(_rounds(bare, outside, max(5, arguments.rounds // 3)))
    base = median([wall for wall, _cpu in samples["python -c pass"]])
    print(f"{'command':<62} {'median':>9} {'ratio':>7} {'cpu':>8}")
    for label, times in samples.items():
        walls = [wall for wall, _cpu in times]
        ms = median(walls) * 1000
        cpu = median([cpu for _wall, cpu in times]) * 1000
        verdict = (
            ""
            if label == "python -c pass" or "no supervisor" in label
            else ("  met" if ms <= TARGET_MS else "  NOT met")
        )
        print(f"{label:<62} {ms:7.0f}ms {median(walls) / base:6.1f}x {cpu:6.0f}ms{verdict}")
    print(
        f"target: each flume command at most {TARGET_MS:.0f} ms median wall time (bytecode "
        "cached); ratio: against python -c pass; cpu: median user+system time"
    )
    # The wall times move with what else the machine runs: say how busy it was.
    print(
        f"flume: {flume[0]}; load average (1 min) {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after, on {os.cpu_count()} cores"
    )


def _rounds(
    cases: list[tuple[str, list[str], dict[str, str], set[int]]], cwd: Path, rounds: int
) -> dict[str, list[tuple[float, float]]]:
    """Warm each case once, then time them in turns, the order turning each round."""
    for _label, argv, environment, ok in cases:
        timed(argv, environment, cwd, ok)
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in cases}
    for number in range(rounds):
        turn = cases[number % len(cases) :] + cases[: number % len(cases)]
        for label, argv, environment, ok in turn:
            samples[label].append(timed(argv, environment, cwd, ok))
    return samples


if __name__ == "__main__":
    main()
