"""A complete manifest.json of the form `llm2hef export` writes (version 2,
registry/schema/export-manifest.schema.json), for tests that need one around a
HAR or HEF the suite builds itself rather than around a real export."""
from __future__ import annotations


def manifest(*, hidden, layers, vocab, heads, kv_heads, head_dim, cache, prefill, theta_length, shards,
             scope="tiny", adapter="gpt2", roles=None):
    roles = roles or ["embeddings", "attention_mask", "pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin"]

    def shape(role):
        if role == "embeddings":
            return [1, cache, hidden]
        if role == "attention_mask":
            return [1, 1, cache, heads * cache]
        return [1, cache, theta_length]

    return {
        "manifest_version": 2,
        "llm2hef_version": "0.1.0",
        "adapter": {"name": adapter, "version": "1.0.0", "file": "", "matched_by": "--adapter", "matched": adapter,
                    "passed_over": []},
        "model": {"name": scope, "dir": "/nonexistent/" + scope, "architectures": [], "model_type": "gpt2"},
        "cache_size": cache, "prefill": prefill,
        "dims": {"hidden": hidden, "layers": layers, "vocab": vocab, "heads": heads, "kv_heads": kv_heads,
                 "head_dim": head_dim, "intermediate": 4 * hidden},
        "theta_length": theta_length,
        "pe_tiles": {"q": heads, "k": kv_heads},
        "inputs": [{"name": r, "role": r, "shape": shape(r), "dfc_layer": "input_layer%d" % i,
                    "dfc_format": ["BATCH", "HEIGHT", "WIDTH", "CHANNELS"] if r == "attention_mask"
                    else ["BATCH", "WIDTH", "CHANNELS"]} for i, r in enumerate(roles, start=1)],
        "outputs": [{"name": "logits", "shape": [1, 1, vocab]}],
        "lm_head_shards": shards, "lm_head_shard_reason": "test",
        "options": {}, "rewrites": [], "notes": [], "resource_changes": [], "graph_annotations": {},
        "dfc": {"scope": scope, "calib_size": 8, "network_groups": [scope + "__prefill", scope + "__tbt"]},
        "files": {},
    }
