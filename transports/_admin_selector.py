"""Blocking Kafka admin client: the sans-IO admin core on a selector loop thread.

Theory of operation
-------------------
:class:`KafkaAdminClient` owns one :class:`~kafkacore.admin.AdminCore`
driven by the selector transport's driver
(:class:`~kafkacore.transports._selector_driver.LoopThread`), as the blocking
consumer does: only the loop thread touches the core. Every call is a plan
of the shared admin surface (:mod:`kafkacore.transports._admin_common`); this module
runs it blocking: each core command hops to the loop thread, and the
caller waits on a ``concurrent.futures.Future`` that the core's
``OperationCompleted`` resolves. Calls are safe from any thread and may
run at once (each is its own operation in the core).

Life: RUNNING from construction (connections open on the first call),
CLOSED after ``close()``, which fails what is pending with
``RequestCancelled``, stops the loop and closes every socket, bounded. A
client dropped unclosed warns with ``ResourceWarning`` and closes itself.
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from kafkacore.admin import AdminCore
from kafkacore.errors import KafkaTimeoutError, LocalProtocolError, RequestCancelled

from ._admin_cluster import ClusterPlans
from ._admin_common import Plan, dress
from ._admin_groups import GroupPlans
from ._admin_topics import TopicPlans
from ._selector_driver import Delivery, LoopThread
from ._unclosed import WarnsUnclosed

__all__ = ["KafkaAdminClient"]

T = TypeVar("T")
P = ParamSpec("P")


def blocking(builder: Callable[Concatenate[Any, P], Plan[T]]) -> Callable[Concatenate[Any, P], T]:
    """The blocking method that runs ``builder``'s plan."""

    def method(self: KafkaAdminClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(builder(self, *args, **kwargs))

    return dress(method, builder)


class KafkaAdminClient(TopicPlans, GroupPlans, ClusterPlans, WarnsUnclosed):
    """Blocking admin client; see the module docstring and ``docs/admin.md``.

    Options as ``ClientConfig`` + ``AdminConfig`` (``default_api_timeout_ms``,
    ``max_pending_operations``). Every call takes ``timeout=`` in seconds
    (default: ``default_api_timeout_ms``); the kafka-python-shaped calls also
    take its ``timeout_ms=``.
    """

    _NAME = "KafkaAdminClient"

    def _setup(self) -> None:
        self._loop = LoopThread(
            self._NAME, self._parts, noun="admin client", thread_name="kafkacore-admin"
        )
        self._core = self._build_core(self._loop.clock())
        self._closed = False
        self._loop.start(self._core, self._router.on_event, on_crash=self._router.fail_all)

    # -- life -------------------------------------------------------------
    def __enter__(self) -> KafkaAdminClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: float = 5.0) -> None:
        """Fail pending calls with ``RequestCancelled``, stop the loop thread (at most
        ``timeout`` s) and close every socket. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._loop.stop(self._shutdown_core, timeout)

    def _is_open(self) -> bool:
        return not self._closed

    def _drop(self) -> None:
        # Dropped unclosed (see _unclosed.py): no socket and no loop thread
        # outlives the client, even when collected on its own loop thread.
        self._closed = True
        self._loop.abandon()

    def _shutdown_core(self) -> None:
        self._loop.bridge.command(lambda now: self._core.close(now=now))
        self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))

    # -- the idiom: blocking ----------------------------------------------------
    def _run(self, plan: Plan[T]) -> T:
        """Run ``plan`` to its value, each command on the loop thread."""
        if self._closed:
            raise LocalProtocolError(f"{plan.what}: the admin client is closed; make a new one")
        clock = self._loop.clock
        deadline = None if plan.timeout is None else clock() + plan.timeout
        steps = plan.steps
        value: Any = None
        try:
            while True:
                try:
                    command = steps.send(value)
                except StopIteration as stop:
                    result: T = stop.value
                    return result
                fut = Delivery()
                self._loop.call(
                    functools.partial(self._issue, self._core, command, deadline, plan, fut.fill)
                )
                limit = self._backstop(deadline, clock())
                try:
                    value = fut.result(limit)
                except concurrent.futures.TimeoutError:
                    raise KafkaTimeoutError(
                        f"{plan.what}: no answer within {limit:.1f} s"
                    ) from None
        finally:
            steps.close()

    def run_on_loop(self, fn: Callable[[AdminCore], T]) -> T:
        """Run ``fn(core)`` on the loop thread (tests, debugging): the core's state."""
        core: AdminCore = self._core
        return self._loop.call(lambda now: fn(core))

    # -- the calls (docstrings: the surface's plan builders) ------------------------------
    create_topics = blocking(TopicPlans._create_topics)
    delete_topics = blocking(TopicPlans._delete_topics)
    create_partitions = blocking(TopicPlans._create_partitions)
    list_topics = blocking(TopicPlans._list_topics)
    list_topic_listings = blocking(TopicPlans._list_topic_listings)
    describe_topics = blocking(TopicPlans._describe_topics)
    describe_cluster = blocking(TopicPlans._describe_cluster)
    describe_configs = blocking(TopicPlans._describe_configs)
    incremental_alter_configs = blocking(TopicPlans._incremental_alter_configs)
    alter_configs = blocking(TopicPlans._alter_configs)
    list_groups = blocking(GroupPlans._list_groups)
    list_consumer_groups = blocking(GroupPlans._list_consumer_groups)
    list_share_groups = blocking(GroupPlans._list_share_groups)
    describe_consumer_groups = blocking(GroupPlans._describe_consumer_groups)
    describe_share_groups = blocking(GroupPlans._describe_share_groups)
    delete_consumer_groups = blocking(GroupPlans._delete_consumer_groups)
    delete_share_groups = blocking(GroupPlans._delete_share_groups)
    list_consumer_group_offsets = blocking(GroupPlans._list_consumer_group_offsets)
    alter_consumer_group_offsets = blocking(GroupPlans._alter_consumer_group_offsets)
    delete_consumer_group_offsets = blocking(GroupPlans._delete_consumer_group_offsets)
    list_share_group_offsets = blocking(GroupPlans._list_share_group_offsets)
    alter_share_group_offsets = blocking(GroupPlans._alter_share_group_offsets)
    delete_share_group_offsets = blocking(GroupPlans._delete_share_group_offsets)
    list_offsets = blocking(ClusterPlans._list_offsets)
    delete_records = blocking(ClusterPlans._delete_records)
    elect_leaders = blocking(ClusterPlans._elect_leaders)
    perform_leader_election = blocking(ClusterPlans._perform_leader_election)
    alter_partition_reassignments = blocking(ClusterPlans._alter_partition_reassignments)
    list_partition_reassignments = blocking(ClusterPlans._list_partition_reassignments)
    describe_log_dirs = blocking(ClusterPlans._describe_log_dirs)
    describe_producers = blocking(ClusterPlans._describe_producers)
    list_transactions = blocking(ClusterPlans._list_transactions)
    describe_transactions = blocking(ClusterPlans._describe_transactions)
    abort_transaction = blocking(ClusterPlans._abort_transaction)
    describe_client_quotas = blocking(ClusterPlans._describe_client_quotas)
    alter_client_quotas = blocking(ClusterPlans._alter_client_quotas)
    describe_user_scram_credentials = blocking(ClusterPlans._describe_user_scram_credentials)
    alter_user_scram_credentials = blocking(ClusterPlans._alter_user_scram_credentials)
    describe_acls = blocking(ClusterPlans._describe_acls)
    create_acls = blocking(ClusterPlans._create_acls)
    delete_acls = blocking(ClusterPlans._delete_acls)
    describe_features = blocking(ClusterPlans._describe_features)
    update_features = blocking(ClusterPlans._update_features)
    create_delegation_token = blocking(ClusterPlans._create_delegation_token)
    renew_delegation_token = blocking(ClusterPlans._renew_delegation_token)
    expire_delegation_token = blocking(ClusterPlans._expire_delegation_token)
    describe_delegation_tokens = blocking(ClusterPlans._describe_delegation_tokens)
    describe_metadata_quorum = blocking(ClusterPlans._describe_metadata_quorum)
    describe_topic_partitions = blocking(ClusterPlans._describe_topic_partitions)
    list_config_resources = blocking(ClusterPlans._list_config_resources)
    alter_replica_log_dirs = blocking(ClusterPlans._alter_replica_log_dirs)
    find_coordinator = blocking(ClusterPlans._find_coordinator)
