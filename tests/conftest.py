"""Shared test setup: local Kafka fixtures and the hypothesis profiles.

The fixtures (``kafka_broker``, ``kafka_cluster``, ``kafka_libs``) live in
:mod:`kafkacore.testing.pytest_plugin`. The "ci" hypothesis profile bounds the work
per property and prints a reproduction blob on failure; ``./dev test`` and
CI (``CI=true``) select it, ``HYPOTHESIS_PROFILE`` overrides.

Options of the reliability campaign (``docs/reliability.md``): ``--long``
runs its long variants (also ``KAFKACORE_LONG=1``); ``--campaign-seed N``
(also ``KAFKACORE_CAMPAIGN_SEED``) replays one seed.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["kafkacore.testing.pytest_plugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkacore campaign")
    group.addoption(
        "--long",
        action="store_true",
        default=os.environ.get("KAFKACORE_LONG", "") not in ("", "0"),
        help="run the long variants of the fault campaign and the fuzzers",
    )
    group.addoption(
        "--campaign-seed",
        type=int,
        default=int(os.environ["KAFKACORE_CAMPAIGN_SEED"])
        if os.environ.get("KAFKACORE_CAMPAIGN_SEED")
        else None,
        help="replay the fault campaign with this seed (printed by a failing run)",
    )


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


# First: pytest-xdist's own hook (a worker's) reads the groups to place tests.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``./dev test`` runs two workers, ``--dist loadgroup``),
    keep each file on one worker, so its module fixtures start once; every
    test of the shared local Spark session on one worker, so a machine of two
    cores runs one such session; and the standalone-cluster tests (their own
    master, workers and Connect server) together on one worker, which may
    be the other one. Each worker starts its own broker."""
    if not getattr(config.option, "loadgroup", False):  # set on an xdist worker
        return
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "spark_cluster" in names:
            group = "spark-cluster"
        elif "spark" in item.nodeid.lower() or "spark" in names:
            group = "spark"
        else:
            group = item.path.as_posix()
        item.add_marker(pytest.mark.xdist_group(group))
