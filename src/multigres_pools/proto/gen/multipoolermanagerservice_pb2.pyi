from . import multipoolermanagerdata_pb2 as _multipoolermanagerdata_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
