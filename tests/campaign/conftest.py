"""Fixtures of the fault campaign: the seed of a run, and the long switch.

Every campaign test takes ``campaign_seed``: the one given with
``--campaign-seed`` (or ``KAFKACORE_CAMPAIGN_SEED``), else a fresh random
one. A failing test's report carries a "campaign seed" section naming it and
the command line that replays it.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

_SEED_KEY = pytest.StashKey[int]()


@pytest.fixture
def long_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--long"))


@pytest.fixture
def campaign_seed(request: pytest.FixtureRequest) -> int:
    given = request.config.getoption("--campaign-seed")
    # Test code may draw real randomness: a new seed per run widens coverage.
    seed = int(given) if given is not None else int.from_bytes(os.urandom(4), "big")
    request.node.stash[_SEED_KEY] = seed
    return seed


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, object, None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    seed = item.stash.get(_SEED_KEY, None)
    if seed is not None and report.failed:
        report.sections.append(
            (
                "campaign seed",
                f"seed {seed}; replay with: ./dev pytest '{item.nodeid}' --campaign-seed {seed}",
            )
        )


def say(config: pytest.Config, line: str) -> None:
    """Write ``line`` to the terminal even while the test's output is captured."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capman = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    if capman is None:
        reporter.write_line(line)
        return
    with capman.global_and_fixture_disabled():
        reporter.write_line(line)
