"""Hand-written generator input: where the client sends each request.

The schemas say nothing about routing, so this table is the one place that
does. The kinds (``KINDS``, emitted as ``kafkacore.protocol.enums.Routing``)
are described below; every API whose listeners lack "broker" must be
INTERNAL (the generator checks it).
"""

from __future__ import annotations

#: Routing kind -> what it means (the order is the order of the generated enum).
KINDS: dict[str, str] = {
    "CONNECTION": "Part of setting up a connection: ApiVersions, SaslHandshake, SaslAuthenticate.",
    "ANY_NODE": "Any broker will do; the client picks the least loaded one.",
    "NODE": (
        "A specific broker chosen by the caller (its log dirs, or a fan-out to every "
        "broker such as ListGroups / ListTransactions)."
    ),
    "PARTITION_LEADER": "The leader of the partition(s) in the request.",
    "GROUP_COORDINATOR": "The group coordinator, found with FindCoordinator (key type GROUP).",
    "TXN_COORDINATOR": "The transaction coordinator, found with FindCoordinator (TRANSACTION).",
    "CONTROLLER": (
        "The controller id from Metadata/DescribeCluster, as the Java admin client routes "
        "it; in KRaft a broker that forwards to the active controller (KIP-590), so any "
        "broker works as a fallback."
    ),
    "INTERNAL": "Broker/controller-internal; a client never sends it.",
}

ROUTING: dict[str, str] = {
    "Produce": "PARTITION_LEADER",
    "Fetch": "PARTITION_LEADER",
    "ListOffsets": "PARTITION_LEADER",
    "Metadata": "ANY_NODE",
    "OffsetCommit": "GROUP_COORDINATOR",
    "OffsetFetch": "GROUP_COORDINATOR",
    "FindCoordinator": "ANY_NODE",
    "JoinGroup": "GROUP_COORDINATOR",
    "Heartbeat": "GROUP_COORDINATOR",
    "LeaveGroup": "GROUP_COORDINATOR",
    "SyncGroup": "GROUP_COORDINATOR",
    "DescribeGroups": "GROUP_COORDINATOR",
    "ListGroups": "NODE",
    "SaslHandshake": "CONNECTION",
    "ApiVersions": "CONNECTION",
    "CreateTopics": "CONTROLLER",
    "DeleteTopics": "CONTROLLER",
    "DeleteRecords": "PARTITION_LEADER",
    # Transactional producers ask their transaction coordinator; an
    # idempotent-only producer may send it to any broker.
    "InitProducerId": "TXN_COORDINATOR",
    "OffsetForLeaderEpoch": "PARTITION_LEADER",
    "AddPartitionsToTxn": "TXN_COORDINATOR",
    "AddOffsetsToTxn": "TXN_COORDINATOR",
    "EndTxn": "TXN_COORDINATOR",
    # Sent by transaction coordinators to partition leaders (broker to broker).
    "WriteTxnMarkers": "INTERNAL",
    "TxnOffsetCommit": "GROUP_COORDINATOR",
    "DescribeAcls": "ANY_NODE",
    "CreateAcls": "ANY_NODE",
    "DeleteAcls": "ANY_NODE",
    # Broker-scoped config resources go to that broker (NODE); topic ones anywhere.
    "DescribeConfigs": "ANY_NODE",
    "AlterConfigs": "ANY_NODE",
    "AlterReplicaLogDirs": "NODE",
    "DescribeLogDirs": "NODE",
    "SaslAuthenticate": "CONNECTION",
    "CreatePartitions": "CONTROLLER",
    "CreateDelegationToken": "ANY_NODE",
    "RenewDelegationToken": "ANY_NODE",
    "ExpireDelegationToken": "ANY_NODE",
    "DescribeDelegationToken": "ANY_NODE",
    "DeleteGroups": "GROUP_COORDINATOR",
    "ElectLeaders": "CONTROLLER",
    "IncrementalAlterConfigs": "ANY_NODE",
    "AlterPartitionReassignments": "CONTROLLER",
    "ListPartitionReassignments": "CONTROLLER",
    "OffsetDelete": "GROUP_COORDINATOR",
    "DescribeClientQuotas": "ANY_NODE",
    "AlterClientQuotas": "ANY_NODE",
    "DescribeUserScramCredentials": "ANY_NODE",
    "AlterUserScramCredentials": "ANY_NODE",
    "Vote": "INTERNAL",
    "BeginQuorumEpoch": "INTERNAL",
    "EndQuorumEpoch": "INTERNAL",
    "DescribeQuorum": "ANY_NODE",
    "AlterPartition": "INTERNAL",
    "UpdateFeatures": "CONTROLLER",
    "Envelope": "INTERNAL",
    "FetchSnapshot": "INTERNAL",
    "DescribeCluster": "ANY_NODE",
    "DescribeProducers": "PARTITION_LEADER",
    "BrokerRegistration": "INTERNAL",
    "BrokerHeartbeat": "INTERNAL",
    "UnregisterBroker": "ANY_NODE",
    "DescribeTransactions": "TXN_COORDINATOR",
    "ListTransactions": "NODE",
    "AllocateProducerIds": "INTERNAL",
    "ConsumerGroupHeartbeat": "GROUP_COORDINATOR",
    "ConsumerGroupDescribe": "GROUP_COORDINATOR",
    "ControllerRegistration": "INTERNAL",
    "GetTelemetrySubscriptions": "ANY_NODE",
    "PushTelemetry": "ANY_NODE",
    "AssignReplicasToDirs": "INTERNAL",
    "ListConfigResources": "ANY_NODE",
    "DescribeTopicPartitions": "ANY_NODE",
    "ShareGroupHeartbeat": "GROUP_COORDINATOR",
    "ShareGroupDescribe": "GROUP_COORDINATOR",
    "ShareFetch": "PARTITION_LEADER",
    "ShareAcknowledge": "PARTITION_LEADER",
    "AddRaftVoter": "ANY_NODE",
    "RemoveRaftVoter": "ANY_NODE",
    "UpdateRaftVoter": "INTERNAL",
    # Share-group state lives with the share coordinator; only brokers call it.
    "InitializeShareGroupState": "INTERNAL",
    "ReadShareGroupState": "INTERNAL",
    "WriteShareGroupState": "INTERNAL",
    "DeleteShareGroupState": "INTERNAL",
    "ReadShareGroupStateSummary": "INTERNAL",
    "StreamsGroupHeartbeat": "GROUP_COORDINATOR",
    "StreamsGroupDescribe": "GROUP_COORDINATOR",
    "DescribeShareGroupOffsets": "GROUP_COORDINATOR",
    "AlterShareGroupOffsets": "GROUP_COORDINATOR",
    "DeleteShareGroupOffsets": "GROUP_COORDINATOR",
}
