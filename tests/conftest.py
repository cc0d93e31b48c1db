"""Shared test setup: local Kafka fixtures and the hypothesis profiles.

The fixtures (``kafka_broker``, ``kafka_cluster``, ``kafka_libs``) live in
:mod:`localkafka.pytest_plugin`. The "ci" hypothesis profile bounds the work
per property and prints a reproduction blob on failure; ``./dev test`` and
CI (``CI=true``) select it, ``HYPOTHESIS_PROFILE`` overrides.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["localkafka.pytest_plugin"]

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=False,
    print_blob=True,
    deadline=None,  # 2 shared cores: wall-clock deadlines would flake
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, print_blob=True)

_default = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))
