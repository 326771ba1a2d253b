"""The JSON log lines of the agent and the operator."""

from __future__ import annotations

import json
import logging

from multigres_pools.logs import JsonFormatter


def test_extras_are_fields_and_the_record_internals_are_not():
    record = logging.makeLogRecord({"name": "multigres_pools.agent", "levelname": "INFO", "msg": "drained",
                                    "pod": "p-0"})
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "drained" and line["pod"] == "p-0" and line["logger"] == "multigres_pools.agent"
    assert not {"args", "levelno", "pathname", "thread"} & line.keys()
