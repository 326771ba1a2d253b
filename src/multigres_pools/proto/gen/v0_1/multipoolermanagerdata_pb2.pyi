import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from . import clustermetadata_pb2 as _clustermetadata_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SynchronousMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYNCHRONOUS_METHOD_UNSPECIFIED: _ClassVar[SynchronousMethod]
    SYNCHRONOUS_METHOD_FIRST: _ClassVar[SynchronousMethod]
    SYNCHRONOUS_METHOD_ANY: _ClassVar[SynchronousMethod]

class PostgresStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POSTGRES_STATUS_UNKNOWN: _ClassVar[PostgresStatus]
    POSTGRES_STATUS_STARTING: _ClassVar[PostgresStatus]
    POSTGRES_STATUS_STANDBY: _ClassVar[PostgresStatus]
    POSTGRES_STATUS_PROMOTING: _ClassVar[PostgresStatus]
    POSTGRES_STATUS_PRIMARY: _ClassVar[PostgresStatus]

class PostgresAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POSTGRES_ACTION_UNSPECIFIED: _ClassVar[PostgresAction]
    POSTGRES_ACTION_STARTING: _ClassVar[PostgresAction]
    POSTGRES_ACTION_RESTORING_FROM_BACKUP: _ClassVar[PostgresAction]
    POSTGRES_ACTION_CREATING_FIRST_BACKUP: _ClassVar[PostgresAction]

class ReplicationPauseMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REPLICATION_PAUSE_MODE_REPLAY_ONLY: _ClassVar[ReplicationPauseMode]
    REPLICATION_PAUSE_MODE_RECEIVER_ONLY: _ClassVar[ReplicationPauseMode]
    REPLICATION_PAUSE_MODE_REPLAY_AND_RECEIVER: _ClassVar[ReplicationPauseMode]

class CohortUpdateOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COHORT_UPDATE_OPERATION_UNSPECIFIED: _ClassVar[CohortUpdateOperation]
    COHORT_UPDATE_OPERATION_ADD: _ClassVar[CohortUpdateOperation]
    COHORT_UPDATE_OPERATION_REMOVE: _ClassVar[CohortUpdateOperation]
SYNCHRONOUS_METHOD_UNSPECIFIED: SynchronousMethod
SYNCHRONOUS_METHOD_FIRST: SynchronousMethod
SYNCHRONOUS_METHOD_ANY: SynchronousMethod
POSTGRES_STATUS_UNKNOWN: PostgresStatus
POSTGRES_STATUS_STARTING: PostgresStatus
POSTGRES_STATUS_STANDBY: PostgresStatus
POSTGRES_STATUS_PROMOTING: PostgresStatus
POSTGRES_STATUS_PRIMARY: PostgresStatus
POSTGRES_ACTION_UNSPECIFIED: PostgresAction
POSTGRES_ACTION_STARTING: PostgresAction
POSTGRES_ACTION_RESTORING_FROM_BACKUP: PostgresAction
POSTGRES_ACTION_CREATING_FIRST_BACKUP: PostgresAction
REPLICATION_PAUSE_MODE_REPLAY_ONLY: ReplicationPauseMode
REPLICATION_PAUSE_MODE_RECEIVER_ONLY: ReplicationPauseMode
REPLICATION_PAUSE_MODE_REPLAY_AND_RECEIVER: ReplicationPauseMode
COHORT_UPDATE_OPERATION_UNSPECIFIED: CohortUpdateOperation
COHORT_UPDATE_OPERATION_ADD: CohortUpdateOperation
COHORT_UPDATE_OPERATION_REMOVE: CohortUpdateOperation

class PrimaryConnInfo(_message.Message):
    __slots__ = ("host", "port", "user", "application_name")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_NAME_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    user: str
    application_name: str
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., user: _Optional[str] = ..., application_name: _Optional[str] = ...) -> None: ...

class StandbyReplicationStatus(_message.Message):
    __slots__ = ("last_replay_lsn", "last_receive_lsn", "is_wal_replay_paused", "primary_conn_info", "wal_receiver_status")
    LAST_REPLAY_LSN_FIELD_NUMBER: _ClassVar[int]
    LAST_RECEIVE_LSN_FIELD_NUMBER: _ClassVar[int]
    IS_WAL_REPLAY_PAUSED_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_CONN_INFO_FIELD_NUMBER: _ClassVar[int]
    WAL_RECEIVER_STATUS_FIELD_NUMBER: _ClassVar[int]
    last_replay_lsn: str
    last_receive_lsn: str
    is_wal_replay_paused: bool
    primary_conn_info: PrimaryConnInfo
    wal_receiver_status: str
    def __init__(self, last_replay_lsn: _Optional[str] = ..., last_receive_lsn: _Optional[str] = ..., is_wal_replay_paused: _Optional[bool] = ..., primary_conn_info: _Optional[_Union[PrimaryConnInfo, _Mapping]] = ..., wal_receiver_status: _Optional[str] = ...) -> None: ...

class SynchronousReplicationConfiguration(_message.Message):
    __slots__ = ("synchronous_method", "num_sync", "standby_ids", "standby_application_names")
    SYNCHRONOUS_METHOD_FIELD_NUMBER: _ClassVar[int]
    NUM_SYNC_FIELD_NUMBER: _ClassVar[int]
    STANDBY_IDS_FIELD_NUMBER: _ClassVar[int]
    STANDBY_APPLICATION_NAMES_FIELD_NUMBER: _ClassVar[int]
    synchronous_method: SynchronousMethod
    num_sync: int
    standby_ids: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    standby_application_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, synchronous_method: _Optional[_Union[SynchronousMethod, str]] = ..., num_sync: _Optional[int] = ..., standby_ids: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., standby_application_names: _Optional[_Iterable[str]] = ...) -> None: ...

class PrimaryStatus(_message.Message):
    __slots__ = ("lsn", "ready", "connected_followers", "sync_replication_config")
    LSN_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FOLLOWERS_FIELD_NUMBER: _ClassVar[int]
    SYNC_REPLICATION_CONFIG_FIELD_NUMBER: _ClassVar[int]
    lsn: str
    ready: bool
    connected_followers: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    sync_replication_config: SynchronousReplicationConfiguration
    def __init__(self, lsn: _Optional[str] = ..., ready: _Optional[bool] = ..., connected_followers: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., sync_replication_config: _Optional[_Union[SynchronousReplicationConfiguration, _Mapping]] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("pooler_type", "primary_status", "replication_status", "is_initialized", "has_data_directory", "postgres_running", "postgres_status", "wal_position", "postgres_action", "postgres_action_duration", "cohort_members", "postgres_ready")
    POOLER_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_STATUS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_STATUS_FIELD_NUMBER: _ClassVar[int]
    IS_INITIALIZED_FIELD_NUMBER: _ClassVar[int]
    HAS_DATA_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_RUNNING_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_STATUS_FIELD_NUMBER: _ClassVar[int]
    WAL_POSITION_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_ACTION_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_ACTION_DURATION_FIELD_NUMBER: _ClassVar[int]
    COHORT_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_READY_FIELD_NUMBER: _ClassVar[int]
    pooler_type: _clustermetadata_pb2.PoolerType
    primary_status: PrimaryStatus
    replication_status: StandbyReplicationStatus
    is_initialized: bool
    has_data_directory: bool
    postgres_running: bool
    postgres_status: PostgresStatus
    wal_position: str
    postgres_action: PostgresAction
    postgres_action_duration: _duration_pb2.Duration
    cohort_members: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    postgres_ready: bool
    def __init__(self, pooler_type: _Optional[_Union[_clustermetadata_pb2.PoolerType, str]] = ..., primary_status: _Optional[_Union[PrimaryStatus, _Mapping]] = ..., replication_status: _Optional[_Union[StandbyReplicationStatus, _Mapping]] = ..., is_initialized: _Optional[bool] = ..., has_data_directory: _Optional[bool] = ..., postgres_running: _Optional[bool] = ..., postgres_status: _Optional[_Union[PostgresStatus, str]] = ..., wal_position: _Optional[str] = ..., postgres_action: _Optional[_Union[PostgresAction, str]] = ..., postgres_action_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., cohort_members: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., postgres_ready: _Optional[bool] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("status", "availability_status", "consensus_status")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    AVAILABILITY_STATUS_FIELD_NUMBER: _ClassVar[int]
    CONSENSUS_STATUS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    availability_status: _clustermetadata_pb2.AvailabilityStatus
    consensus_status: _clustermetadata_pb2.ConsensusStatus
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ..., availability_status: _Optional[_Union[_clustermetadata_pb2.AvailabilityStatus, _Mapping]] = ..., consensus_status: _Optional[_Union[_clustermetadata_pb2.ConsensusStatus, _Mapping]] = ...) -> None: ...

class StopReplicationRequest(_message.Message):
    __slots__ = ("mode", "wait")
    MODE_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    mode: ReplicationPauseMode
    wait: bool
    def __init__(self, mode: _Optional[_Union[ReplicationPauseMode, str]] = ..., wait: _Optional[bool] = ...) -> None: ...

class StopReplicationResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: StandbyReplicationStatus
    def __init__(self, status: _Optional[_Union[StandbyReplicationStatus, _Mapping]] = ...) -> None: ...

class StartReplicationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartReplicationResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateConsensusRuleRequest(_message.Message):
    __slots__ = ("operation", "standby_ids", "expected_outgoing_rule", "coordinator_id")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    STANDBY_IDS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_OUTGOING_RULE_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    operation: CohortUpdateOperation
    standby_ids: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    expected_outgoing_rule: _clustermetadata_pb2.RuleNumber
    coordinator_id: _clustermetadata_pb2.ID
    def __init__(self, operation: _Optional[_Union[CohortUpdateOperation, str]] = ..., standby_ids: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., expected_outgoing_rule: _Optional[_Union[_clustermetadata_pb2.RuleNumber, _Mapping]] = ..., coordinator_id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ...) -> None: ...

class UpdateConsensusRuleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
