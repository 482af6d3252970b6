"""The workflow engine (the second seed): a run's tree of blocks, its gates, budgets and lanes.

A kind of Steps in a Sequence is the simplest workflow; these modules carry the rest. From the
bottom up: where a run stands in its tree (``tree.py``) and what it spent (``budget.py``), which
the place's own rules read (:mod:`flume.core.place`, :mod:`flume.core.stage`); then, above the
place's rules, the gates judged at a turn's end and the pauses (``gates.py``), messages along a
step's edges (``messages.py``), parallel blocks' lanes (``lanes.py``), orchestrate blocks' lead
and children (``orchestrate.py``, which builds on lanes: never the other way), finalize
(``finalize.py``), the worst case a kind's caps allow (``caps.py``) and a definition's versions
judged by replay (``versions.py``, above :mod:`flume.core.step`).

Nothing is imported here: each module is imported by its own name, so that a module low in the
core (the place reads ``tree`` and ``budget``) does not pull in those above it.
"""
