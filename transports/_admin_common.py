"""What every admin client does, whatever its I/O idiom: the admin's sans-IO surface.

Theory of operation
-------------------
The three admin clients (blocking, asyncio, trio) offer the same calls over
one :class:`~kafkacore.admin.AdminCore`. What a call *does* is written once,
in the plan mixins (:class:`~kafkacore.transports._admin_topics.TopicPlans`,
:class:`~kafkacore.transports._admin_groups.GroupPlans`,
:class:`~kafkacore.transports._admin_cluster.ClusterPlans` and the mixins it
gathers), as a :class:`Plan`: a
generator of core commands (``command(core, now, timeout_ms)`` returning an
:class:`~kafkacore.operation.Operation`) that receives each operation's value
and returns the call's result. Most plans are one command; a few chain two
(``describe_topics()`` of every topic lists them first) or reshape the value
(``list_topics`` returns names).

An idiom turns plan builders into user methods (:func:`dress` gives them
the builder's name and docstring): the blocking
client runs each command on its loop thread and waits for a
``concurrent.futures.Future``, the async ones await a one-shot of their
event loop. Either way :meth:`AdminSurface._issue` runs on the loop: it
gives the command what is left of the call's ``timeout`` (seconds; one
deadline for the whole plan), and registers the caller's completion with
the :class:`AdminRouter`, which resolves it from the core's
``OperationCompleted``. The core fails every operation by its deadline, so
nothing waits for ever; the idioms add a backstop one second later.

kafka-python's ``KafkaAdminClient`` names and argument shapes are accepted
where they differ from kafkacore's (its ``NewTopic(..., topic_configs=)``,
``ConfigResource(..., configs=)``, ``timeout_ms=``); an argument kafkacore
does not support raises ``TypeError`` naming it. Results are the core's
typed values (``ItemResults``, dataclasses); kafka-python's dict and list
shapes are those of :mod:`kafkacore.compat.kafka.admin`'s client. Where
a call takes names (topics, group ids), one name alone is taken as a list
of one: a name is never a collection, so this guesses nothing.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kafkacore.admin import AdminConfig, AdminCore, ConfigResourceType
from kafkacore.admin import ConfigResource as CoreConfigResource
from kafkacore.admin import NewPartitions as CoreNewPartitions
from kafkacore.admin import NewTopic as CoreNewTopic
from kafkacore.client import ClientConfig
from kafkacore.errors import KafkaTimeoutError
from kafkacore.operation import Operation, OperationCompleted

from ._common import Role, make_parts
from ._router import Completion

__all__ = [
    "AdminRouter",
    "AdminSurface",
    "Command",
    "ConfigResource",
    "NewPartitions",
    "NewTopic",
    "Plan",
    "dress",
    "names",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
N = TypeVar("N")

#: One core command of a plan: ``(core, now, timeout_ms)`` -> its operation.
Command = Callable[[AdminCore, float, int | None], Operation[Any]]


@dataclass(frozen=True, slots=True)
class Plan(Generic[T]):
    """What one user call does: ``steps`` yields commands and gets their values.

    ``what`` names the call in messages; ``timeout`` (seconds, None: the
    core's ``default_api_timeout_ms`` per command) bounds the whole plan.
    """

    what: str
    timeout: float | None
    steps: Generator[Command, Any, T]


def dress(method: F, builder: Callable[..., Any]) -> F:
    """Give an idiom's ``method`` its plan builder's docstring, signature and public
    name (``_create_topics`` -> ``create_topics``)."""
    functools.update_wrapper(method, builder)
    method.__name__ = builder.__name__.lstrip("_")
    method.__qualname__ = method.__name__
    # help() and IDEs show what the call returns, not the builder's Plan[...].
    signature = inspect.signature(builder)
    returns = signature.return_annotation
    if isinstance(returns, str) and returns.startswith("Plan[") and returns.endswith("]"):
        signature = signature.replace(return_annotation=returns[len("Plan[") : -1])
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


def names(value: N) -> N | list[str]:
    """A lone name as a list of one (``describe_consumer_groups("g")``, as kafka-python's
    documentation writes it); anything else as given, for the core to check."""
    return [value] if isinstance(value, str) else value


class AdminRouter:
    """Resolves each operation's completion from the core's ``OperationCompleted``."""

    __slots__ = ("_ops",)

    def __init__(self) -> None:
        self._ops: dict[Operation[Any], Completion] = {}

    def expect(self, op: Operation[Any], done: Completion) -> None:
        if op.done:
            done(op.value, op.error)
        else:
            self._ops[op] = done

    def fail_all(self, error: BaseException) -> None:
        ops, self._ops = self._ops, {}
        for done in ops.values():
            done(None, error)

    def on_event(self, event: object) -> None:
        # Other events (connection changes, metadata) only matter to logging,
        # which the bridge attached already.
        if isinstance(event, OperationCompleted):
            done = self._ops.pop(event.handle, None)
            if done is not None:
                done(event.handle.value, event.handle.error)


# -- kafka-python's argument classes, as subclasses of the core's ----------------------
class NewTopic(CoreNewTopic):
    """A topic to create: :class:`kafkacore.admin.NewTopic`, also taking kafka-python's
    ``topic_configs`` (the core's ``configs``). Pass it to ``create_topics``.

    ``NewTopic(name, num_partitions, replication_factor, replica_assignments=None,
    topic_configs=None)``; -1 partitions or replicas: the broker's default.
    """

    __slots__ = ()

    def __init__(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        replica_assignments: Mapping[int, Sequence[int]] | None = None,
        topic_configs: Mapping[str, str] | None = None,
        *,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        if topic_configs is not None and configs is not None:
            raise ValueError("NewTopic: give topic_configs or configs (the same thing), not both")
        super().__init__(
            name,
            num_partitions,
            replication_factor,
            # kafka-python writes "no assignment" as {}; the core as None.
            replica_assignments or None,
            configs if configs is not None else topic_configs,
        )

    @property
    def topic_configs(self) -> Mapping[str, str]:
        """kafka-python's name for ``configs``."""
        return self.configs or {}


class NewPartitions(CoreNewPartitions):
    """Grow a topic: :class:`kafkacore.admin.NewPartitions`, which has kafka-python's
    shape, ``NewPartitions(total_count, new_assignments=None)``. Pass
    ``{topic: NewPartitions(total_count)}`` to ``create_partitions``;
    ``new_assignments`` lists the brokers of each new partition (None: the
    broker decides)."""

    __slots__ = ()


class ConfigResource(CoreConfigResource):
    """A config resource: :class:`kafkacore.admin.ConfigResource` in kafka-python's shape,
    ``ConfigResource(resource_type, name, configs=None)``.

    ``resource_type`` is a :class:`ConfigResourceType` or its name (``"TOPIC"``).
    ``configs`` is what ``alter_configs`` sets (``{name: value}``); given to
    ``describe_configs``, its keys select the configs reported. It equals
    (and hashes as) the core resource of the same type and name, so it can
    look up results.
    """

    __slots__ = ("configs",)

    configs: dict[str, str] | None

    def __init__(
        self,
        resource_type: ConfigResourceType | str,
        name: str,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(_resource_type(resource_type), name)
        object.__setattr__(self, "configs", None if configs is None else dict(configs))

    @property
    def resource_type(self) -> ConfigResourceType:
        """kafka-python's name for ``type``."""
        return self.type

    def core(self) -> CoreConfigResource:
        """The core's resource (without ``configs``)."""
        return CoreConfigResource(self.type, self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CoreConfigResource):
            return NotImplemented
        return (self.type, self.name) == (other.type, other.name)

    def __hash__(self) -> int:
        return hash(self.core())

    def __repr__(self) -> str:
        return f"ConfigResource({self.type.name}, {self.name!r}, configs={self.configs!r})"


def _resource_type(value: object) -> ConfigResourceType:
    if isinstance(value, ConfigResourceType):
        return value
    if isinstance(value, str) and value.upper() in ConfigResourceType.__members__:
        return ConfigResourceType[value.upper()]
    names = ", ".join(ConfigResourceType.__members__)
    raise TypeError(
        f"ConfigResource.resource_type: expected a ConfigResourceType or one of "
        f"{names}, got {value!r}"
    )


# -- the surface ---------------------------------------------------------------------
class AdminSurface:
    """Options, life and the loop-side half of every call; see the module docstring."""

    _NAME = "AdminClient"  # the public class name, for messages

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        """Options as ``ClientConfig`` + ``AdminConfig`` (split by ``kafkacore.options``),
        plus ``ssl_server_hostname`` and ``rng``."""
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            role=Role.ADMIN,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        admin = self._parts.options.admin
        assert admin is not None, "Role.ADMIN builds an AdminConfig"
        self.config: AdminConfig = admin
        self.client_config: ClientConfig = self._parts.config
        self._router = AdminRouter()
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver."""
        raise NotImplementedError

    def _build_core(self, now: float) -> AdminCore:
        parts = self._parts
        return AdminCore(self.config, now=now, rng=parts.rng, client_config=parts.config)

    # -- plans -------------------------------------------------------------------
    def _plan(self, name: str, timeout: float | None, steps: Generator[Command, Any, T]) -> Plan[T]:
        return Plan(f"{self._NAME}.{name}", _check_timeout(f"{self._NAME}.{name}", timeout), steps)

    def _one(
        self,
        name: str,
        timeout: float | None,
        command: Callable[[AdminCore, float, int | None], Operation[T]],
    ) -> Plan[T]:
        """A plan of one command whose value is the call's result."""

        def steps() -> Generator[Command, Any, T]:
            value: T = yield command
            return value

        return self._plan(name, timeout, steps())

    def _seconds(self, name: str, timeout: float | None, timeout_ms: int | None) -> float | None:
        """A call's bound from kafkacore's ``timeout`` (s) or kafka-python's ``timeout_ms``."""
        if timeout_ms is None:
            return timeout
        what = f"{self._NAME}.{name}"
        if timeout is not None:
            raise ValueError(f"{what}: give timeout (seconds) or timeout_ms, not both")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 1:
            raise ValueError(f"{what}: timeout_ms must be an int of 1 or more, got {timeout_ms!r}")
        return timeout_ms / 1000

    def _unsupported(self, name: str, argument: str, value: object, why: str) -> None:
        """Refuse a kafka-python argument kafkacore does not support (unless left out)."""
        if value is not None:
            raise TypeError(
                f"{self._NAME}.{name}: the kafka-python argument {argument}={value!r} is not "
                f"supported ({why}); leave it out"
            )

    # -- the loop-side half of every command ----------------------------------------
    def _issue(
        self,
        core: AdminCore,
        command: Command,
        deadline: float | None,
        plan: Plan[Any],
        done: Completion,
        now: float,
    ) -> None:
        """On the loop: run ``command`` with what is left of the plan's deadline."""
        ms = None
        if deadline is not None:
            ms = math.floor((deadline - now) * 1000)
            if ms < 1:
                raise KafkaTimeoutError(f"{plan.what}: not finished within {plan.timeout} s")
        self._router.expect(command(core, now, ms), done)

    def _backstop(self, deadline: float | None, now: float) -> float:
        """How long an idiom waits for one operation before giving up on the core."""
        left = self.config.default_api_timeout_ms / 1000 if deadline is None else deadline - now
        return max(left, 0.0) + 1.0


def _check_timeout(what: str, timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise TypeError(f"{what}: timeout must be a number of seconds, got {timeout!r}")
    if not timeout > 0 or math.isinf(timeout):
        raise ValueError(f"{what}: timeout must be a finite number of seconds > 0, got {timeout}")
    return float(timeout)
