import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PoolerType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    UNKNOWN: _ClassVar[PoolerType]
    PRIMARY: _ClassVar[PoolerType]
    REPLICA: _ClassVar[PoolerType]
    DRAINED: _ClassVar[PoolerType]

class PoolerServingStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVING: _ClassVar[PoolerServingStatus]
    NOT_SERVING: _ClassVar[PoolerServingStatus]
    BACKUP: _ClassVar[PoolerServingStatus]
    RESTORE: _ClassVar[PoolerServingStatus]

class QuorumType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUORUM_TYPE_UNKNOWN: _ClassVar[QuorumType]
    QUORUM_TYPE_AT_LEAST_N: _ClassVar[QuorumType]
    QUORUM_TYPE_MULTI_CELL_AT_LEAST_N: _ClassVar[QuorumType]

class LeadershipSignal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LEADERSHIP_SIGNAL_UNKNOWN: _ClassVar[LeadershipSignal]
    LEADERSHIP_SIGNAL_ACTIVE: _ClassVar[LeadershipSignal]
    LEADERSHIP_SIGNAL_REQUESTING_DEMOTION: _ClassVar[LeadershipSignal]

class CohortEligibilitySignal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COHORT_ELIGIBILITY_SIGNAL_UNKNOWN: _ClassVar[CohortEligibilitySignal]
    COHORT_ELIGIBILITY_SIGNAL_ELIGIBLE: _ClassVar[CohortEligibilitySignal]
    COHORT_ELIGIBILITY_SIGNAL_INELIGIBLE: _ClassVar[CohortEligibilitySignal]
UNKNOWN: PoolerType
PRIMARY: PoolerType
REPLICA: PoolerType
DRAINED: PoolerType
SERVING: PoolerServingStatus
NOT_SERVING: PoolerServingStatus
BACKUP: PoolerServingStatus
RESTORE: PoolerServingStatus
QUORUM_TYPE_UNKNOWN: QuorumType
QUORUM_TYPE_AT_LEAST_N: QuorumType
QUORUM_TYPE_MULTI_CELL_AT_LEAST_N: QuorumType
LEADERSHIP_SIGNAL_UNKNOWN: LeadershipSignal
LEADERSHIP_SIGNAL_ACTIVE: LeadershipSignal
LEADERSHIP_SIGNAL_REQUESTING_DEMOTION: LeadershipSignal
COHORT_ELIGIBILITY_SIGNAL_UNKNOWN: CohortEligibilitySignal
COHORT_ELIGIBILITY_SIGNAL_ELIGIBLE: CohortEligibilitySignal
COHORT_ELIGIBILITY_SIGNAL_INELIGIBLE: CohortEligibilitySignal

class ID(_message.Message):
    __slots__ = ("component", "cell", "name")
    class ComponentType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[ID.ComponentType]
        MULTIPOOLER: _ClassVar[ID.ComponentType]
        MULTIGATEWAY: _ClassVar[ID.ComponentType]
        MULTIORCH: _ClassVar[ID.ComponentType]
    UNKNOWN: ID.ComponentType
    MULTIPOOLER: ID.ComponentType
    MULTIGATEWAY: ID.ComponentType
    MULTIORCH: ID.ComponentType
    COMPONENT_FIELD_NUMBER: _ClassVar[int]
    CELL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    component: ID.ComponentType
    cell: str
    name: str
    def __init__(self, component: _Optional[_Union[ID.ComponentType, str]] = ..., cell: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class KeyRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: bytes
    end: bytes
    def __init__(self, start: _Optional[bytes] = ..., end: _Optional[bytes] = ...) -> None: ...

class ShardKey(_message.Message):
    __slots__ = ("database", "table_group", "shard")
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    TABLE_GROUP_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    database: str
    table_group: str
    shard: str
    def __init__(self, database: _Optional[str] = ..., table_group: _Optional[str] = ..., shard: _Optional[str] = ...) -> None: ...

class MultiPooler(_message.Message):
    __slots__ = ("id", "shard_key", "key_range", "type", "serving_status", "hostname", "port_map", "pooler_dir", "pg_data_dir")
    class PortMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SHARD_KEY_FIELD_NUMBER: _ClassVar[int]
    KEY_RANGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SERVING_STATUS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORT_MAP_FIELD_NUMBER: _ClassVar[int]
    POOLER_DIR_FIELD_NUMBER: _ClassVar[int]
    PG_DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    id: ID
    shard_key: ShardKey
    key_range: KeyRange
    type: PoolerType
    serving_status: PoolerServingStatus
    hostname: str
    port_map: _containers.ScalarMap[str, int]
    pooler_dir: str
    pg_data_dir: str
    def __init__(self, id: _Optional[_Union[ID, _Mapping]] = ..., shard_key: _Optional[_Union[ShardKey, _Mapping]] = ..., key_range: _Optional[_Union[KeyRange, _Mapping]] = ..., type: _Optional[_Union[PoolerType, str]] = ..., serving_status: _Optional[_Union[PoolerServingStatus, str]] = ..., hostname: _Optional[str] = ..., port_map: _Optional[_Mapping[str, int]] = ..., pooler_dir: _Optional[str] = ..., pg_data_dir: _Optional[str] = ...) -> None: ...

class MultiOrch(_message.Message):
    __slots__ = ("id", "hostname", "port_map")
    class PortMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORT_MAP_FIELD_NUMBER: _ClassVar[int]
    id: ID
    hostname: str
    port_map: _containers.ScalarMap[str, int]
    def __init__(self, id: _Optional[_Union[ID, _Mapping]] = ..., hostname: _Optional[str] = ..., port_map: _Optional[_Mapping[str, int]] = ...) -> None: ...

class DurabilityPolicy(_message.Message):
    __slots__ = ("policy_name", "policy_version", "quorum_type", "required_count", "description")
    POLICY_NAME_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    QUORUM_TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    policy_name: str
    policy_version: int
    quorum_type: QuorumType
    required_count: int
    description: str
    def __init__(self, policy_name: _Optional[str] = ..., policy_version: _Optional[int] = ..., quorum_type: _Optional[_Union[QuorumType, str]] = ..., required_count: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class RuleNumber(_message.Message):
    __slots__ = ("coordinator_term", "leader_subterm")
    COORDINATOR_TERM_FIELD_NUMBER: _ClassVar[int]
    LEADER_SUBTERM_FIELD_NUMBER: _ClassVar[int]
    coordinator_term: int
    leader_subterm: int
    def __init__(self, coordinator_term: _Optional[int] = ..., leader_subterm: _Optional[int] = ...) -> None: ...

class ShardRule(_message.Message):
    __slots__ = ("rule_number", "leader_id", "cohort_members", "durability_policy", "coordinator_id", "creation_time")
    RULE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    COHORT_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIME_FIELD_NUMBER: _ClassVar[int]
    rule_number: RuleNumber
    leader_id: ID
    cohort_members: _containers.RepeatedCompositeFieldContainer[ID]
    durability_policy: DurabilityPolicy
    coordinator_id: ID
    creation_time: _timestamp_pb2.Timestamp
    def __init__(self, rule_number: _Optional[_Union[RuleNumber, _Mapping]] = ..., leader_id: _Optional[_Union[ID, _Mapping]] = ..., cohort_members: _Optional[_Iterable[_Union[ID, _Mapping]]] = ..., durability_policy: _Optional[_Union[DurabilityPolicy, _Mapping]] = ..., coordinator_id: _Optional[_Union[ID, _Mapping]] = ..., creation_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TermRevocation(_message.Message):
    __slots__ = ("revoked_below_term", "accepted_coordinator_id", "coordinator_initiated_at", "outgoing_rule")
    REVOKED_BELOW_TERM_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_INITIATED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_RULE_FIELD_NUMBER: _ClassVar[int]
    revoked_below_term: int
    accepted_coordinator_id: ID
    coordinator_initiated_at: _timestamp_pb2.Timestamp
    outgoing_rule: RuleNumber
    def __init__(self, revoked_below_term: _Optional[int] = ..., accepted_coordinator_id: _Optional[_Union[ID, _Mapping]] = ..., coordinator_initiated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outgoing_rule: _Optional[_Union[RuleNumber, _Mapping]] = ...) -> None: ...

class ExternallyCertifiedRevocation(_message.Message):
    __slots__ = ("term_revocation", "frozen_lsn")
    TERM_REVOCATION_FIELD_NUMBER: _ClassVar[int]
    FROZEN_LSN_FIELD_NUMBER: _ClassVar[int]
    term_revocation: TermRevocation
    frozen_lsn: str
    def __init__(self, term_revocation: _Optional[_Union[TermRevocation, _Mapping]] = ..., frozen_lsn: _Optional[str] = ...) -> None: ...

class PoolerPosition(_message.Message):
    __slots__ = ("rule", "lsn")
    RULE_FIELD_NUMBER: _ClassVar[int]
    LSN_FIELD_NUMBER: _ClassVar[int]
    rule: ShardRule
    lsn: str
    def __init__(self, rule: _Optional[_Union[ShardRule, _Mapping]] = ..., lsn: _Optional[str] = ...) -> None: ...

class PoolerAddress(_message.Message):
    __slots__ = ("id", "host", "postgres_port")
    ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_PORT_FIELD_NUMBER: _ClassVar[int]
    id: ID
    host: str
    postgres_port: int
    def __init__(self, id: _Optional[_Union[ID, _Mapping]] = ..., host: _Optional[str] = ..., postgres_port: _Optional[int] = ...) -> None: ...

class ReplicationPrimary(_message.Message):
    __slots__ = ("rule", "primary")
    RULE_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    rule: ShardRule
    primary: PoolerAddress
    def __init__(self, rule: _Optional[_Union[ShardRule, _Mapping]] = ..., primary: _Optional[_Union[PoolerAddress, _Mapping]] = ...) -> None: ...

class ConsensusStatus(_message.Message):
    __slots__ = ("term_revocation", "current_position", "replication_primary", "id")
    TERM_REVOCATION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_POSITION_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_PRIMARY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    term_revocation: TermRevocation
    current_position: PoolerPosition
    replication_primary: ReplicationPrimary
    id: ID
    def __init__(self, term_revocation: _Optional[_Union[TermRevocation, _Mapping]] = ..., current_position: _Optional[_Union[PoolerPosition, _Mapping]] = ..., replication_primary: _Optional[_Union[ReplicationPrimary, _Mapping]] = ..., id: _Optional[_Union[ID, _Mapping]] = ...) -> None: ...

class LeadershipStatus(_message.Message):
    __slots__ = ("leader_term", "signal")
    LEADER_TERM_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    leader_term: int
    signal: LeadershipSignal
    def __init__(self, leader_term: _Optional[int] = ..., signal: _Optional[_Union[LeadershipSignal, str]] = ...) -> None: ...

class CohortEligibilityStatus(_message.Message):
    __slots__ = ("signal",)
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    signal: CohortEligibilitySignal
    def __init__(self, signal: _Optional[_Union[CohortEligibilitySignal, str]] = ...) -> None: ...

class AvailabilityStatus(_message.Message):
    __slots__ = ("leadership_status", "cohort_eligibility_status")
    LEADERSHIP_STATUS_FIELD_NUMBER: _ClassVar[int]
    COHORT_ELIGIBILITY_STATUS_FIELD_NUMBER: _ClassVar[int]
    leadership_status: LeadershipStatus
    cohort_eligibility_status: CohortEligibilityStatus
    def __init__(self, leadership_status: _Optional[_Union[LeadershipStatus, _Mapping]] = ..., cohort_eligibility_status: _Optional[_Union[CohortEligibilityStatus, _Mapping]] = ...) -> None: ...
