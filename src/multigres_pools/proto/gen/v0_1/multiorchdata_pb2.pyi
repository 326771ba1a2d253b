from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable
from typing import ClassVar as _ClassVar, Optional as _Optional

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
