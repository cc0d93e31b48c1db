"""Two ways of reaching brokers that several command areas share.

- :class:`LeaderRouting`: the leaders of some partitions. A Metadata request
  for their topics (the admin client's own, never auto-creating, leaving the
  client core's tracked topics alone) names each partition's leader; the
  partitions are handed out one batch per leader. A topic or partition the
  metadata does not know fails at once (UNKNOWN_TOPIC_OR_PARTITION); a
  partition without a leader, or a leader that says it no longer is one
  (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...), is looked up again
  after the backoff.
- :class:`BrokerFanout`: every broker. A Metadata request lists them; the
  job's first item (:data:`SEARCH`) is that lookup, one item per broker
  follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.admin._base import AdminBase, Job, code_error
from kafkacore.admin._meta import metadata_builder
from kafkacore.admin.results import ItemResults
from kafkacore.client.handles import RequestHandle
from kafkacore.client.metadata import TopicPartition
from kafkacore.client.routing import AnyNode
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import LEADER_MOVED, ErrorCode

__all__ = ["SEARCH", "BrokerFanout", "LeaderRouting", "Leaders", "ToLeader", "found_outcome"]

#: The first item of a job whose other items are found while it runs (every
#: broker, every partition a controller reports).
SEARCH = "search"

#: (partition, its leader's epoch) per leader id.
Leaders = dict[int, list[tuple[TopicPartition, int]]]
#: Send to one leader: (leader, its partitions, look the leaders up again, now).
ToLeader = Callable[
    [int, list[tuple[TopicPartition, int]], Callable[[list[Any], float], None], float], None
]


def found_outcome(job: Job) -> tuple[Any, BaseException | None]:
    """ItemResults of the items found, or the error that kept the search from finding any."""
    search = job.results[SEARCH]
    if search.error is not None:
        return None, search.error
    return ItemResults({k: job.results[k] for k in job.keys[1:]}), None


class LeaderRouting(AdminBase):
    """Sends to partition leaders; see the module docstring."""

    def _to_leaders(
        self, job: Job, partitions: list[TopicPartition], to_leader: ToLeader, now: float
    ) -> None:
        """Find the leaders of ``partitions`` (the job's items) and hand each its share."""

        def lookup(keys: list[TopicPartition], t: float) -> None:
            topics = sorted({tp.topic for tp in keys})

            def answer(
                response: m.MetadataResponse, handle: RequestHandle[m.MetadataResponse], t2: float
            ) -> None:
                leaders, retry = self._leaders(job, keys, response, self._answerer())
                self._retry_items(job, retry, lookup, t2)
                for leader, items in sorted(leaders.items()):
                    to_leader(leader, items, lookup, t2)

            self._send(
                job,
                keys,
                m.MetadataRequest(),
                answer,
                lookup,
                now=t,
                target=AnyNode(),
                build=metadata_builder(topics),
            )

        lookup(partitions, now)

    @staticmethod
    def _leaders(
        job: Job, keys: list[TopicPartition], response: m.MetadataResponse, node_id: int | None
    ) -> tuple[Leaders, list[tuple[TopicPartition, BaseException]]]:
        """Each partition's leader in broker ``node_id``'s Metadata answer."""
        topics = {t.name: t for t in response.topics}
        leaders: Leaders = {}
        retry: list[tuple[TopicPartition, BaseException]] = []
        for tp in keys:
            topic = topics.get(tp.topic)
            where = f"partition {tp.topic}-{tp.partition}"
            if topic is None or topic.error_code in LEADER_MOVED - {
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            }:
                code = ErrorCode.LEADER_NOT_AVAILABLE if topic is None else topic.error_code
                retry.append(
                    (tp, code_error(code, "no leader in the metadata yet", where, node_id=node_id))
                )
                continue
            if topic.error_code:
                error = code_error(topic.error_code, None, f"topic {tp.topic!r}", node_id=node_id)
                job.settle(tp, error=error)
                continue
            part = next((p for p in topic.partitions if p.partition_index == tp.partition), None)
            if part is None:
                message = f"topic {tp.topic!r} has {len(topic.partitions)} partitions"
                job.settle(
                    tp,
                    error=code_error(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message, where, node_id=node_id
                    ),
                )
            elif part.leader_id < 0:
                retry.append(
                    (
                        tp,
                        code_error(
                            ErrorCode.LEADER_NOT_AVAILABLE,
                            "no leader in the metadata yet",
                            where,
                            node_id=node_id,
                        ),
                    )
                )
            else:
                leaders.setdefault(part.leader_id, []).append((tp, part.leader_epoch))
        return leaders, retry

    def _leader_outcome(
        self,
        job: Job,
        tp: TopicPartition,
        code: int,
        value: Any,
        retry: list[tuple[TopicPartition, BaseException]],
        node: int,
    ) -> None:
        if tp not in job.known:
            return
        if not code:
            job.settle(tp, value)
            return
        error = code_error(code, None, f"partition {tp.topic}-{tp.partition}", node_id=node)
        if code in LEADER_MOVED:
            retry.append((tp, error))
        else:
            job.settle(tp, error=error)


class BrokerFanout(AdminBase):
    """Sends to every broker; see the module docstring."""

    def _each_broker(self, job: Job, ask: Callable[[list[int], float], None], now: float) -> None:
        """List the brokers (settling :data:`SEARCH`), add one item each, then ``ask`` them."""

        def find(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.MetadataRequest(),
                found,
                find,
                now=t,
                target=AnyNode(),
                build=metadata_builder([]),
            )

        def found(
            response: m.MetadataResponse, handle: RequestHandle[m.MetadataResponse], t: float
        ) -> None:
            ids = sorted(b.node_id for b in response.brokers)
            job.settle(SEARCH, None)
            job.add(ids)
            ask(ids, t)

        find([SEARCH], now)
