"""The JSON log lines of the agent and the operator."""

from __future__ import annotations

import json
import logging

from multigres_pools.logs import JsonFormatter


def test_extras_are_fields_but_kopfs_settings_dump_is_left_out():
    record = logging.makeLogRecord({"name": "kopf.objects", "levelname": "INFO", "msg": "Handler 'x' succeeded.",
                                    "settings": "OperatorSettings(" + "x" * 5000 + ")", "pod": "p-0"})
    line = json.loads(JsonFormatter().format(record))
    assert line["msg"] == "Handler 'x' succeeded." and line["pod"] == "p-0" and "settings" not in line
