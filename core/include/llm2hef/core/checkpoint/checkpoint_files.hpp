// Which files a checkpoint folder may give llm2hef to read: those inside it.
//
// A checkpoint's files end up in what export writes (the chat template in
// hailo-config.json, the HEF and the hailo-ollama manifest; tokenizer.json in
// the HEF), so a link in a downloaded folder must not make llm2hef read and
// publish some other file of the machine's (`chat_template.jinja ->
// ~/.ssh/id_ed25519`). One rule for every file a checkpoint folder holds,
// applied where the file is looked up: its path, links resolved, must lie in
// the checkpoint's bounds.
#pragma once

#include <filesystem>
#include <optional>

namespace llm2hef::core {

// The Hugging Face cache repository folder (<cache>/models--ORG--NAME) when
// `real_dir`, a path with links resolved, is one of its snapshots
// (models--ORG--NAME/snapshots/<commit>).
std::optional<std::filesystem::path> hf_cache_repository(const std::filesystem::path& real_dir);

// The folder the files of checkpoint folder `dir` must resolve into: `dir`,
// links resolved; for a Hugging Face cache snapshot, whose files are links to
// ../../blobs/<hash>, the repository folder models--ORG--NAME.
std::filesystem::path checkpoint_bounds(const std::filesystem::path& dir);

// Whether `file`, a path in checkpoint folder `dir`, is there (as
// is_present_file). Throws BadInput naming `file` and where it leads when it
// is a symbolic link, or lies behind one, that resolves outside
// checkpoint_bounds(dir).
bool checkpoint_has_file(const std::filesystem::path& dir, const std::filesystem::path& file);

}  // namespace llm2hef::core
