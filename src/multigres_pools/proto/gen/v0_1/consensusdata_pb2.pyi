from . import clustermetadata_pb2 as _clustermetadata_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("id", "consensus_status", "availability_status")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONSENSUS_STATUS_FIELD_NUMBER: _ClassVar[int]
    AVAILABILITY_STATUS_FIELD_NUMBER: _ClassVar[int]
    id: _clustermetadata_pb2.ID
    consensus_status: _clustermetadata_pb2.ConsensusStatus
    availability_status: _clustermetadata_pb2.AvailabilityStatus
    def __init__(self, id: _Optional[_Union[_clustermetadata_pb2.ID, _Mapping]] = ..., consensus_status: _Optional[_Union[_clustermetadata_pb2.ConsensusStatus, _Mapping]] = ..., availability_status: _Optional[_Union[_clustermetadata_pb2.AvailabilityStatus, _Mapping]] = ...) -> None: ...
