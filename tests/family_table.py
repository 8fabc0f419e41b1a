"""The family table: one row per first-party adapter, read by every test that
runs "once per family" (numerics, refusals, calibrate, inspect, lint, forward
keys) and by the fixture generator. Adding a family is one row here.

What is not here is derived from the adapter itself: the HF architectures and
model_type values it claims and the forward-pass keys it applies come from
`llm2hef adapters --json`, so they are stated once, in the adapter's info().

Import it from a test folder with tests/ on sys.path (a folder's conftest.py
adds it: `sys.path.insert(0, str(Path(__file__).resolve().parents[1]))`).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    adapter: str            # the adapter's name (`llm2hef adapters`)
    fixtures: tuple[str, ...]  # tests/fixtures/<name>; the first is the family's representative
    doc: str                # the docs/ page that describes what the export does for the family
    gguf_arch: str | None = None  # llama.cpp's general.architecture, when the GGUF tests cover the family
    options: dict = field(default_factory=dict)  # adapter options a test may pass (name -> choices)

    @property
    def fixture(self) -> str:
        return self.fixtures[0]


FAMILIES: tuple[Family, ...] = (
    Family("gpt2", ("gpt2-tiny", "gpt2-openai-layout", "gpt2-sharded-bf16"), "gpt2.md", "gpt2",
           {"gelu": ("sigmoid", "tanh")}),
    Family("llama", ("llama3-tiny", "llama-bigvocab", "llama3-tf5"), "llama-family.md", "llama"),
    Family("qwen2", ("qwen2-tiny", "qwen2-tf5"), "llama-family.md", "qwen2"),
    Family("qwen3", ("qwen3-tiny",), "llama-family.md", "qwen3"),
    Family("smollm3", ("smollm3-tiny", "smollm3-interval"), "llama-family.md", "smollm3"),
    Family("mistral", ("mistral-tiny", "mistral-window"), "mistral-granite.md", "llama"),
    Family("granite", ("granite-tiny",), "mistral-granite.md", "granite"),
    Family("lfm2", ("lfm2-tiny", "lfm2-bias", "lfm2-kernel4"), "lfm2.md", "lfm2"),
    Family("gemma2", ("gemma2-tiny",), "post-norm-decoders.md", "gemma2"),
    Family("gemma3", ("gemma3-tiny", "gemma3-window"), "post-norm-decoders.md", "gemma3",
           {"sliding-window": ("refuse", "band")}),
    Family("olmo2", ("olmo2-tiny",), "post-norm-decoders.md", "olmo2"),
    Family("opt", ("opt-tiny", "opt-postln", "opt-plain"), "opt.md"),
    Family("phi", ("phi2-tiny", "phi-qkln"), "phi-family.md", "phi2", {"gelu": ("sigmoid", "tanh")}),
    Family("phi3", ("phi3-longrope", "phi4mini-tiny"), "phi-family.md", "phi3"),
    Family("stablelm", ("stablelm-tiny", "stablelm-qkln", "stablelm-parallel"), "phi-family.md", "stablelm"),
    Family("gpt_neox", ("neox-parallel", "neox-sequential"), "phi-family.md", "gptneox"),
)

BY_ADAPTER: dict[str, Family] = {f.adapter: f for f in FAMILIES}
BY_FIXTURE: dict[str, Family] = {x: f for f in FAMILIES for x in f.fixtures}


def family_of(fixture: str) -> Family:
    return BY_FIXTURE[fixture]


def representative_fixtures() -> list[str]:
    """One fixture per family, in table order."""
    return [f.fixture for f in FAMILIES]
