"""kafka-python's and aiokafka's error names, bound to the errors kafkacore raises.

Code written against kafka-python 3 or aiokafka 0.14 catches errors by their
names (``from kafka.errors import CommitFailedError``). Pointed here (see
``docs/compat.md``: ``kafka.errors`` and ``aiokafka.errors`` become
``kafkacore.compat.kafka.errors`` and ``kafkacore.compat.aiokafka.errors``,
both this module), every such name is a class kafkacore itself raises, or a
base of those, so each ``except`` clause catches what it caught before:

* a broker error code: the generated class of that code (the names the peers
  share with kafkacore, and the peers' older spellings of the same code, such
  as ``NotLeaderForPartitionError`` for ``NOT_LEADER_OR_FOLLOWER``). Each has
  ``errno`` (= ``code``), ``retriable`` and ``invalid_metadata``, as the
  peers' classes do;
* a base: ``KafkaError``, ``BrokerResponseError`` (:class:`BrokerError`),
  ``RetriableError``, ``InvalidMetadataError``, ``AuthorizationError``;
* a client condition: kafkacore's own class for it (``KafkaTimeoutError``,
  ``CommitFailedError``, ``NoOffsetForPartitionError``, ``ConsumerStoppedError``
  = :class:`~kafkacore.consumer.ConsumerClosedError`, ...);
* a misuse by the caller (``IllegalStateError``, ``IllegalArgumentError``,
  ``IllegalOperation``): :class:`~kafkacore.errors.LocalProtocolError`, which
  every check of a call's arguments and of the client's state raises;
* a condition kafkacore never meets (``QuotaViolationError``: no client-side
  quotas; ``TooManyInFlightRequests``: requests over the in-flight limit
  wait; ``UnsupportedCodecError``: every codec is built in;
  ``UnknownBrokerIdError``): a class of its own here, so the name imports,
  that nothing raises.

Where a name means something else in kafkacore than in a peer, the table in
``docs/compat.md`` says so. ``tests/compat/test_errors.py`` checks every
error name both peers export against this module: each exists, and each that
carries a broker code here carries the same code.
"""

from __future__ import annotations

from kafkacore.consumer import (
    CommitFailedError,
    ConsumerClosedError,
    LogTruncationError,
    NoOffsetForPartitionError,
)
from kafkacore.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerError,
    ConfigError,
    InvalidMetadataError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    RemoteProtocolError,
    RequestCancelled,
    RetriableError,
)
from kafkacore.producer.errors import (
    ProducerClosedError,
    ProducerFencedError,
    RecordTooLargeError,
    TransactionAbortedError,
)
from kafkacore.protocol import error_codes as codes
from kafkacore.protocol.error_codes import (
    BrokerIdNotRegisteredError,
    BrokerNotAvailableError,
    ClusterAuthorizationFailedError,
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    DelegationTokenAuthDisabledError,
    DelegationTokenAuthorizationFailedError,
    DelegationTokenExpiredError,
    DelegationTokenNotFoundError,
    DelegationTokenOwnerMismatchError,
    DelegationTokenRequestNotAllowedError,
    DuplicateBrokerRegistrationError,
    DuplicateResourceError,
    DuplicateSequenceNumberError,
    DuplicateVoterError,
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    FeatureUpdateFailedError,
    FencedInstanceIdError,
    FencedLeaderEpochError,
    FencedMemberEpochError,
    FencedStateEpochError,
    FetchSessionIdNotFoundError,
    FetchSessionTopicIdError,
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    GroupSubscribedToTopicError,
    IllegalGenerationError,
    IllegalSaslStateError,
    InconsistentClusterIdError,
    InconsistentGroupProtocolError,
    InconsistentTopicIdError,
    InconsistentVoterSetError,
    IneligibleReplicaError,
    InvalidCommitOffsetSizeError,
    InvalidFetchSessionEpochError,
    InvalidGroupIdError,
    InvalidPartitionsError,
    InvalidPrincipalTypeError,
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidRecordError,
    InvalidRecordStateError,
    InvalidRegistrationError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    InvalidSessionTimeoutError,
    InvalidShareSessionEpochError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    InvalidUpdateVersionError,
    InvalidVoterKeyError,
    KafkaStorageError,
    LeaderNotAvailableError,
    ListenerNotFoundError,
    LogDirNotFoundError,
    MemberIdRequiredError,
    MismatchedEndpointTypeError,
    NewLeaderElectedError,
    NonEmptyGroupError,
    NoReassignmentInProgressError,
    NotControllerError,
    NotCoordinatorError,
    NotEnoughReplicasAfterAppendError,
    NotEnoughReplicasError,
    OffsetMetadataTooLargeError,
    OffsetMovedToTieredStorageError,
    OffsetNotAvailableError,
    OffsetOutOfRangeError,
    OperationNotAttemptedError,
    OutOfOrderSequenceNumberError,
    PolicyViolationError,
    PositionOutOfRangeError,
    PreferredLeaderNotAvailableError,
    PrincipalDeserializationFailureError,
    ReassignmentInProgressError,
    RebalanceInProgressError,
    RecordListTooLargeError,
    ReplicaNotAvailableError,
    RequestTimedOutError,
    ResourceNotFoundError,
    SaslAuthenticationFailedError,
    SecurityDisabledError,
    ShareSessionNotFoundError,
    SnapshotNotFoundError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
    StaleMemberEpochError,
    TelemetryTooLargeError,
    ThrottlingQuotaExceededError,
    TopicAlreadyExistsError,
    TopicAuthorizationFailedError,
    TopicDeletionDisabledError,
    TransactionAbortableError,
    TransactionalIdAuthorizationFailedError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorFencedError,
    UnacceptableCredentialError,
    UnknownControllerIdError,
    UnknownLeaderEpochError,
    UnknownMemberIdError,
    UnknownProducerIdError,
    UnknownSubscriptionIdError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnreleasedInstanceIdError,
    UnstableOffsetCommitError,
    UnsupportedAssignorError,
    UnsupportedCompressionTypeError,
    UnsupportedEndpointTypeError,
    UnsupportedForMessageFormatError,
    UnsupportedSaslMechanismError,
    UnsupportedVersionError,
    VoterNotFoundError,
)
from kafkacore.records import CorruptRecordError
from kafkacore.transports._admin_acls import NoError

__all__ = [
    "AuthenticationError",
    "AuthenticationFailedError",
    "AuthenticationMethodNotSupported",
    "AuthorizationError",
    "BrokerError",
    "BrokerIdNotRegisteredError",
    "BrokerNotAvailableError",
    "BrokerResponseError",
    "Cancelled",
    "ClusterAuthorizationFailedError",
    "CommitFailedError",
    "ConcurrentTransactions",
    "ConcurrentTransactionsError",
    "ConfigError",
    "ConsumerClosedError",
    "ConsumerStoppedError",
    "CoordinatorLoadInProgressError",
    "CoordinatorNotAvailableError",
    "CorrelationIdError",
    "CorruptRecordError",
    "CorruptRecordException",
    "DelegationTokenAuthDisabled",
    "DelegationTokenAuthDisabledError",
    "DelegationTokenAuthorizationFailed",
    "DelegationTokenAuthorizationFailedError",
    "DelegationTokenExpired",
    "DelegationTokenExpiredError",
    "DelegationTokenNotFound",
    "DelegationTokenNotFoundError",
    "DelegationTokenOwnerMismatch",
    "DelegationTokenOwnerMismatchError",
    "DelegationTokenRequestNotAllowed",
    "DelegationTokenRequestNotAllowedError",
    "DuplicateBrokerRegistrationError",
    "DuplicateResourceError",
    "DuplicateSequenceNumber",
    "DuplicateSequenceNumberError",
    "DuplicateVoterError",
    "ElectionNotNeededError",
    "EligibleLeadersNotAvailableError",
    "FeatureUpdateFailedError",
    "FencedInstanceIdError",
    "FencedLeaderEpochError",
    "FencedMemberEpochError",
    "FencedStateEpochError",
    "FetchSessionIdNotFound",
    "FetchSessionIdNotFoundError",
    "FetchSessionTopicIdError",
    "GroupAuthorizationFailedError",
    "GroupCoordinatorNotAvailableError",
    "GroupIdNotFound",
    "GroupIdNotFoundError",
    "GroupLoadInProgressError",
    "GroupMaxSizeReachedError",
    "GroupSubscribedToTopicError",
    "IllegalArgumentError",
    "IllegalGenerationError",
    "IllegalOperation",
    "IllegalSaslStateError",
    "IllegalStateError",
    "IncompatibleBrokerVersion",
    "InconsistentClusterIdError",
    "InconsistentGroupProtocolError",
    "InconsistentTopicIdError",
    "InconsistentVoterSetError",
    "IneligibleReplicaError",
    "InvalidCommitOffsetSizeError",
    "InvalidConfigurationError",
    "InvalidFetchRequestError",
    "InvalidFetchSessionEpoch",
    "InvalidFetchSessionEpochError",
    "InvalidGroupIdError",
    "InvalidMessageError",
    "InvalidMetadataError",
    "InvalidPartitionsError",
    "InvalidPrincipalType",
    "InvalidPrincipalTypeError",
    "InvalidProducerEpoch",
    "InvalidProducerEpochError",
    "InvalidProducerIdMapping",
    "InvalidProducerIdMappingError",
    "InvalidReceiveError",
    "InvalidRecordError",
    "InvalidRecordStateError",
    "InvalidRegistrationError",
    "InvalidReplicationAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidRequiredAcksError",
    "InvalidSessionTimeoutError",
    "InvalidShareSessionEpochError",
    "InvalidTimestampError",
    "InvalidTopicError",
    "InvalidTransactionTimeout",
    "InvalidTransactionTimeoutError",
    "InvalidTxnState",
    "InvalidTxnStateError",
    "InvalidUpdateVersionError",
    "InvalidVoterKeyError",
    "KafkaConfigurationError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaProtocolError",
    "KafkaStorageError",
    "KafkaTimeoutError",
    "KafkaUnavailableError",
    "LeaderNotAvailableError",
    "ListenerNotFound",
    "ListenerNotFoundError",
    "LocalProtocolError",
    "LogDirNotFound",
    "LogDirNotFoundError",
    "LogTruncationError",
    "MemberIdRequired",
    "MemberIdRequiredError",
    "MessageSizeTooLargeError",
    "MetadataEmptyBrokerList",
    "MismatchedEndpointTypeError",
    "NetworkExceptionError",
    "NewLeaderElectedError",
    "NoBrokersAvailable",
    "NoError",
    "NoOffsetForPartitionError",
    "NoReassignmentInProgressError",
    "NodeNotReadyError",
    "NonEmptyGroup",
    "NonEmptyGroupError",
    "NotControllerError",
    "NotCoordinatorError",
    "NotCoordinatorForGroupError",
    "NotEnoughReplicasAfterAppendError",
    "NotEnoughReplicasError",
    "NotLeaderForPartitionError",
    "OffsetMetadataTooLargeError",
    "OffsetMovedToTieredStorageError",
    "OffsetNotAvailableError",
    "OffsetOutOfRangeError",
    "OperationNotAttempted",
    "OperationNotAttemptedError",
    "OutOfOrderSequenceNumber",
    "OutOfOrderSequenceNumberError",
    "PolicyViolationError",
    "PositionOutOfRangeError",
    "PreferredLeaderNotAvailableError",
    "PrincipalDeserializationFailureError",
    "ProducerClosed",
    "ProducerClosedError",
    "ProducerFenced",
    "ProducerFencedError",
    "QuotaViolationError",
    "ReassignmentInProgress",
    "ReassignmentInProgressError",
    "RebalanceInProgressError",
    "RecordListTooLargeError",
    "RecordTooLargeError",
    "RemoteProtocolError",
    "ReplicaNotAvailableError",
    "RequestCancelled",
    "RequestTimedOutError",
    "ResourceNotFoundError",
    "RetriableError",
    "SaslAuthenticationFailed",
    "SaslAuthenticationFailedError",
    "SecurityDisabled",
    "SecurityDisabledError",
    "ShareSessionNotFoundError",
    "SnapshotNotFoundError",
    "StaleBrokerEpochError",
    "StaleControllerEpochError",
    "StaleLeaderEpochCodeError",
    "StaleMemberEpochError",
    "StaleMetadata",
    "TelemetryTooLargeError",
    "ThrottlingQuotaExceededError",
    "TooManyInFlightRequests",
    "TopicAlreadyExistsError",
    "TopicAuthorizationFailedError",
    "TopicDeletionDisabledError",
    "TransactionAbortableError",
    "TransactionAbortedError",
    "TransactionCoordinatorFenced",
    "TransactionCoordinatorFencedError",
    "TransactionalIdAuthorizationFailed",
    "TransactionalIdAuthorizationFailedError",
    "TransactionalIdNotFoundError",
    "UnacceptableCredentialError",
    "UnknownBrokerIdError",
    "UnknownControllerIdError",
    "UnknownError",
    "UnknownLeaderEpochError",
    "UnknownMemberIdError",
    "UnknownProducerId",
    "UnknownProducerIdError",
    "UnknownSubscriptionIdError",
    "UnknownTopicIdError",
    "UnknownTopicOrPartitionError",
    "UnrecognizedBrokerVersion",
    "UnreleasedInstanceIdError",
    "UnstableOffsetCommitError",
    "UnsupportedAssignorError",
    "UnsupportedCodecError",
    "UnsupportedCompressionTypeError",
    "UnsupportedEndpointTypeError",
    "UnsupportedForMessageFormatError",
    "UnsupportedSaslMechanismError",
    "UnsupportedVersionError",
    "VoterNotFoundError",
]

# -- the peers' other spellings of broker codes -------------------------------
ConcurrentTransactions = codes.ConcurrentTransactionsError  # code 51
DelegationTokenAuthDisabled = codes.DelegationTokenAuthDisabledError  # code 61
DelegationTokenAuthorizationFailed = codes.DelegationTokenAuthorizationFailedError  # code 65
DelegationTokenExpired = codes.DelegationTokenExpiredError  # code 66
DelegationTokenNotFound = codes.DelegationTokenNotFoundError  # code 62
DelegationTokenOwnerMismatch = codes.DelegationTokenOwnerMismatchError  # code 63
DelegationTokenRequestNotAllowed = codes.DelegationTokenRequestNotAllowedError  # code 64
DuplicateSequenceNumber = codes.DuplicateSequenceNumberError  # code 46
FetchSessionIdNotFound = codes.FetchSessionIdNotFoundError  # code 70
GroupCoordinatorNotAvailableError = codes.CoordinatorNotAvailableError  # code 15
GroupIdNotFound = codes.GroupIdNotFoundError  # code 69
GroupLoadInProgressError = codes.CoordinatorLoadInProgressError  # code 14
IncompatibleBrokerVersion = codes.UnsupportedVersionError  # code 35
InvalidConfigurationError = codes.InvalidConfigError  # code 40
InvalidFetchRequestError = codes.InvalidFetchSizeError  # code 4
InvalidFetchSessionEpoch = codes.InvalidFetchSessionEpochError  # code 71
InvalidPrincipalType = codes.InvalidPrincipalTypeError  # code 67
InvalidProducerEpoch = codes.InvalidProducerEpochError  # code 47
InvalidProducerIdMapping = codes.InvalidProducerIdMappingError  # code 49
InvalidReplicationAssignmentError = codes.InvalidReplicaAssignmentError  # code 39
InvalidTransactionTimeout = codes.InvalidTransactionTimeoutError  # code 50
InvalidTxnState = codes.InvalidTxnStateError  # code 48
ListenerNotFound = codes.ListenerNotFoundError  # code 72
LogDirNotFound = codes.LogDirNotFoundError  # code 57
MemberIdRequired = codes.MemberIdRequiredError  # code 79
MessageSizeTooLargeError = codes.MessageTooLargeError  # code 10
NetworkExceptionError = codes.NetworkError  # code 13
NonEmptyGroup = codes.NonEmptyGroupError  # code 68
NotCoordinatorForGroupError = codes.NotCoordinatorError  # code 16
NotLeaderForPartitionError = codes.NotLeaderOrFollowerError  # code 6
OperationNotAttempted = codes.OperationNotAttemptedError  # code 55
OutOfOrderSequenceNumber = codes.OutOfOrderSequenceNumberError  # code 45
ReassignmentInProgress = codes.ReassignmentInProgressError  # code 60
SaslAuthenticationFailed = codes.SaslAuthenticationFailedError  # code 58
SecurityDisabled = codes.SecurityDisabledError  # code 54
StaleLeaderEpochCodeError = codes.NetworkError  # code 13
TransactionCoordinatorFenced = codes.TransactionCoordinatorFencedError  # code 52
TransactionalIdAuthorizationFailed = codes.TransactionalIdAuthorizationFailedError  # code 53
UnknownError = codes.UnknownServerError  # code -1
UnknownProducerId = codes.UnknownProducerIdError  # code 59

# -- bases and client conditions ----------------------------------------------
BrokerResponseError = BrokerError
KafkaConfigurationError = ConfigError
KafkaProtocolError = RemoteProtocolError
CorrelationIdError = RemoteProtocolError
InvalidReceiveError = RemoteProtocolError
StaleMetadata = InvalidMetadataError
NodeNotReadyError = KafkaConnectionError
KafkaUnavailableError = NoBrokersAvailable
MetadataEmptyBrokerList = NoBrokersAvailable
AuthenticationFailedError = AuthenticationError
AuthenticationMethodNotSupported = codes.UnsupportedSaslMechanismError
Cancelled = RequestCancelled
ConsumerStoppedError = ConsumerClosedError
ProducerClosed = ProducerClosedError
ProducerFenced = ProducerFencedError
#: A checksum mismatch found while reading records (kafka-python and aiokafka
#: raise these names for it); the broker's CORRUPT_MESSAGE answer to a produce
#: is :class:`~kafkacore.protocol.error_codes.CorruptMessageError`.
CorruptRecordException = CorruptRecordError
InvalidMessageError = CorruptRecordError

# -- misuse by the caller -------------------------------------------------------
IllegalStateError = LocalProtocolError
IllegalArgumentError = LocalProtocolError
IllegalOperation = LocalProtocolError


# -- conditions kafkacore never meets ------------------------------------------
class QuotaViolationError(KafkaError):
    """kafka-python's client-side metrics quota; kafkacore has none, so never raised."""


class TooManyInFlightRequests(RetriableError):
    """Never raised: a request over ``max_in_flight_requests_per_connection`` waits its turn."""


class UnsupportedCodecError(KafkaError):
    """Never raised: every codec (gzip, snappy, lz4, zstd) is a dependency of kafkacore."""


class UnknownBrokerIdError(KafkaError):
    """Never raised: kafkacore sends a request for a broker id as asked and
    reports what the cluster answers."""


class UnrecognizedBrokerVersion(KafkaError):
    """Never raised: kafkacore negotiates versions with ApiVersions and takes any
    ``api_version`` kafka-python takes (and ignores it)."""
