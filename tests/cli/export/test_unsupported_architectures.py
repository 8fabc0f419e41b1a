"""Architectures no adapter can take (issue 28, section 4): a mixture of experts
or a state-space model is told why, by `inspect` and `export` alike (exit 4,
no hint to force an adapter), also when an adapter is forced; an unknown dense
architecture still gets the hint."""
from __future__ import annotations

import json
import shutil

import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


def copy_fixture(tmp_path, name="qwen2-tiny", edit=None):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    if edit:
        cfg = json.loads((dst / "config.json").read_text())
        edit(cfg)
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


@pytest.mark.parametrize("edit,why", [
    (lambda c: c.update(architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=8,
                        num_experts_per_tok=2), "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=60),
     "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["MambaForCausalLM"], model_type="mamba", state_size=16),
     "state-space model, not a transformer decoder"),
])
def test_unsupported_kinds_are_told_why(tmp_path, edit, why):
    model = copy_fixture(tmp_path, edit=edit)
    for cmd in (["inspect", model], ["export", model, "-o", tmp_path / "out", "--cache", 32]):
        r = run(*cmd)
        assert r.returncode == 4, r.stderr
        assert why in r.stderr
        assert "pass --adapter" not in r.stderr and "force" not in r.stderr


def test_forcing_an_adapter_on_a_mixture_of_experts_is_refused_with_the_reason(tmp_path):
    model = copy_fixture(tmp_path, edit=lambda c: c.update(architectures=["MixtralForCausalLM"], model_type="mixtral",
                                                            num_local_experts=8))
    r = run("export", model, "-o", tmp_path / "out", "--cache", 32, "--adapter", "qwen2")
    assert r.returncode == 4
    assert "--adapter qwen2 cannot export this model: mixture of experts: not supported" in r.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_dense_architecture_still_gets_the_adapter_hint(tmp_path):
    model = copy_fixture(tmp_path, edit=lambda c: c.update(architectures=["FooForCausalLM"], model_type="foo"))
    r = run("inspect", model)
    assert r.returncode == 4
    assert "--adapter NAME to force one" in r.stderr
