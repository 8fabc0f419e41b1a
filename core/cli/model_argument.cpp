#include "model_argument.hpp"

#include <system_error>

#include "llm2hef/core/hub/hub_fetch.hpp"
#include "llm2hef/core/hub/hub_id.hpp"
#include "llm2hef/core/hub/hub_settings.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace fs = std::filesystem;

const char* const kModelArgumentHelp = R"(MODEL is a checkpoint folder, a .gguf file, or a Hugging Face Hub id:
ORG/NAME, ORG/NAME@REVISION (branch, tag or commit), ORG/NAME/FILE.gguf or
ORG/NAME --gguf-file FILE for a GGUF in the repository. A Hub id's files
(config, safetensors or the one GGUF, tokenizer and chat template files;
nothing else) are downloaded into the Hugging Face cache, where hf,
transformers and later runs find them: HF_HUB_CACHE, else HF_HOME/hub, else
~/.cache/huggingface/hub. Downloads resume, and each file is checked
against the hash the Hub gives (sha256 for LFS files). HF_TOKEN (a gated or private model),
HF_ENDPOINT and HF_HUB_OFFLINE (the cache only) are honoured. A local path
that exists always wins over a Hub id of the same spelling (docs/hub.md).
)";

fs::path model_argument(const std::string& text, const ModelArgumentOptions& options) {
  std::error_code ec;
  const bool local = fs::exists(fs::symlink_status(text, ec));
  if (local) {
    if (!options.gguf_file.empty())
      throw UsageError("--gguf-file picks a file in a Hugging Face Hub repository; '" + text +
                       "' is a local path: give the .gguf file's own path instead");
    return text;
  }
  std::optional<core::hub::HubId> id = core::hub::parse_hub_id(text);
  if (!id) {
    if (!options.gguf_file.empty())
      throw UsageError("--gguf-file needs a Hugging Face Hub id (ORG/NAME); '" + text + "' is not one");
    return text;
  }
  if (!options.gguf_file.empty()) {
    if (!id->file.empty())
      throw UsageError("'" + text + "' names a file already; --gguf-file " + options.gguf_file + " contradicts it");
    if (!core::hub::is_safe_repo_path(options.gguf_file))
      throw UsageError("--gguf-file '" + options.gguf_file + "': not a relative path inside a repository");
    id->file = options.gguf_file;
  }
  const core::hub::HubSettings settings = core::hub::hub_settings_from_environment();
  if (options.before_fetch) options.before_fetch(core::hub::repo_cache_dir(settings.cache, id->repo));
  return core::hub::fetch_from_hub(*id, settings, {options.progress, options.quiet});
}

}  // namespace llm2hef::cli
