"""Hypothesis profiles: ``dev`` for quick local runs, ``ci`` for at least 1,000 examples a test.

Pick one with ``HYPOTHESIS_PROFILE`` (the test script sets ``ci`` under CI).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=150, stateful_step_count=40, deadline=None)
settings.register_profile(
    "ci",
    max_examples=1000,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
