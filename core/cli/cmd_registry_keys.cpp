// `llm2hef registry keys list|add|remove|generate`, `registry sign` and
// `registry collect`: the trust store and the publisher's side of an index
// (docs/registry.md).
#include <sys/stat.h>

#include <iostream>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "cmd_registry_client.hpp"
#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/io/terminal_text.hpp"
#include "llm2hef/registry/index_collect.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/signing.hpp"
#include "llm2hef/registry/temp_file.hpp"
#include "llm2hef/registry/trusted_keys.hpp"
#include "llm2hef/registry/user_dirs.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace llm2hef::cli {

namespace {

constexpr const char* kKeysHelp = R"(Usage: llm2hef registry keys COMMAND ...

The public keys an index signature may be made with: the user's
($XDG_CONFIG_HOME/llm2hef/trusted-keys, default ~/.config/llm2hef/trusted-keys)
and those shipped with llm2hef (<prefix>/share/llm2hef/keys, or
$LLM2HEF_SHIPPED_KEYS_DIR).

  list [--json]                 every trusted key: id, origin, comment, file
  add FILE [--json]             trust a public key file
  remove ID                     stop trusting a key the user added
  generate PREFIX [--comment T] a new ed25519 key pair: PREFIX.key (secret,
                                mode 0600) and PREFIX.pub
)";

constexpr const char* kKeysListHelp = R"(Usage: llm2hef registry keys list [--json]

Every trusted key: the user's first, then those shipped with llm2hef.

{options}

Exit status: 0 ok, 3 a key file that does not read.
)";

constexpr const char* kKeysAddHelp = R"(Usage: llm2hef registry keys add FILE [--json]

Trusts the public key in FILE (as `registry keys generate` writes it): it is
checked, then stored as <key id>.pub in the user's trusted keys.

{options}

Exit status: 0 added, 2 already trusted, 3 not a public key file.
)";

constexpr const char* kKeysRemoveHelp = R"(Usage: llm2hef registry keys remove ID

Stops trusting the user's key with this id (`registry keys list`). A key
shipped with llm2hef is not removed this way.

Exit status: 0 removed, 2 no such user key.
)";

constexpr const char* kKeysGenerateHelp = R"(Usage: llm2hef registry keys generate PREFIX [--comment TEXT]

Makes a new ed25519 key pair for signing an index: PREFIX.key holds the
secret key (mode 0600: keep it off shared machines and out of repositories),
PREFIX.pub the public key to hand to users (`registry keys add`). Neither file
may exist.

{options}

Exit status: 0 written, 2 a file exists.
)";

constexpr const char* kSignHelp = R"(Usage: llm2hef registry sign INDEX --key SECRET [-o FILE] [--force]

Signs an index file (ed25519 over its exact bytes) with the secret key
SECRET (from `registry keys generate`), writing the detached signature to
INDEX.sig (or FILE). Publish it next to the index; any later change to the
index makes `search` and `install` refuse it.

{options}

Exit status: 0 signed, 2 usage, 3 not an index or not a secret key.
)";

constexpr const char* kCollectHelp = R"(Usage: llm2hef registry collect DIR [--first-party INDEX] [-o FILE] [--force]

Assembles an index from the reviewed entries in DIR (registry/index/ in the
repository: one manifest per published version, <name>/<version>.json).
Every entry must pass the manifest schema and say where its library is
fetched from (library.url), its size and the SDK fingerprint; no
name@version may appear twice, no library file name be shared by two
adapters, and (with --first-party) no name be a first-party adapter's.

{options}

Exit status: 0 written, 2 usage, 3 an entry that fails a check (named).
)";

struct KeysListArgs {
  bool json = false;
};

int keys_list(const KeysListArgs& a) {
  json rows = json::array();
  for (const auto& t : registry::trusted_keys())
    rows.push_back(
        {{"key_id", t.key.key_id}, {"origin", t.origin}, {"comment", t.key.comment}, {"file", t.key.file.string()}});
  if (a.json) {
    std::cout << core::json_text(json{{"user_folder", registry::trusted_key_dir().string()},
                                      {"shipped_folder", registry::shipped_key_dir().string()},
                                      {"keys", rows}},
                                 2)
              << "\n";
    return 0;
  }
  if (rows.empty()) std::cout << "no trusted key (add one with `llm2hef registry keys add FILE`)\n";
  // A comment comes from whoever made the key: it could fake other lines of the list.
  for (const auto& r : rows)
    std::cout << r["key_id"].get<std::string>() << "  " << r["origin"].get<std::string>() << "  "
              << core::printable(r["comment"].get<std::string>()) << "  "
              << core::printable(r["file"].get<std::string>()) << "\n";
  return 0;
}

struct KeysAddArgs {
  std::string file;
  bool json = false;
};

int keys_add(const KeysAddArgs& a) {
  const registry::PublicKey key = registry::add_trusted_key(a.file);
  if (a.json)
    std::cout << core::json_text(json{{"key_id", key.key_id}, {"comment", key.comment}, {"file", key.file.string()}}, 2)
              << "\n";
  else
    std::cout << "trusted key " << key.key_id << (key.comment.empty() ? "" : " (" + core::printable(key.comment) + ")")
              << " -> " << core::printable(key.file.string()) << "\n";
  return 0;
}

struct KeysRemoveArgs {
  std::string id;
};

int keys_remove(const KeysRemoveArgs& a) {
  registry::remove_trusted_key(a.id);
  std::cout << "key " << a.id << " is no longer trusted\n";
  return 0;
}

struct KeysGenerateArgs {
  std::string prefix, comment;
};

int keys_generate(const KeysGenerateArgs& a) {
  const fs::path secret = a.prefix + ".key", pub = a.prefix + ".pub";
  core::check_file_output(secret, false);
  core::check_file_output(pub, false);
  const registry::KeyPair pair = registry::generate_key_pair(a.comment);
  // The secret is readable by its owner only, from the moment it exists.
  registry::write_new_file(secret, core::json_text(registry::secret_key_json(pair), 2) + "\n", 0600);
  registry::write_new_file(pub, core::json_text(registry::public_key_json(pair.public_key), 2) + "\n");
  std::cout << "key " << pair.public_key.key_id << ": secret " << secret.string() << ", public " << pub.string()
            << "\n";
  return 0;
}

struct SignArgs {
  std::string index, key, output;
  bool force = false;
};

// A secret key others can read is no longer secret; signing still works, so
// this warns (the publisher may be on a machine of their own) instead of refusing.
void warn_if_readable_by_others(const fs::path& secret) {
  struct stat st {};
  if (::stat(secret.c_str(), &st) != 0 || (st.st_mode & (S_IRGRP | S_IROTH)) == 0) return;
  spdlog::warn(
      "{}: the secret key is readable by {}; anyone who can read it can sign indexes as you (fix: chmod 600 {})",
      secret.string(), (st.st_mode & S_IROTH) ? "every user" : "its group", secret.string());
}

// `--force` replaces a previous signature, nothing else: `-o K.pub --force`
// used to overwrite the public key itself.
void refuse_to_replace_other_than_a_signature(const std::string& output, const json& format) {
  std::error_code ec;
  if (!std::filesystem::exists(output, ec)) return;
  json doc;
  try {
    doc = sdk::parse_json(core::RegularFile(output).read_all(sdk::JsonLimits::kSmallFileBytes), output,
                          sdk::JsonLimits::small_file());
  } catch (const Error&) {
  }
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != format)
    throw UsageError(output + ": exists and is not a signature (no \"format\": " + format.dump() +
                     "); not replaced, even with --force");
}

int sign(const SignArgs& a, const CLI::App& command) {
  const std::string output = command.count("--output") ? a.output : a.index + ".sig";
  core::check_file_output(output, a.force, {{"the index", a.index, {}}, {"the secret key (--key)", a.key, {}}});
  const std::string text = core::RegularFile(a.index).read_all(sdk::JsonLimits::kSmallFileBytes);
  // The client refuses an index that starts with a byte order mark
  // (index_client.cpp): signing one would publish an index nobody can use.
  if (text.starts_with("\xEF\xBB\xBF"))
    throw BadInput(a.index +
                   ": starts with a UTF-8 byte order mark, which `registry install` refuses in an index; "
                   "remove the first three bytes and sign again");
  const json doc = sdk::parse_json(text, a.index, sdk::JsonLimits::small_file());
  if (!registry::is_index(doc)) throw BadInput(a.index + ": field 'index_version': missing, not an index");
  const registry::KeyPair key = registry::read_secret_key(a.key);
  warn_if_readable_by_others(a.key);
  const json signature = registry::sign(text, key);
  refuse_to_replace_other_than_a_signature(output, signature["format"]);
  core::write_file_atomic(output, core::json_text(signature, 2) + "\n", a.force);
  std::cout << "signed " << a.index << " with key " << key.public_key.key_id << " -> " << output << "\n";
  return 0;
}

struct CollectArgs {
  std::string dir, first_party, output;
  bool force = false;
};

int collect(const CollectArgs& a, const CLI::App& command) {
  const bool to_file = command.count("--output") > 0;
  if (to_file) {
    // collect reads every *.json below DIR outside hidden folders; anything
    // else in DIR (an index.json next to the entries is one) may be written.
    auto reads_entry = [](const fs::path& relative) {
      for (const auto& part : relative)
        if (part.string().starts_with(".")) return false;
      return relative.extension() == ".json";
    };
    std::vector<core::CommandInput> inputs{{"the entries folder", a.dir, reads_entry}};
    if (command.count("--first-party")) inputs.push_back({"the first-party index (--first-party)", a.first_party, {}});
    core::check_file_output(a.output, a.force, inputs);
  }
  std::vector<std::string> first_party;
  if (command.count("--first-party")) first_party = registry::index_names(a.first_party);
  const json index = registry::collect_index(a.dir, first_party);
  const std::string text = core::json_text(index, 2) + "\n";
  if (to_file)
    core::write_file_atomic(a.output, text, a.force);
  else
    std::cout << text;
  if (to_file)
    std::cerr << index["adapters"].size() << " entr" << (index["adapters"].size() == 1 ? "y" : "ies") << " -> "
              << a.output << "\n";
  return 0;
}

}  // namespace

void add_registry_keys_commands(CommandLine& cli, CLI::App& group) {
  CLI::App* keys = cli.add_group(group, "keys", kKeysHelp);

  auto list_args = std::make_shared<KeysListArgs>();
  CLI::App* app =
      cli.add_command(*keys, "list", kKeysListHelp, [list_args](Invocation&) { return keys_list(*list_args); });
  OptionRows& list_rows = cli.options(*app, 10);
  list_rows.add(app->add_flag("--json", list_args->json), "", "as JSON on stdout");

  auto add_args = std::make_shared<KeysAddArgs>();
  app = cli.add_command(*keys, "add", kKeysAddHelp, [add_args](Invocation&) { return keys_add(*add_args); });
  app->add_option("FILE", add_args->file)->required();
  OptionRows& add_rows = cli.options(*app, 10);
  add_rows.add(app->add_flag("--json", add_args->json), "", "the key added, as JSON on stdout");

  auto remove_args = std::make_shared<KeysRemoveArgs>();
  app = cli.add_command(*keys, "remove", kKeysRemoveHelp,
                        [remove_args](Invocation&) { return keys_remove(*remove_args); });
  app->add_option("ID", remove_args->id)->required();

  auto generate_args = std::make_shared<KeysGenerateArgs>();
  app = cli.add_command(*keys, "generate", kKeysGenerateHelp,
                        [generate_args](Invocation&) { return keys_generate(*generate_args); });
  app->add_option("PREFIX", generate_args->prefix)->required();
  OptionRows& generate_rows = cli.options(*app, 18);
  generate_rows.add(app->add_option("--comment", generate_args->comment), "TEXT",
                    "who the key belongs to, stored in both files");

  auto sign_args = std::make_shared<SignArgs>();
  app = cli.add_command(group, "sign", kSignHelp,
                        [sign_args](Invocation& inv) { return sign(*sign_args, inv.command()); });
  app->add_option("INDEX", sign_args->index)->required();
  OptionRows& sign_rows = cli.options(*app, 21);
  sign_rows.add(app->add_option("--key", sign_args->key)->required(), "SECRET", "the secret key file");
  sign_rows.add(app->add_option("-o,--output", sign_args->output), "FILE", "the signature file (default INDEX.sig)");
  sign_rows.add(app->add_flag("--force", sign_args->force), "", "replace FILE if it exists");

  auto collect_args = std::make_shared<CollectArgs>();
  app = cli.add_command(group, "collect", kCollectHelp,
                        [collect_args](Invocation& inv) { return collect(*collect_args, inv.command()); });
  app->add_option("DIR", collect_args->dir)->required();
  OptionRows& collect_rows = cli.options(*app, 23);
  collect_rows.add(app->add_option("--first-party", collect_args->first_party), "INDEX",
                   "the first-party index (build/adapters/index.json)");
  collect_rows.add(app->add_option("-o,--output", collect_args->output), "FILE", "write FILE instead of stdout");
  collect_rows.add(app->add_flag("--force", collect_args->force), "", "replace FILE if it exists");
}

}  // namespace llm2hef::cli
