"""The launcher's command line: options parse into what LocalKafka is given."""

from __future__ import annotations

import pytest

from kafkacore.testing.__main__ import _listeners, _parser, parse_faults
from kafkacore.testing.proxy import FaultMix


def test_faults_parse_into_a_mix() -> None:
    assert parse_faults("") == FaultMix()
    assert parse_faults("cut=0.2, delay=0.1,stall=0.05,drop=0.05") == FaultMix(
        cut=0.2, delay=0.1, stall=0.05, drop=0.05
    )


@pytest.mark.parametrize("bad", ["cut", "burn=0.1", "cut=0.9,drop=0.9"])
def test_bad_faults_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"faults|FaultMix"):
        parse_faults(bad)


def test_start_options() -> None:
    args = _parser().parse_args(
        ["start", "--listeners", "MTLS,SASL_SSL", "--proxy", "--faults", "cut=0.1", "--seed", "7"]
    )
    assert args.proxy and args.seed == 7 and args.faults == "cut=0.1"
    assert _listeners(args.listeners) == ("PLAINTEXT", "MTLS", "SASL_SSL")
    assert _listeners("all") == ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
