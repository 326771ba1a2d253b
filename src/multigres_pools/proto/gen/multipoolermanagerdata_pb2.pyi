import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from . import clustermetadata_pb2 as _clustermetadata_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StandbyUpdateOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STANDBY_UPDATE_OPERATION_UNSPECIFIED: _ClassVar[StandbyUpdateOperation]
    STANDBY_UPDATE_OPERATION_ADD: _ClassVar[StandbyUpdateOperation]
    STANDBY_UPDATE_OPERATION_REMOVE: _ClassVar[StandbyUpdateOperation]
    STANDBY_UPDATE_OPERATION_REPLACE: _ClassVar[StandbyUpdateOperation]

class SynchronousCommitLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYNCHRONOUS_COMMIT_OFF: _ClassVar[SynchronousCommitLevel]
    SYNCHRONOUS_COMMIT_LOCAL: _ClassVar[SynchronousCommitLevel]
    SYNCHRONOUS_COMMIT_REMOTE_WRITE: _ClassVar[SynchronousCommitLevel]
    SYNCHRONOUS_COMMIT_ON: _ClassVar[SynchronousCommitLevel]
    SYNCHRONOUS_COMMIT_REMOTE_APPLY: _ClassVar[SynchronousCommitLevel]

class SynchronousMethod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SYNCHRONOUS_METHOD_UNSPECIFIED: _ClassVar[SynchronousMethod]
    SYNCHRONOUS_METHOD_FIRST: _ClassVar[SynchronousMethod]
    SYNCHRONOUS_METHOD_ANY: _ClassVar[SynchronousMethod]

class PostgresAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POSTGRES_ACTION_UNSPECIFIED: _ClassVar[PostgresAction]
    POSTGRES_ACTION_STARTING: _ClassVar[PostgresAction]
    POSTGRES_ACTION_RESTORING_FROM_BACKUP: _ClassVar[PostgresAction]
    POSTGRES_ACTION_CREATING_FIRST_BACKUP: _ClassVar[PostgresAction]
STANDBY_UPDATE_OPERATION_UNSPECIFIED: StandbyUpdateOperation
STANDBY_UPDATE_OPERATION_ADD: StandbyUpdateOperation
STANDBY_UPDATE_OPERATION_REMOVE: StandbyUpdateOperation
STANDBY_UPDATE_OPERATION_REPLACE: StandbyUpdateOperation
SYNCHRONOUS_COMMIT_OFF: SynchronousCommitLevel
SYNCHRONOUS_COMMIT_LOCAL: SynchronousCommitLevel
SYNCHRONOUS_COMMIT_REMOTE_WRITE: SynchronousCommitLevel
SYNCHRONOUS_COMMIT_ON: SynchronousCommitLevel
SYNCHRONOUS_COMMIT_REMOTE_APPLY: SynchronousCommitLevel
SYNCHRONOUS_METHOD_UNSPECIFIED: SynchronousMethod
SYNCHRONOUS_METHOD_FIRST: SynchronousMethod
SYNCHRONOUS_METHOD_ANY: SynchronousMethod
POSTGRES_ACTION_UNSPECIFIED: PostgresAction
POSTGRES_ACTION_STARTING: PostgresAction
POSTGRES_ACTION_RESTORING_FROM_BACKUP: PostgresAction
POSTGRES_ACTION_CREATING_FIRST_BACKUP: PostgresAction

class UpdateSynchronousStandbyListRequest(_message.Message):
    __slots__ = ("operation", "standby_ids", "reload_config", "consensus_term", "force", "coordinator_id")
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    STANDBY_IDS_FIELD_NUMBER: _ClassVar[int]
    RELOAD_CONFIG_FIELD_NUMBER: _ClassVar[int]
    CONSENSUS_TERM_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    operation: StandbyUpdateOperation
    standby_ids: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    reload_config: bool
    consensus_term: int
    force: bool
    coordinator_id: _clustermetadata_pb2.ID
    def __init__(self, operation: _Optional[_Union[StandbyUpdateOperation, str]] = ..., standby_ids: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., reload_config: _Optional[bool] = ..., consensus_term: _Optional[int] = ..., force: _Optional[bool] = ..., coordinator_id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ...) -> None: ...

class UpdateSynchronousStandbyListResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SynchronousReplicationConfiguration(_message.Message):
    __slots__ = ("synchronous_commit", "synchronous_method", "num_sync", "standby_ids", "standby_application_names")
    SYNCHRONOUS_COMMIT_FIELD_NUMBER: _ClassVar[int]
    SYNCHRONOUS_METHOD_FIELD_NUMBER: _ClassVar[int]
    NUM_SYNC_FIELD_NUMBER: _ClassVar[int]
    STANDBY_IDS_FIELD_NUMBER: _ClassVar[int]
    STANDBY_APPLICATION_NAMES_FIELD_NUMBER: _ClassVar[int]
    synchronous_commit: SynchronousCommitLevel
    synchronous_method: SynchronousMethod
    num_sync: int
    standby_ids: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    standby_application_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, synchronous_commit: _Optional[_Union[SynchronousCommitLevel, str]] = ..., synchronous_method: _Optional[_Union[SynchronousMethod, str]] = ..., num_sync: _Optional[int] = ..., standby_ids: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., standby_application_names: _Optional[_Iterable[str]] = ...) -> None: ...

class PrimaryStatus(_message.Message):
    __slots__ = ("lsn", "ready", "connected_followers", "sync_replication_config", "primary_term")
    LSN_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FOLLOWERS_FIELD_NUMBER: _ClassVar[int]
    SYNC_REPLICATION_CONFIG_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    lsn: str
    ready: bool
    connected_followers: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    sync_replication_config: SynchronousReplicationConfiguration
    primary_term: int
    def __init__(self, lsn: _Optional[str] = ..., ready: _Optional[bool] = ..., connected_followers: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., sync_replication_config: _Optional[_Union[SynchronousReplicationConfiguration, _Mapping]] = ..., primary_term: _Optional[int] = ...) -> None: ...

class PrimaryStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PrimaryStatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: PrimaryStatus
    def __init__(self, status: _Optional[_Union[PrimaryStatus, _Mapping]] = ...) -> None: ...

class PrimaryConnInfo(_message.Message):
    __slots__ = ("host", "port", "user", "application_name", "raw")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_NAME_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    user: str
    application_name: str
    raw: str
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ..., user: _Optional[str] = ..., application_name: _Optional[str] = ..., raw: _Optional[str] = ...) -> None: ...

class StandbyReplicationStatus(_message.Message):
    __slots__ = ("last_replay_lsn", "last_receive_lsn", "is_wal_replay_paused", "wal_replay_pause_state", "lag", "last_xact_replay_timestamp", "primary_conn_info", "wal_receiver_status", "last_msg_receive_time", "wal_receiver_status_interval", "wal_receiver_timeout")
    LAST_REPLAY_LSN_FIELD_NUMBER: _ClassVar[int]
    LAST_RECEIVE_LSN_FIELD_NUMBER: _ClassVar[int]
    IS_WAL_REPLAY_PAUSED_FIELD_NUMBER: _ClassVar[int]
    WAL_REPLAY_PAUSE_STATE_FIELD_NUMBER: _ClassVar[int]
    LAG_FIELD_NUMBER: _ClassVar[int]
    LAST_XACT_REPLAY_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_CONN_INFO_FIELD_NUMBER: _ClassVar[int]
    WAL_RECEIVER_STATUS_FIELD_NUMBER: _ClassVar[int]
    LAST_MSG_RECEIVE_TIME_FIELD_NUMBER: _ClassVar[int]
    WAL_RECEIVER_STATUS_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    WAL_RECEIVER_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    last_replay_lsn: str
    last_receive_lsn: str
    is_wal_replay_paused: bool
    wal_replay_pause_state: str
    lag: _duration_pb2.Duration
    last_xact_replay_timestamp: str
    primary_conn_info: PrimaryConnInfo
    wal_receiver_status: str
    last_msg_receive_time: _timestamp_pb2.Timestamp
    wal_receiver_status_interval: _duration_pb2.Duration
    wal_receiver_timeout: _duration_pb2.Duration
    def __init__(self, last_replay_lsn: _Optional[str] = ..., last_receive_lsn: _Optional[str] = ..., is_wal_replay_paused: _Optional[bool] = ..., wal_replay_pause_state: _Optional[str] = ..., lag: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., last_xact_replay_timestamp: _Optional[str] = ..., primary_conn_info: _Optional[_Union[PrimaryConnInfo, _Mapping]] = ..., wal_receiver_status: _Optional[str] = ..., last_msg_receive_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., wal_receiver_status_interval: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., wal_receiver_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ConsensusTerm(_message.Message):
    __slots__ = ("term_number", "accepted_term_from_coordinator_id", "last_acceptance_time", "leader_id", "primary_term")
    TERM_NUMBER_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_TERM_FROM_COORDINATOR_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ACCEPTANCE_TIME_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_TERM_FIELD_NUMBER: _ClassVar[int]
    term_number: int
    accepted_term_from_coordinator_id: _clustermetadata_pb2.ID
    last_acceptance_time: _timestamp_pb2.Timestamp
    leader_id: _clustermetadata_pb2.ID
    primary_term: int
    def __init__(self, term_number: _Optional[int] = ..., accepted_term_from_coordinator_id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ..., last_acceptance_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., leader_id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ..., primary_term: _Optional[int] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("pooler_type", "primary_status", "replication_status", "is_initialized", "has_data_directory", "postgres_running", "postgres_role", "wal_position", "consensus_term", "shard_id", "postgres_action", "postgres_action_duration", "cohort_members", "postgres_ready")
    POOLER_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_STATUS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_STATUS_FIELD_NUMBER: _ClassVar[int]
    IS_INITIALIZED_FIELD_NUMBER: _ClassVar[int]
    HAS_DATA_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_RUNNING_FIELD_NUMBER: _ClassVar[int]
    POSTGRES_ROLE_FIELD_NUMBER: _ClassVar[int]
    WAL_POSITION_FIELD_NUMBER: _ClassVar[int]
    CONSENSUS_TERM_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
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
    postgres_role: str
    wal_position: str
    consensus_term: ConsensusTerm
    shard_id: str
    postgres_action: PostgresAction
    postgres_action_duration: _duration_pb2.Duration
    cohort_members: _containers.RepeatedCompositeFieldContainer[_clustermetadata_pb2.ID]
    postgres_ready: bool
    def __init__(self, pooler_type: _Optional[_Union[_clustermetadata_pb2.PoolerType, str]] = ..., primary_status: _Optional[_Union[PrimaryStatus, _Mapping]] = ..., replication_status: _Optional[_Union[StandbyReplicationStatus, _Mapping]] = ..., is_initialized: _Optional[bool] = ..., has_data_directory: _Optional[bool] = ..., postgres_running: _Optional[bool] = ..., postgres_role: _Optional[str] = ..., wal_position: _Optional[str] = ..., consensus_term: _Optional[_Union[ConsensusTerm, _Mapping]] = ..., shard_id: _Optional[str] = ..., postgres_action: _Optional[_Union[PostgresAction, str]] = ..., postgres_action_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., cohort_members: _Optional[_Iterable[_Union[_clustermetadata_pb2.ID, _Mapping]]] = ..., postgres_ready: _Optional[bool] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: Status
    def __init__(self, status: _Optional[_Union[Status, _Mapping]] = ...) -> None: ...

class StateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StateResponse(_message.Message):
    __slots__ = ("state", "error_message")
    STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    state: str
    error_message: str
    def __init__(self, state: _Optional[str] = ..., error_message: _Optional[str] = ...) -> None: ...

class ReplicationStats(_message.Message):
    __slots__ = ("pid", "client_addr", "state", "sync_state", "sent_lsn", "write_lsn", "flush_lsn", "replay_lsn", "write_lag", "flush_lag", "replay_lag")
    PID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SYNC_STATE_FIELD_NUMBER: _ClassVar[int]
    SENT_LSN_FIELD_NUMBER: _ClassVar[int]
    WRITE_LSN_FIELD_NUMBER: _ClassVar[int]
    FLUSH_LSN_FIELD_NUMBER: _ClassVar[int]
    REPLAY_LSN_FIELD_NUMBER: _ClassVar[int]
    WRITE_LAG_FIELD_NUMBER: _ClassVar[int]
    FLUSH_LAG_FIELD_NUMBER: _ClassVar[int]
    REPLAY_LAG_FIELD_NUMBER: _ClassVar[int]
    pid: int
    client_addr: str
    state: str
    sync_state: str
    sent_lsn: str
    write_lsn: str
    flush_lsn: str
    replay_lsn: str
    write_lag: _duration_pb2.Duration
    flush_lag: _duration_pb2.Duration
    replay_lag: _duration_pb2.Duration
    def __init__(self, pid: _Optional[int] = ..., client_addr: _Optional[str] = ..., state: _Optional[str] = ..., sync_state: _Optional[str] = ..., sent_lsn: _Optional[str] = ..., write_lsn: _Optional[str] = ..., flush_lsn: _Optional[str] = ..., replay_lsn: _Optional[str] = ..., write_lag: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., flush_lag: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., replay_lag: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class FollowerInfo(_message.Message):
    __slots__ = ("follower_id", "application_name", "is_connected", "replication_stats")
    FOLLOWER_ID_FIELD_NUMBER: _ClassVar[int]
    APPLICATION_NAME_FIELD_NUMBER: _ClassVar[int]
    IS_CONNECTED_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_STATS_FIELD_NUMBER: _ClassVar[int]
    follower_id: _clustermetadata_pb2.ID
    application_name: str
    is_connected: bool
    replication_stats: ReplicationStats
    def __init__(self, follower_id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ..., application_name: _Optional[str] = ..., is_connected: _Optional[bool] = ..., replication_stats: _Optional[_Union[ReplicationStats, _Mapping]] = ...) -> None: ...

class GetFollowersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetFollowersResponse(_message.Message):
    __slots__ = ("followers", "sync_config")
    FOLLOWERS_FIELD_NUMBER: _ClassVar[int]
    SYNC_CONFIG_FIELD_NUMBER: _ClassVar[int]
    followers: _containers.RepeatedCompositeFieldContainer[FollowerInfo]
    sync_config: SynchronousReplicationConfiguration
    def __init__(self, followers: _Optional[_Iterable[_Union[FollowerInfo, _Mapping]]] = ..., sync_config: _Optional[_Union[SynchronousReplicationConfiguration, _Mapping]] = ...) -> None: ...

class BackupMetadata(_message.Message):
    __slots__ = ("table_group", "shard", "status", "backup_id", "final_lsn", "job_id", "backup_size_bytes", "type", "multipooler_id", "pooler_type")
    class Status(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[BackupMetadata.Status]
        INCOMPLETE: _ClassVar[BackupMetadata.Status]
        COMPLETE: _ClassVar[BackupMetadata.Status]
    UNKNOWN: BackupMetadata.Status
    INCOMPLETE: BackupMetadata.Status
    COMPLETE: BackupMetadata.Status
    TABLE_GROUP_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BACKUP_ID_FIELD_NUMBER: _ClassVar[int]
    FINAL_LSN_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    BACKUP_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MULTIPOOLER_ID_FIELD_NUMBER: _ClassVar[int]
    POOLER_TYPE_FIELD_NUMBER: _ClassVar[int]
    table_group: str
    shard: str
    status: BackupMetadata.Status
    backup_id: str
    final_lsn: str
    job_id: str
    backup_size_bytes: int
    type: str
    multipooler_id: str
    pooler_type: _clustermetadata_pb2.PoolerType
    def __init__(self, table_group: _Optional[str] = ..., shard: _Optional[str] = ..., status: _Optional[_Union[BackupMetadata.Status, str]] = ..., backup_id: _Optional[str] = ..., final_lsn: _Optional[str] = ..., job_id: _Optional[str] = ..., backup_size_bytes: _Optional[int] = ..., type: _Optional[str] = ..., multipooler_id: _Optional[str] = ..., pooler_type: _Optional[_Union[_clustermetadata_pb2.PoolerType, str]] = ...) -> None: ...

class GetBackupsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class GetBackupsResponse(_message.Message):
    __slots__ = ("backups",)
    BACKUPS_FIELD_NUMBER: _ClassVar[int]
    backups: _containers.RepeatedCompositeFieldContainer[BackupMetadata]
    def __init__(self, backups: _Optional[_Iterable[_Union[BackupMetadata, _Mapping]]] = ...) -> None: ...

class BackupRequest(_message.Message):
    __slots__ = ("force_primary", "type", "job_id", "overrides")
    class OverridesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FORCE_PRIMARY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    force_primary: bool
    type: str
    job_id: str
    overrides: _containers.ScalarMap[str, str]
    def __init__(self, force_primary: _Optional[bool] = ..., type: _Optional[str] = ..., job_id: _Optional[str] = ..., overrides: _Optional[_Mapping[str, str]] = ...) -> None: ...

class BackupResponse(_message.Message):
    __slots__ = ("backup_id",)
    BACKUP_ID_FIELD_NUMBER: _ClassVar[int]
    backup_id: str
    def __init__(self, backup_id: _Optional[str] = ...) -> None: ...
