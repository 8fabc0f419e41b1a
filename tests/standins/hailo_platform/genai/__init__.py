"""Stand-in for hailo_platform.genai (hailo-ai/hailort v5.2.0,
hailort/libhailort/bindings/python/platform/hailo_platform/genai/__init__.py),
which exports VDevice and LLM (and VLM, Speech2Text, not stood in)."""
from hailo_platform import VDevice  # noqa: F401
from hailo_platform.pyhailort.pyhailort import LLM  # noqa: F401

__all__ = ["VDevice", "LLM"]
