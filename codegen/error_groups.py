"""Hand-written generator input: named groups of error codes the client reacts to alike.

Errors.java says what each code is; it does not say which codes call for
the same reaction (look the coordinator up again, refresh the leader, the
producer is fenced). Those groups are client decisions used by more than
one machine, so they are named here once and emitted as frozensets of
``ErrorCode`` into ``kafkacore/protocol/enums.py``. The generator checks
every name against Errors.java. A group only one module uses stays in that
module (spelled with ``ErrorCode`` members).
"""

from __future__ import annotations

#: Group name -> (why these codes go together, the Errors.java names).
ERROR_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "COORDINATOR_MOVED": (
        "The coordinator is loading, gone or elsewhere: forget it, look it up again "
        "with FindCoordinator and retry (group, offset and transaction requests alike).",
        ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR"),
    ),
    "TXN_COORDINATOR_RETRY": (
        "Transactional requests (InitProducerId, AddPartitionsToTxn, EndTxn, ...) that "
        "are retried after a backoff: the coordinator moved, the request timed out, or "
        "the markers of the previous transaction are still being written.",
        (
            "COORDINATOR_LOAD_IN_PROGRESS",
            "COORDINATOR_NOT_AVAILABLE",
            "NOT_COORDINATOR",
            "REQUEST_TIMED_OUT",
            "CONCURRENT_TRANSACTIONS",
        ),
    ),
    "PRODUCER_FENCING": (
        "A newer producer with the same transactional id took over: this one is fenced "
        "for good (KIP-98); brokers answer INVALID_PRODUCER_EPOCH or, since KIP-588, "
        "PRODUCER_FENCED.",
        ("INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"),
    ),
    "LEADER_MOVED": (
        "Answers after which a partition's leader must be looked up again (metadata "
        "refresh) before fetching or validating its position again (KIP-320, KIP-516).",
        (
            "UNKNOWN_TOPIC_OR_PARTITION",
            "LEADER_NOT_AVAILABLE",
            "NOT_LEADER_OR_FOLLOWER",
            "KAFKA_STORAGE_ERROR",
            "FENCED_LEADER_EPOCH",
            "UNKNOWN_LEADER_EPOCH",
            "UNKNOWN_TOPIC_ID",
            "INCONSISTENT_TOPIC_ID",
        ),
    ),
}
