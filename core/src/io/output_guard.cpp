#include "llm2hef/core/io/output_guard.hpp"

#include <system_error>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// True when `inner` is `outer` or lies below it (both already canonical).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

fs::path canonical_or_weak(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(p, ec);
  return ec ? fs::absolute(p) : c;
}

std::string kind_of(fs::file_type t) {
  switch (t) {
    case fs::file_type::directory: return "a folder";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::symlink: return "a dangling link";
    default: return "not a regular file";
  }
}

}  // namespace

void check_output_is_not_input(const fs::path& output, const std::vector<CommandInput>& inputs) {
  const fs::path out = canonical_or_weak(output);
  for (const CommandInput& input : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(input.path, ec);
    if (!fs::exists(st)) continue;
    const fs::path in = canonical_or_weak(input.path);
    const std::string named = input.role + " " + input.path.string();
    // equivalent() also catches a hard link, which no path comparison sees.
    if (out == in || fs::equivalent(output, input.path, ec))
      throw UsageError(output.string() + ": is " + named +
                       "; the output never replaces an input of the same command (choose another -o)");
    if (fs::is_directory(st) && is_within(out, in) && (!input.reads || input.reads(out.lexically_relative(in))))
      throw UsageError(output.string() + ": lies inside " + named +
                       ", which this command reads; the output is never written among its inputs (choose another -o)");
    if (is_within(in, out))
      throw UsageError(output.string() + ": contains " + named +
                       "; replacing it would delete an input of the same command (choose another -o)");
  }
}

void check_export_output(const fs::path& output, const fs::path& model_dir, bool force,
                         const std::vector<CommandInput>& other_inputs) {
  std::error_code ec;
  const fs::file_status st = fs::status(output, ec);
  if (!fs::exists(st)) return;
  if (!fs::is_directory(st))
    throw UsageError(output.string() + ": exists and is " +
                     (fs::is_regular_file(st) ? std::string("a file") : kind_of(st.type())) +
                     "; the export output must be a folder (choose another -o)");
  const fs::path out = canonical_or_weak(output), in = canonical_or_weak(model_dir);
  if (is_within(in, out))
    throw UsageError(output.string() + ": is the checkpoint folder " + model_dir.string() +
                     (out == in ? "" : " or contains it") +
                     "; replacing it would delete the checkpoint (choose another -o)");
  if (is_within(out, in))
    throw UsageError(output.string() + ": lies inside the checkpoint folder " + model_dir.string() +
                     "; llm2hef never replaces anything inside its input (choose a folder outside it)");
  check_output_is_not_input(output, other_inputs);
  if (!force) throw UsageError(output.string() + ": already exists (pass --force to replace it)");
  if (!fs::is_regular_file(output / "manifest.json", ec))
    throw UsageError(output.string() +
                     ": exists but holds no manifest.json, so it is not a previous llm2hef export; "
                     "--force only replaces a previous export (remove the folder yourself or choose another -o)");
}

void check_file_output(const fs::path& output, bool force, const std::vector<CommandInput>& inputs) {
  check_output_is_not_input(output, inputs);
  std::error_code ec;
  const fs::file_status st = fs::status(output, ec);
  if (!fs::exists(st)) {
    if (fs::is_symlink(fs::symlink_status(output, ec)))
      throw UsageError(output.string() + ": is a dangling link; not replaced");
    return;
  }
  if (!fs::is_regular_file(st))
    throw UsageError(output.string() + ": exists and is " + kind_of(st.type()) +
                     "; only a regular file can be replaced, even with --force");
  if (!force) throw UsageError(output.string() + ": already exists (pass --force to replace it)");
}

}  // namespace llm2hef::core
