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
class Numerics:
    """What tests/numerics exports for a family and judges (test_logits.py,
    test_cache_consistency.py, test_contract.py). An option is "default" (no
    flag) or one choice of the family's `options` (passed as --NAME CHOICE)."""
    options: tuple[str, ...] = ("default",)  # exports every numerics test runs, per fixture and cache
    approximate: tuple[str, ...] = ()  # options that approximate HF: logits judged by direction only
    extra: tuple[tuple[str, int, str], ...] = ()  # more logit-checked exports (fixture, cache, option)
    caches: dict = field(default_factory=dict)  # fixture -> caches, where not 64 and 32 within its limits
    consistency: tuple[str, ...] = ()  # fixtures for cache consistency (empty: the representative)
    consistency_caches: tuple[int, ...] = ()  # caches for cache consistency (empty: every cache)
    contract_caches: tuple[int, ...] = ()  # caches for the contract (empty: every cache)
    short_references: tuple[str, ...] = ()  # fixtures whose references skip lengths 2 and 3


@dataclass(frozen=True)
class Family:
    adapter: str            # the adapter's name (`llm2hef adapters`)
    fixtures: tuple[str, ...]  # tests/fixtures/<name>; the first is the family's representative
    doc: str                # the docs/ page that describes what the export does for the family
    gguf_arch: str | None = None  # llama.cpp's general.architecture, when the GGUF tests cover the family
    options: dict = field(default_factory=dict)  # adapter options a test may pass (name -> choices)
    numerics: Numerics = field(default_factory=Numerics)
    # Fixtures the GGUF round trip converts (tests/cli/gguf_input/test_gguf.py); empty: the representative.
    gguf_variants: tuple[str, ...] = ()

    @property
    def fixture(self) -> str:
        return self.fixtures[0]

    @property
    def gguf_fixtures(self) -> tuple[str, ...]:
        if not self.gguf_arch:
            return ()
        return self.gguf_variants or (self.fixture,)


# Numerics: GPT-2's exact GELU is tanh and its default the sigmoid approximation, both judged;
# gpt2-openai-layout has 128 positions (its second cache, 48, is a reference length); the
# Mistral/Granite/OPT and Phi-family rows run their slower checks at cache 32 only, as their
# per-batch files did, to bound the suite's time.
FAMILIES: tuple[Family, ...] = (
    Family("gpt2", ("gpt2-tiny", "gpt2-openai-layout", "gpt2-sharded-bf16"), "gpt2.md", "gpt2",
           {"gelu": ("sigmoid", "tanh")},
           Numerics(options=("tanh", "default"), approximate=("default",),
                    caches={"gpt2-openai-layout": (128, 48)},
                    consistency=("gpt2-tiny", "gpt2-openai-layout", "gpt2-sharded-bf16"))),
    Family("llama", ("llama3-tiny", "llama-bigvocab", "llama3-tf5"), "llama-family.md", "llama",
           numerics=Numerics(short_references=("llama-bigvocab",))),
    Family("qwen2", ("qwen2-tiny", "qwen2-tf5"), "llama-family.md", "qwen2"),
    Family("qwen3", ("qwen3-tiny",), "llama-family.md", "qwen3"),
    Family("smollm3", ("smollm3-tiny", "smollm3-interval"), "llama-family.md", "smollm3"),
    Family("mistral", ("mistral-tiny", "mistral-window"), "mistral-granite.md", "llama",
           numerics=Numerics(consistency_caches=(32,))),
    Family("granite", ("granite-tiny",), "mistral-granite.md", "granite",
           numerics=Numerics(consistency_caches=(32,))),
    Family("lfm2", ("lfm2-tiny", "lfm2-bias", "lfm2-kernel4"), "lfm2.md", "lfm2",
           numerics=Numerics(consistency=("lfm2-tiny", "lfm2-bias", "lfm2-kernel4"))),
    Family("gemma2", ("gemma2-tiny",), "post-norm-decoders.md", "gemma2"),
    Family("gemma3", ("gemma3-tiny", "gemma3-window"), "post-norm-decoders.md", "gemma3",
           {"sliding-window": ("refuse", "band")},
           Numerics(extra=(("gemma3-window", 64, "band"),))),
    Family("olmo2", ("olmo2-tiny",), "post-norm-decoders.md", "olmo2"),
    Family("opt", ("opt-tiny", "opt-postln", "opt-plain"), "opt.md",
           numerics=Numerics(consistency=("opt-tiny", "opt-postln"), consistency_caches=(32,))),
    Family("phi", ("phi2-tiny", "phi-qkln"), "phi-family.md", "phi2", {"gelu": ("sigmoid", "tanh")},
           Numerics(options=("tanh",), approximate=("sigmoid",), extra=(("phi2-tiny", 64, "sigmoid"),),
                    consistency_caches=(32,), contract_caches=(32,))),
    Family("phi3", ("phi3-longrope", "phi4mini-tiny"), "phi-family.md", "phi3",
           numerics=Numerics(consistency=("phi4mini-tiny",), consistency_caches=(32,), contract_caches=(32,))),
    Family("stablelm", ("stablelm-tiny", "stablelm-qkln", "stablelm-parallel"), "phi-family.md", "stablelm",
           gguf_variants=("stablelm-tiny", "stablelm-qkln", "stablelm-parallel"),
           numerics=Numerics(consistency=("stablelm-parallel",), consistency_caches=(32,), contract_caches=(32,))),
    Family("gpt_neox", ("neox-parallel", "neox-sequential"), "phi-family.md", "gptneox",
           gguf_variants=("neox-parallel", "neox-sequential"),
           numerics=Numerics(consistency=("neox-parallel", "neox-sequential"), consistency_caches=(32,),
                             contract_caches=(32,))),
)

BY_ADAPTER: dict[str, Family] = {f.adapter: f for f in FAMILIES}
BY_FIXTURE: dict[str, Family] = {x: f for f in FAMILIES for x in f.fixtures}


def family_of(fixture: str) -> Family:
    return BY_FIXTURE[fixture]


def representative_fixtures() -> list[str]:
    """One fixture per family, in table order."""
    return [f.fixture for f in FAMILIES]


def gguf_fixtures() -> list[str]:
    """Every fixture the GGUF round trip converts, in table order."""
    return [x for f in FAMILIES for x in f.gguf_fixtures]
