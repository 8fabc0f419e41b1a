"""Shared by every command folder below tests/cli: the helper modules here
(llm2hef_cli, har_fixtures, chat_rendering, ...), tests/ (family_table.py)
and tools/fixtures (hef_writer and the fixture generators) are imported by
bare name, wherever a test file lives."""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parents[1] / "tools" / "fixtures", HERE.parent, HERE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
