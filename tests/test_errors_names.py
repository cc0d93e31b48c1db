"""Generated broker error classes have clean names (issue 13)."""

from __future__ import annotations

import pytest

from codegen.errors import ErrorCode, class_name, class_names
from kafkacore.protocol import error_codes


def test_a_trailing_exception_becomes_error() -> None:
    assert class_name("INVALID_TOPIC_EXCEPTION") == "InvalidTopicError"
    assert class_name("NETWORK_EXCEPTION") == "NetworkError"
    assert class_name("UNKNOWN_SERVER_ERROR") == "UnknownServerError"
    assert class_name("NOT_LEADER_OR_FOLLOWER") == "NotLeaderOrFollowerError"


def test_no_generated_class_reads_exception_error() -> None:
    names = [cls.__name__ for cls in error_codes.ERRORS.values()]
    assert not [n for n in names if "Exception" in n]
    assert error_codes.ERRORS[17].__name__ == "InvalidTopicError"
    assert error_codes.ERRORS[13].__name__ == "NetworkError"
    assert error_codes.InvalidTopicError.code == 17


def test_two_codes_that_would_share_a_class_name_are_refused() -> None:
    def code(n: int, name: str) -> ErrorCode:
        return ErrorCode(
            code=n, name=name, java_exception="", retriable=False, invalid_metadata=False
        )

    with pytest.raises(
        ValueError, match=r"INVALID_TOPIC_EXCEPTION .* INVALID_TOPIC .*InvalidTopicError"
    ):
        class_names([code(17, "INVALID_TOPIC_EXCEPTION"), code(99, "INVALID_TOPIC")])
