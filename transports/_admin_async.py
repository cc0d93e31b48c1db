"""The admin surface made awaitable, shared by the asyncio and trio admin clients.

Theory of operation
-------------------
Both async admin clients call the sans-IO :class:`~kafkacore.admin.AdminCore`
directly from the one thread their event loop runs on, through their
driver (:class:`~kafkacore.transports._async_driver.AsyncDriver`). Every call is a
plan of the shared admin surface (:mod:`kafkacore.transports._admin_common`); this
module runs it awaitable: each core command is issued at once, and the
call awaits a one-shot of the event loop that the core's
``OperationCompleted`` fills. Calls from several tasks run at once.

A client dropped unclosed warns with ``ResourceWarning`` and drops its
connections. Cancelling the awaiting task stops the wait, not the command: the core has
no way to withdraw an admin request already sent, and finishes it by its
deadline (``timeout=``, else ``default_api_timeout_ms``).

Subclasses supply the life: ``_running(what)`` gives the core or a clear
error for a client that is not running (asyncio starts lazily, trio needs
``async with``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar

from kafkacore.admin import AdminCore
from kafkacore.errors import RequestCancelled

from ._admin_cluster import ClusterPlans
from ._admin_common import Plan, dress
from ._admin_groups import GroupPlans
from ._admin_topics import TopicPlans
from ._async_driver import AsyncDriver
from ._common import Parts
from ._unclosed import WarnsUnclosed

__all__ = ["AsyncAdminBase"]

T = TypeVar("T")
P = ParamSpec("P")


def awaitable(
    builder: Callable[Concatenate[Any, P], Plan[T]],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]:
    """The coroutine method that runs ``builder``'s plan."""

    async def method(self: AsyncAdminBase, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(builder(self, *args, **kwargs))

    return dress(method, builder)


class AsyncAdminBase(TopicPlans, GroupPlans, ClusterPlans, WarnsUnclosed):
    """The shared async admin surface; see the module docstring."""

    _NAME = "AsyncAdminClient"

    _driver: AsyncDriver

    def _setup(self) -> None:
        self._driver = self._new_driver(self._parts)
        self._core: AdminCore | None = None
        self._closed = False

    def _new_driver(self, parts: Parts) -> AsyncDriver:
        raise NotImplementedError

    def _attach(self) -> None:
        self._core = self._driver.attach(self._build_core, self._router.on_event)

    def _running(self, what: str) -> AdminCore:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self, timeout: float = 5.0) -> None:
        """Fail pending calls with ``RequestCancelled``, say goodbye (KIP-714's
        terminating push, at most ``timeout`` s; 0: none) and drop every
        connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        core = self._core
        if core is not None:
            # Pending calls fail at once; only the farewell may wait.
            self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))
            try:
                await self._driver.farewell(timeout)
            finally:
                self._driver.call(lambda now: core.close(now=now))
                self._driver.abort()
        self._router.fail_all(RequestCancelled(f"{self._NAME} closed"))
        await self._driver.yield_()  # let aborted transports run their callbacks

    def _is_open(self) -> bool:
        return not self._closed and self._core is not None

    def _drop(self) -> None:
        # Dropped unclosed (see _unclosed.py): drop the connections, which needs no await.
        self._closed = True
        self._router.fail_all(RequestCancelled(f"{self._NAME} dropped unclosed"))
        with contextlib.suppress(RuntimeError):  # its event loop is closed: nothing to drop
            self._driver.abort()

    async def _run(self, plan: Plan[T]) -> T:
        """Run ``plan`` to its value, awaiting each command's operation."""
        core = self._running(plan.what)
        driver = self._driver
        deadline = None if plan.timeout is None else driver.clock() + plan.timeout
        steps = plan.steps
        value: Any = None
        try:
            while True:
                try:
                    command = steps.send(value)
                except StopIteration as stop:
                    result: T = stop.value
                    return result
                waiter = driver.waiter()
                driver.call(
                    functools.partial(self._issue, core, command, deadline, plan, waiter.fill)
                )
                limit = round(self._backstop(deadline, driver.clock()), 1)
                value = await driver.wait(waiter, limit, plan.what)
        finally:
            steps.close()

    def run_on_loop(self, fn: Callable[[AdminCore], T]) -> T:
        """Run ``fn(core)`` now (tests, debugging): the core's state."""
        core = self._running("run_on_loop")
        return fn(core)

    # -- the calls (docstrings: the surface's plan builders) ------------------------------
    create_topics = awaitable(TopicPlans._create_topics)
    delete_topics = awaitable(TopicPlans._delete_topics)
    create_partitions = awaitable(TopicPlans._create_partitions)
    list_topics = awaitable(TopicPlans._list_topics)
    list_topic_listings = awaitable(TopicPlans._list_topic_listings)
    describe_topics = awaitable(TopicPlans._describe_topics)
    describe_cluster = awaitable(TopicPlans._describe_cluster)
    describe_configs = awaitable(TopicPlans._describe_configs)
    incremental_alter_configs = awaitable(TopicPlans._incremental_alter_configs)
    alter_configs = awaitable(TopicPlans._alter_configs)
    list_groups = awaitable(GroupPlans._list_groups)
    list_consumer_groups = awaitable(GroupPlans._list_consumer_groups)
    list_share_groups = awaitable(GroupPlans._list_share_groups)
    describe_consumer_groups = awaitable(GroupPlans._describe_consumer_groups)
    describe_share_groups = awaitable(GroupPlans._describe_share_groups)
    delete_consumer_groups = awaitable(GroupPlans._delete_consumer_groups)
    delete_share_groups = awaitable(GroupPlans._delete_share_groups)
    list_consumer_group_offsets = awaitable(GroupPlans._list_consumer_group_offsets)
    alter_consumer_group_offsets = awaitable(GroupPlans._alter_consumer_group_offsets)
    delete_consumer_group_offsets = awaitable(GroupPlans._delete_consumer_group_offsets)
    list_share_group_offsets = awaitable(GroupPlans._list_share_group_offsets)
    alter_share_group_offsets = awaitable(GroupPlans._alter_share_group_offsets)
    delete_share_group_offsets = awaitable(GroupPlans._delete_share_group_offsets)
    list_offsets = awaitable(ClusterPlans._list_offsets)
    delete_records = awaitable(ClusterPlans._delete_records)
    elect_leaders = awaitable(ClusterPlans._elect_leaders)
    perform_leader_election = awaitable(ClusterPlans._perform_leader_election)
    alter_partition_reassignments = awaitable(ClusterPlans._alter_partition_reassignments)
    list_partition_reassignments = awaitable(ClusterPlans._list_partition_reassignments)
    describe_log_dirs = awaitable(ClusterPlans._describe_log_dirs)
    describe_producers = awaitable(ClusterPlans._describe_producers)
    list_transactions = awaitable(ClusterPlans._list_transactions)
    describe_transactions = awaitable(ClusterPlans._describe_transactions)
    abort_transaction = awaitable(ClusterPlans._abort_transaction)
    describe_client_quotas = awaitable(ClusterPlans._describe_client_quotas)
    alter_client_quotas = awaitable(ClusterPlans._alter_client_quotas)
    describe_user_scram_credentials = awaitable(ClusterPlans._describe_user_scram_credentials)
    alter_user_scram_credentials = awaitable(ClusterPlans._alter_user_scram_credentials)
    describe_acls = awaitable(ClusterPlans._describe_acls)
    create_acls = awaitable(ClusterPlans._create_acls)
    delete_acls = awaitable(ClusterPlans._delete_acls)
    describe_features = awaitable(ClusterPlans._describe_features)
    update_features = awaitable(ClusterPlans._update_features)
    create_delegation_token = awaitable(ClusterPlans._create_delegation_token)
    renew_delegation_token = awaitable(ClusterPlans._renew_delegation_token)
    expire_delegation_token = awaitable(ClusterPlans._expire_delegation_token)
    describe_delegation_tokens = awaitable(ClusterPlans._describe_delegation_tokens)
    describe_metadata_quorum = awaitable(ClusterPlans._describe_metadata_quorum)
    describe_topic_partitions = awaitable(ClusterPlans._describe_topic_partitions)
    list_config_resources = awaitable(ClusterPlans._list_config_resources)
    alter_replica_log_dirs = awaitable(ClusterPlans._alter_replica_log_dirs)
    find_coordinator = awaitable(ClusterPlans._find_coordinator)
