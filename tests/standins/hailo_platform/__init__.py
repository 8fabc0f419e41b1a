"""Stand-in for HailoRT's `hailo_platform` package (hailo-ai/hailort v5.2.0,
hailort/libhailort/bindings/python/platform/hailo_platform/__init__.py), for
tests only. Put on PYTHONPATH by tests/cli/scripts/test_validate_on_device.py, never
installed. The API surface and what it enforces: pyhailort/pyhailort.py."""
from hailo_platform.pyhailort.pyhailort import (  # noqa: F401 (the package's public names)
    HEF,
    FormatOrder,
    FormatType,
    HailoRTException,
    HailoSchedulingAlgorithm,
    VDevice,
)

__version__ = "5.2.0"
STANDIN = True

__all__ = ["HEF", "FormatType", "FormatOrder", "VDevice", "HailoRTException", "HailoSchedulingAlgorithm"]
