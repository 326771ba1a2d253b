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

class AsyncReplicationFallbackMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ASYNC_REPLICATION_FALLBACK_MODE_UNKNOWN: _ClassVar[AsyncReplicationFallbackMode]
    ASYNC_REPLICATION_FALLBACK_MODE_ALLOW: _ClassVar[AsyncReplicationFallbackMode]
    ASYNC_REPLICATION_FALLBACK_MODE_REJECT: _ClassVar[AsyncReplicationFallbackMode]
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
ASYNC_REPLICATION_FALLBACK_MODE_UNKNOWN: AsyncReplicationFallbackMode
ASYNC_REPLICATION_FALLBACK_MODE_ALLOW: AsyncReplicationFallbackMode
ASYNC_REPLICATION_FALLBACK_MODE_REJECT: AsyncReplicationFallbackMode

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

class MultiPooler(_message.Message):
    __slots__ = ("id", "database", "table_group", "shard", "key_range", "type", "serving_status", "hostname", "port_map", "pooler_dir", "pg_data_dir")
    class PortMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    TABLE_GROUP_FIELD_NUMBER: _ClassVar[int]
    SHARD_FIELD_NUMBER: _ClassVar[int]
    KEY_RANGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SERVING_STATUS_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORT_MAP_FIELD_NUMBER: _ClassVar[int]
    POOLER_DIR_FIELD_NUMBER: _ClassVar[int]
    PG_DATA_DIR_FIELD_NUMBER: _ClassVar[int]
    id: ID
    database: str
    table_group: str
    shard: str
    key_range: KeyRange
    type: PoolerType
    serving_status: PoolerServingStatus
    hostname: str
    port_map: _containers.ScalarMap[str, int]
    pooler_dir: str
    pg_data_dir: str
    def __init__(self, id: _Optional[_Union[ID, _Mapping]] = ..., database: _Optional[str] = ..., table_group: _Optional[str] = ..., shard: _Optional[str] = ..., key_range: _Optional[_Union[KeyRange, _Mapping]] = ..., type: _Optional[_Union[PoolerType, str]] = ..., serving_status: _Optional[_Union[PoolerServingStatus, str]] = ..., hostname: _Optional[str] = ..., port_map: _Optional[_Mapping[str, int]] = ..., pooler_dir: _Optional[str] = ..., pg_data_dir: _Optional[str] = ...) -> None: ...

class Cell(_message.Message):
    __slots__ = ("name", "server_addresses", "root")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    name: str
    server_addresses: _containers.RepeatedScalarFieldContainer[str]
    root: str
    def __init__(self, name: _Optional[str] = ..., server_addresses: _Optional[_Iterable[str]] = ..., root: _Optional[str] = ...) -> None: ...

class FilesystemBackup(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class S3Backup(_message.Message):
    __slots__ = ("bucket", "region", "endpoint", "key_prefix", "use_env_credentials")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    REGION_FIELD_NUMBER: _ClassVar[int]
    ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    KEY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    USE_ENV_CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    region: str
    endpoint: str
    key_prefix: str
    use_env_credentials: bool
    def __init__(self, bucket: _Optional[str] = ..., region: _Optional[str] = ..., endpoint: _Optional[str] = ..., key_prefix: _Optional[str] = ..., use_env_credentials: _Optional[bool] = ...) -> None: ...

class BackupLocation(_message.Message):
    __slots__ = ("filesystem", "s3")
    FILESYSTEM_FIELD_NUMBER: _ClassVar[int]
    S3_FIELD_NUMBER: _ClassVar[int]
    filesystem: FilesystemBackup
    s3: S3Backup
    def __init__(self, filesystem: _Optional[_Union[FilesystemBackup, _Mapping]] = ..., s3: _Optional[_Union[S3Backup, _Mapping]] = ...) -> None: ...

class DurabilityPolicy(_message.Message):
    __slots__ = ("policy_name", "policy_version", "quorum_type", "required_count", "description", "async_fallback")
    POLICY_NAME_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    QUORUM_TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ASYNC_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    policy_name: str
    policy_version: int
    quorum_type: QuorumType
    required_count: int
    description: str
    async_fallback: AsyncReplicationFallbackMode
    def __init__(self, policy_name: _Optional[str] = ..., policy_version: _Optional[int] = ..., quorum_type: _Optional[_Union[QuorumType, str]] = ..., required_count: _Optional[int] = ..., description: _Optional[str] = ..., async_fallback: _Optional[_Union[AsyncReplicationFallbackMode, str]] = ...) -> None: ...

class Database(_message.Message):
    __slots__ = ("name", "backup_location", "cells", "bootstrap_durability_policy")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BACKUP_LOCATION_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    BOOTSTRAP_DURABILITY_POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    backup_location: BackupLocation
    cells: _containers.RepeatedScalarFieldContainer[str]
    bootstrap_durability_policy: DurabilityPolicy
    def __init__(self, name: _Optional[str] = ..., backup_location: _Optional[_Union[BackupLocation, _Mapping]] = ..., cells: _Optional[_Iterable[str]] = ..., bootstrap_durability_policy: _Optional[_Union[DurabilityPolicy, _Mapping]] = ...) -> None: ...
