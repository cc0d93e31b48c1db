"""A scripted classic group coordinator for driving ClassicMember machines without sockets.

The coordinator follows the broker's rules closely enough for the members'
invariants to mean something: KIP-394 member ids, a join round that ends
when every known member has rejoined, the leader's SyncGroup assignment
handed to all, heartbeats answering REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION
/ UNKNOWN_MEMBER_ID, OffsetCommit fenced as the broker's classic group fences
it (unknown member, generation other than the current one, REBALANCE_IN_PROGRESS
while completing; accepted commits are kept in ``commits``), LeaveGroup and
session expiry (``expire``) starting a new round. Requests wait in
``inflight`` until the test delivers them, in any order it likes, or fails
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkacore.client._codec import our_version_range
from kafkacore.errors import KafkaConnectionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.join_group_response import JoinGroupResponseMember
from kafkacore.protocol.messages.offset_commit_response import (
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

Respond = Callable[[Any], None]


@dataclass
class Inflight:
    owner: int
    request: Any
    on_done: Callable[[Any, BaseException | None, float], None]


@dataclass
class _Member:
    protocols: list[tuple[str, bytes]]
    instance_id: str | None = None


@dataclass
class Coordinator:
    now: float = 0.0
    members: dict[str, _Member] = field(default_factory=dict)
    generation: int = 0
    state: str = "empty"  # empty | preparing | completing | stable
    leader: str = ""
    protocol: str | None = None
    issued: set[str] = field(default_factory=set)
    joins: dict[str, Respond] = field(default_factory=dict)
    syncs: dict[str, Respond] = field(default_factory=dict)
    assignments: dict[str, bytes] = field(default_factory=dict)
    inflight: list[Inflight] = field(default_factory=list)
    next_id: int = 0
    last_seen: dict[str, float] = field(default_factory=dict)
    session_s: float = 10.0
    #: Accepted OffsetCommits: (member id, generation, {(topic, partition)}, the
    #: member's assignment in that generation as SyncGroup handed it out).
    commits: list[tuple[str, int, frozenset[tuple[str, int]], bytes | None]] = field(
        default_factory=list
    )

    # -- the Requester each member gets ------------------------------------
    def requester(self, owner: int) -> SimRequester:
        return SimRequester(self, owner)

    def deliver(self, index: int) -> None:
        item = self.inflight.pop(index)

        def respond(resp: Any) -> None:
            item.on_done(resp, self.now)

        self.handle(item.request, respond)

    def fail(self, index: int) -> None:
        item = self.inflight.pop(index)
        item.on_done(KafkaConnectionError("connection lost (simulated)"), self.now)

    def not_coordinator(self, index: int) -> None:
        item = self.inflight.pop(index)
        req = item.request
        code = 16
        resp: Any
        if isinstance(req, m.JoinGroupRequest):
            resp = m.JoinGroupResponse(error_code=code)
        elif isinstance(req, m.SyncGroupRequest):
            resp = m.SyncGroupResponse(error_code=code)
        elif isinstance(req, m.HeartbeatRequest):
            resp = m.HeartbeatResponse(error_code=code)
        elif isinstance(req, m.OffsetCommitRequest):
            resp = _commit_response(req, code)
        else:
            resp = m.LeaveGroupResponse(error_code=code)
        item.on_done(resp, self.now)

    # -- the protocol ---------------------------------------------------------
    def handle(self, req: Any, respond: Respond) -> None:
        mid = getattr(req, "member_id", "")
        if mid:
            self.last_seen[mid] = self.now
        if isinstance(req, m.JoinGroupRequest):
            self._join(req, respond)
        elif isinstance(req, m.SyncGroupRequest):
            self._sync(req, respond)
        elif isinstance(req, m.HeartbeatRequest):
            respond(m.HeartbeatResponse(error_code=self._heartbeat_code(req)))
        elif isinstance(req, m.OffsetCommitRequest):
            code = self._commit_code(req)
            if code == 0:
                parts = frozenset(
                    (t.name, p.partition_index) for t in req.topics for p in t.partitions
                )
                generation = req.generation_id_or_member_epoch
                self.commits.append((mid, generation, parts, self.assignments.get(mid)))
            respond(_commit_response(req, code))
        elif isinstance(req, m.LeaveGroupRequest):
            for ident in req.members:
                self._remove(ident.member_id)
            respond(m.LeaveGroupResponse())
        else:
            raise AssertionError(f"coordinator: unexpected {type(req).__name__}")

    def _join(self, req: Any, respond: Respond) -> None:
        mid = req.member_id
        if not mid:
            self.next_id += 1
            new = f"member-{self.next_id}"
            self.issued.add(new)
            respond(m.JoinGroupResponse(error_code=79, member_id=new))
            return
        if mid not in self.members and mid not in self.issued:
            respond(m.JoinGroupResponse(error_code=25))
            return
        self.issued.discard(mid)
        self.members[mid] = _Member(
            protocols=[(p.name, p.metadata) for p in req.protocols],
            instance_id=req.group_instance_id,
        )
        old = self.joins.pop(mid, None)
        if old is not None:
            old(m.JoinGroupResponse(error_code=27))
        self.joins[mid] = respond
        self._start_rebalance()
        self._try_complete_join()

    def _start_rebalance(self) -> None:
        if self.state in ("stable", "completing", "empty"):
            self.state = "preparing"
            syncs, self.syncs = self.syncs, {}
            for r in syncs.values():
                r(m.SyncGroupResponse(error_code=27))

    def _try_complete_join(self) -> None:
        if self.state != "preparing" or not self.members:
            if not self.members:
                self.state = "empty"
            return
        if set(self.joins) != set(self.members):
            return
        self.generation += 1
        self.state = "completing"
        self.assignments = {}
        ids = sorted(self.members)
        self.leader = ids[0]
        common = None
        for info in self.members.values():
            names = [n for n, _ in info.protocols]
            common = names if common is None else [n for n in common if n in names]
        assert common, "members share no protocol"
        self.protocol = common[0]
        joins, self.joins = self.joins, {}
        for mid, r in joins.items():
            members = []
            if mid == self.leader:
                for other in ids:
                    meta = dict(self.members[other].protocols)[self.protocol]
                    members.append(
                        JoinGroupResponseMember(
                            member_id=other,
                            group_instance_id=self.members[other].instance_id,
                            metadata=meta,
                        )
                    )
            r(
                m.JoinGroupResponse(
                    generation_id=self.generation,
                    protocol_type="consumer",
                    protocol_name=self.protocol,
                    leader=self.leader,
                    member_id=mid,
                    members=members,
                )
            )

    def _sync(self, req: Any, respond: Respond) -> None:
        mid = req.member_id
        if mid not in self.members:
            respond(m.SyncGroupResponse(error_code=25))
            return
        if req.generation_id != self.generation:
            respond(m.SyncGroupResponse(error_code=22))
            return
        if self.state == "preparing":
            respond(m.SyncGroupResponse(error_code=27))
            return
        if self.state == "stable":
            respond(m.SyncGroupResponse(assignment=self.assignments.get(mid, b"")))
            return
        self.syncs[mid] = respond
        if mid == self.leader:
            self.assignments = {a.member_id: a.assignment for a in req.assignments}
            self.state = "stable"
            syncs, self.syncs = self.syncs, {}
            for other, r in syncs.items():
                r(m.SyncGroupResponse(assignment=self.assignments.get(other, b"")))

    def _heartbeat_code(self, req: Any) -> int:
        if req.member_id not in self.members:
            return 25
        if self.state == "preparing":
            return 27
        if req.generation_id != self.generation:
            return 22
        return 0

    def _commit_code(self, req: Any) -> int:
        """The broker's classic-group OffsetCommit checks, in its order."""
        generation = req.generation_id_or_member_epoch
        if generation < 0 and not self.members:
            return 0  # a commit from outside the group, into an empty group
        if generation >= 0 or req.member_id:
            if req.member_id not in self.members:
                return 25
            if generation != self.generation:
                return 22
        elif self.members:
            return 25
        if self.state == "completing":
            return 27
        return 0

    def _remove(self, mid: str) -> None:
        if self.members.pop(mid, None) is None:
            return
        r = self.joins.pop(mid, None)
        if r is not None:
            r(m.JoinGroupResponse(error_code=25))
        self.syncs.pop(mid, None)
        self._start_rebalance()
        self._try_complete_join()

    def tick(self, now: float) -> None:
        """Time passed: expire members silent for a session (parked joins count as alive)."""
        self.now = now
        for mid in list(self.members):
            if mid in self.joins or mid in self.syncs:
                continue
            if now - self.last_seen.get(mid, now) > self.session_s:
                self._remove(mid)

    def expire(self, mid: str) -> None:
        """The member's session ran out on the coordinator's side."""
        self._remove(mid)


class SimRequester:
    def __init__(self, coord: Coordinator, owner: int) -> None:
        self.coord = coord
        self.owner = owner
        #: The Requester's "who answered" (the simulation names no broker).
        self.answered_by: int | None = None

    def request(
        self,
        request: Any,
        on_done: Callable[[Any, float], None],
        *,
        target: Any,
        now: float,
        lane: str = "default",
        timeout_ms: int | None = None,
        max_version: int | None = None,
        build: Callable[[int], Any] | None = None,
    ) -> None:
        if build is not None:
            # The scripted coordinator speaks every version we do: build the newest.
            range_ = our_version_range(request.API_KEY)
            assert range_ is not None
            request = build(range_[1])
        self.coord.inflight.append(Inflight(self.owner, request, on_done))


def _commit_response(req: Any, code: int) -> Any:
    return m.OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in req.topics
        ]
    )
