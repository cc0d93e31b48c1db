"""The response error scanner: every code found, however deep; the verdict table."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.response_errors import ResponseVerdict, classify, error_codes, scan_plan
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.messages.fetch_response import FetchableTopicResponse, PartitionData
from kafkacore.protocol.messages.metadata_response import MetadataResponseTopic
from kafkacore.protocol.messages.produce_response import (
    PartitionProduceResponse,
    TopicProduceResponse,
)

E = ErrorCode


def produce(*codes: int) -> m.ProduceResponse:
    partitions = [PartitionProduceResponse(index=i, error_code=c) for i, c in enumerate(codes)]
    return m.ProduceResponse(
        responses=[TopicProduceResponse(name="t", partition_responses=partitions)]
    )


#: (response, codes, rebootstrap, refresh metadata, coordinator moved)
VERDICTS: list[tuple[Any, set[int], bool, bool, bool]] = [
    (produce(E.NOT_LEADER_OR_FOLLOWER), {E.NOT_LEADER_OR_FOLLOWER}, False, True, False),
    (produce(E.NONE, E.MESSAGE_TOO_LARGE), {E.MESSAGE_TOO_LARGE}, False, False, False),
    (m.HeartbeatResponse(error_code=E.NOT_COORDINATOR), {E.NOT_COORDINATOR}, False, False, True),
    (m.HeartbeatResponse(error_code=E.NONE), set(), False, False, False),
    (
        m.MetadataResponse(error_code=E.REBOOTSTRAP_REQUIRED),
        {E.REBOOTSTRAP_REQUIRED},
        True,
        False,
        False,
    ),
    (
        m.MetadataResponse(
            topics=[MetadataResponseTopic(name="t", error_code=E.REBOOTSTRAP_REQUIRED)]
        ),
        {E.REBOOTSTRAP_REQUIRED},
        False,  # only the top-level code asks for a rebootstrap (KIP-1102)
        False,
        False,
    ),
    (
        m.JoinGroupResponse(error_code=E.COORDINATOR_LOAD_IN_PROGRESS),
        {E.COORDINATOR_LOAD_IN_PROGRESS},
        False,
        False,
        True,
    ),
]


@pytest.mark.parametrize(("response", "codes", "reboot", "refresh", "moved"), VERDICTS)
def test_verdict_table(
    response: Any, codes: set[int], reboot: bool, refresh: bool, moved: bool
) -> None:
    verdict = classify(response)
    if not codes:
        assert verdict is None
        return
    assert verdict == ResponseVerdict(
        codes=frozenset(codes),
        rebootstrap=reboot,
        refresh_metadata=refresh,
        coordinator_moved=moved,
    )


def test_codes_are_found_at_every_depth() -> None:
    response = m.FetchResponse(
        error_code=E.NONE,
        responses=[
            FetchableTopicResponse(
                topic="t",
                partitions=[
                    PartitionData(partition_index=0, error_code=E.OFFSET_OUT_OF_RANGE),
                    PartitionData(partition_index=1, error_code=E.FENCED_LEADER_EPOCH),
                ],
            )
        ],
    )
    assert error_codes(response) == {E.OFFSET_OUT_OF_RANGE, E.FENCED_LEADER_EPOCH}


def test_the_plan_skips_fields_that_hold_no_code() -> None:
    has_code, nested = scan_plan(m.FetchResponse)
    assert has_code and nested == ("responses",)
    # Records are bytes, not structs: the scan never walks them.
    has_code, nested = scan_plan(PartitionData)
    assert has_code and "records" not in nested
    assert scan_plan(m.FetchResponse) is scan_plan(m.FetchResponse)  # planned once


def test_a_class_without_fields_has_nothing_to_scan() -> None:
    assert scan_plan(int) == (False, ())
    assert error_codes(42) == set()
    assert classify(object()) is None
