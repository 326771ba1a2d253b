"""Untrusted documents: YAML parsing and data checks under fixed limits, before any model sees them.

A file or a module argument is read by the CLI, the `shard_render` module and the ArgoCD plugin
(which runs inside ArgoCD's repo-server with a 60 s budget). Without limits, a few hundred bytes of
YAML aliases expand to billions of nodes (the "billion laughs"), a 5,000-digit integer or a deep
nesting ends in a Python exception instead of an error, and a duplicate key silently drops half of
a mapping. Each limit is far above what a hand-written MultigresShard or inventory uses
(docs/render.md, "Limits"):

| limit                | value        | what it stops                                              |
|----------------------|--------------|------------------------------------------------------------|
| MAX_DOCUMENT_BYTES   | 1 MiB a file | memory and time before parsing                             |
| MAX_DEPTH            | 64 levels    | recursion in the parser and in every later walk            |
| MAX_NODES            | 100,000      | alias expansion: nodes counted as if every alias were a copy |
| MAX_INTEGER          | 2**63 - 1    | numbers Kubernetes cannot store (int64); non-finite floats |

The model adds one more (`model.MAX_AFFINITY_VALUES`): a pool's `affinity` is copied verbatim into
every pod of the pool, so its size is multiplied by up to 320 pods (10 cells x 32 replicas).

Every problem is an `InputError` whose message starts with the source ("file.yaml", "file.yaml#2",
"shards[0]") and the line or field path.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any, Protocol, cast

import yaml

MAX_DOCUMENT_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_INTEGER = 2**63 - 1
# An int64 has 19 digits; a longer scalar resolved as an integer is refused before Python converts
# it (int() of more than 4,300 digits raises, and sexagesimal 1:2:3... multiplies without bound).
_MAX_INT_TEXT = 40


class InputError(ValueError):
    """A document that cannot be used as given; the message names its source and where in it."""


class _Mark(Protocol):
    """A position in the text: yaml.Mark, or libyaml's own Mark class when CParser made the event."""

    line: int
    column: int


def _at(mark: _Mark | None) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "(unknown position)"


try:  # libyaml scans and parses about 4x faster; the composer below stays Python so it can count
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    class _Parser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):  # type: ignore[no-redef]  # fallback
        def __init__(self, stream: Any) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)


class _LimitedLoader(yaml.composer.Composer, _Parser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
    """A safe loader that counts nesting and expanded nodes while composing, and refuses duplicate keys.

    Composing shares one node per anchor, so it stays linear in the text; the sizes recorded here
    are what every later walk (validation, rendering, JSON) would pay with the aliases expanded.
    """

    def __init__(self, stream: Any, source: str) -> None:
        _Parser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.source = source
        self._depth = 0
        self._sizes: dict[int, int] = {}
        self._composed = 0

    def _fail(self, mark: _Mark | None, problem: str) -> InputError:
        return InputError(f"{self.source}: {_at(mark)}: {problem}")

    def compose_document(self) -> Any:
        self._sizes = {}  # node ids are only unique while one document's nodes are alive
        self._composed = 0
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = cast(yaml.AliasEvent, self.peek_event())  # check_event just saw it
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._sizes:
                raise self._fail(event.start_mark, f"alias *{event.anchor} refers to a node that contains it")
            return super().compose_node(parent, index)
        self._depth += 1
        self._composed += 1  # also stops a flat mapping of a million keys long before its end
        if self._composed > MAX_NODES:
            # cast: compose_node is only called with the node's first event waiting.
            raise self._fail(cast(yaml.Event, self.peek_event()).start_mark, f"more than {MAX_NODES:,} nodes")
        if self._depth > MAX_DEPTH:
            raise self._fail(cast(yaml.Event, self.peek_event()).start_mark,
                             f"nested more than {MAX_DEPTH} levels deep")
        try:
            # cast: Composer returns a node for every event it is called on (None only ends a stream).
            node = cast(yaml.Node, super().compose_node(parent, index))
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        if size > MAX_NODES:
            raise self._fail(node.start_mark, f"expands to more than {MAX_NODES:,} nodes (aliases counted as copies)")
        self._sizes[id(node)] = size
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, yaml.Mark] = {}
            for key, _value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        raise self._fail(key.start_mark, f"duplicate key {key.value!r} (first at "
                                                         f"{_at(seen[key.value])}); one would silently win")
                    seen[key.value] = key.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        if len(node.value) > _MAX_INT_TEXT:
            raise self._fail(node.start_mark, f"integer out of range (at most {MAX_INTEGER})")
        return super().construct_yaml_int(node)


# What add_constructor does (a copy of the inherited table, two entries replaced), written out:
# types-PyYAML types add_constructor's loader argument as one of PyYAML's own loader classes.
_LimitedLoader.yaml_constructors = {**_LimitedLoader.yaml_constructors,
                                    "tag:yaml.org,2002:int": _LimitedLoader.construct_yaml_int,
                                    "tag:yaml.org,2002:map": _LimitedLoader.construct_yaml_map}


def load_yaml(data: bytes | str, source: str) -> list[tuple[str, Any]]:
    """Every non-empty document of a YAML stream as (`source#index`, data), within the size, depth and
    alias limits. The values are checked by `check_data` once the caller knows which part it uses
    (a vars file may hold other variables that are none of our business)."""
    raw = data.encode() if isinstance(data, str) else data
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise InputError(f"{source}: larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    stream = io.StringIO(text)
    stream.name = source  # yaml's marks then say `in "<source>", line N`
    loader = _LimitedLoader(stream, source)
    out = []
    try:
        index = 0
        while loader.check_data():  # type: ignore[no-untyped-call]  # unannotated in types-PyYAML
            doc = loader.get_data()
            where = f"{source}#{index}"
            index += 1
            if doc is not None:
                out.append((where, doc))
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: {exc}") from None
    finally:
        loader.dispose()
    return out


def _join(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else str(key)


def check_data(data: Any, source: str) -> None:
    """Limits on already-parsed data (module arguments, or YAML after `load_yaml`): JSON types only
    (Kubernetes objects are JSON: a YAML timestamp, set or binary has no place), string keys,
    nesting, node count, integers within int64, finite floats. Iterative, so deep input cannot
    exhaust the stack."""
    nodes = 0
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        nodes += 1
        where = f"{source}: {path}" if path else source
        if nodes > MAX_NODES:
            raise InputError(f"{source}: more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise InputError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if value is None or isinstance(value, bool | str):
            continue
        if isinstance(value, int) and abs(value) > MAX_INTEGER:
            raise InputError(f"{where}: integer out of range (at most {MAX_INTEGER})")
        if isinstance(value, float) and not (math.isfinite(value) and abs(value) <= MAX_INTEGER):
            raise InputError(f"{where}: number out of range ({value!r}); numbers must be finite, "
                             f"at most {MAX_INTEGER}")
        if isinstance(value, Mapping):
            for key in value:
                if not isinstance(key, str):
                    raise InputError(f"{where}: key {key!r} is not a string (quote it)")
            stack.extend((v, _join(path, k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, _join(path, i), depth + 1) for i, v in enumerate(value))
        elif not isinstance(value, int | float):
            raise InputError(f"{where}: a {_YAML_TYPE.get(type(value).__name__, type(value).__name__)} is not "
                             f"allowed here (Kubernetes objects are JSON); quote it to keep it as text")


def count_values(data: Any, limit: int) -> int:
    """How many values `data` holds (containers and leaves), counting no further than `limit` + 1."""
    count, stack = 0, [data]
    while stack and count <= limit:
        value = stack.pop()
        count += 1
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return count


# The names YAML users know for the non-JSON values a safe loader builds.
_YAML_TYPE = {"datetime": "timestamp", "date": "date", "bytes": "!!binary value", "set": "!!set",
              "tuple": "!!python/tuple"}
