"""Every rule id is named by exactly one model rule or invariant, and by the core code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import Counter
from types import FunctionType

from hypothesis.stateful import RuleBasedStateMachine

import flume.core
import tests.model
from flume.core.rules import RULES

_ID = re.compile(r"(?<![A-Z0-9-])(R1[01]|R[1-9]|[A-Z]+(?:-[A-Z]+)+)(?![A-Za-z0-9-])")


def _machines() -> list[type[RuleBasedStateMachine]]:
    found: set[type[RuleBasedStateMachine]] = set()
    for module in pkgutil.iter_modules(tests.model.__path__):
        loaded = importlib.import_module(f"tests.model.{module.name}")
        for _name, value in inspect.getmembers(loaded, inspect.isclass):
            if issubclass(value, RuleBasedStateMachine) and value is not RuleBasedStateMachine:
                found.add(value)
    return sorted(found, key=lambda machine: machine.__name__)


def _rules_and_invariants() -> list[FunctionType]:
    """Each hypothesis rule or invariant function of every machine, once."""
    seen: dict[int, FunctionType] = {}
    for machine in _machines():
        for klass in machine.__mro__:
            for value in vars(klass).values():
                if not isinstance(value, FunctionType):
                    continue
                marked = any(
                    hasattr(value, marker)
                    for marker in ("hypothesis_stateful_rule", "hypothesis_stateful_invariant")
                )
                if marked:
                    seen[id(value)] = value
    return list(seen.values())


def _ids(text: str | None) -> set[str]:
    """Every token that looks like a rule id: R<n>, or WORDS-JOINED-BY-HYPHENS."""
    return set(_ID.findall(text or ""))


def test_machines_are_found() -> None:
    """The meta-test sees the four rule families' machines and their rules."""
    names = {machine.__name__ for machine in _machines()}
    assert {"DeliveryMachine", "StopShortMachine", "StageMachine", "TidyMachine"} <= names
    assert len(_rules_and_invariants()) > 20


def test_every_rule_id_names_exactly_one_model_rule_or_invariant() -> None:
    """R1-R11 and each finer id appear in exactly one model rule or invariant docstring."""
    counts: Counter[str] = Counter()
    for function in _rules_and_invariants():
        for rule_id in _ids(function.__doc__):
            counts[rule_id] += 1
    unknown = sorted(set(counts) - set(RULES))
    assert not unknown, f"docstrings name ids that are not rules: {unknown}"
    wrong = {rule_id: counts[rule_id] for rule_id in RULES if counts[rule_id] != 1}
    assert not wrong, f"each id must be named by exactly one rule or invariant: {wrong}"


def test_top_level_rules_are_all_there() -> None:
    """The catalogue holds each of DESIGN.md's R1 to R11."""
    assert {f"R{number}" for number in range(1, 12)} <= set(RULES)


def test_every_rule_id_is_named_in_the_core() -> None:
    """Each rule id is named in a docstring of the core code that carries it out."""
    text = ""
    for module in pkgutil.walk_packages(flume.core.__path__, "flume.core."):
        if module.name == "flume.core.rules":
            continue
        loaded = importlib.import_module(module.name)
        text += inspect.getsource(loaded)
    missing = sorted(rule_id for rule_id in RULES if rule_id not in _ids(text))
    assert not missing, f"rule ids no core code names: {missing}"
