from . import clustermetadata_pb2 as _clustermetadata_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TriggerRecoveryNowRequest(_message.Message):
    __slots__ = ("max_cycles",)
    MAX_CYCLES_FIELD_NUMBER: _ClassVar[int]
    max_cycles: int
    def __init__(self, max_cycles: _Optional[int] = ...) -> None: ...

class TriggerRecoveryNowResponse(_message.Message):
    __slots__ = ("remaining_problem_codes",)
    REMAINING_PROBLEM_CODES_FIELD_NUMBER: _ClassVar[int]
    remaining_problem_codes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, remaining_problem_codes: _Optional[_Iterable[str]] = ...) -> None: ...

class ApplyCertifiedRuleChangeRequest(_message.Message):
    __slots__ = ("shard_key", "proposed_rule", "cert", "reason")
    SHARD_KEY_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_RULE_FIELD_NUMBER: _ClassVar[int]
    CERT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    shard_key: _clustermetadata_pb2.ShardKey
    proposed_rule: _clustermetadata_pb2.ShardRule
    cert: _clustermetadata_pb2.ExternallyCertifiedRevocation
    reason: str
    def __init__(self, shard_key: _Optional[_Union[_clustermetadata_pb2.ShardKey, _Mapping]] = ..., proposed_rule: _Optional[_Union[_clustermetadata_pb2.ShardRule, _Mapping]] = ..., cert: _Optional[_Union[_clustermetadata_pb2.ExternallyCertifiedRevocation, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ApplyCertifiedRuleChangeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
