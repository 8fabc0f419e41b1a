// `llm2hef inspect|export ORG/NAME`: the files an export reads, fetched from
// the Hugging Face Hub into its cache (docs/hub.md).
//
// Layout as huggingface_hub writes it (file_download.py), so that `hf`,
// transformers and later runs reuse what is fetched:
//   <cache>/models--ORG--NAME/blobs/<sha256 of an LFS file, or the git blob id>
//   <cache>/models--ORG--NAME/snapshots/<commit>/<file> -> ../../blobs/<...>
//   <cache>/models--ORG--NAME/refs/<revision>   (the commit it resolved to)
// A file is fetched into blobs/<id>.incomplete (resumed from there with a
// Range request), checked (its size, and for an LFS file the sha256 the
// Hub's metadata gives), and only then renamed to blobs/<id> and linked
// into snapshots/: nothing there is ever partial or unchecked.
#pragma once

#include <filesystem>

#include "llm2hef/core/hub/hub_id.hpp"
#include "llm2hef/core/hub/hub_settings.hpp"

namespace llm2hef::core::hub {

struct FetchOptions {
  bool progress = false;  // draw a bar (only on a terminal)
  bool quiet = false;     // no line about what is fetched
};

// Fetches what `id` needs and returns the local path to read: the snapshot
// folder (config.json, tokenizer and chat template files, the safetensors
// and their index) or the GGUF file in it (with every part of a split set).
// Offline (settings.offline), the cache alone is used: BadInput naming what
// is missing. Errors are BadInput (exit 3): an unknown repository or
// revision, a gated or private one (with what to do), a file failing its
// check (removed), a transfer that failed (what arrived is kept, resumed by
// the next run).
std::filesystem::path fetch_from_hub(const HubId& id, const HubSettings& settings, const FetchOptions& options);

}  // namespace llm2hef::core::hub
