#include "llm2hef/core/hef/hef_patch.hpp"
#include "hailo_config_rules.hpp"
#include "llm2hef/core/io/atomic_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/proto_wire.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace fs = std::filesystem;

namespace {

// Kept last for optimize_memory_on_device (hef.cpp 4359-4360).
constexpr const char* kLocalResources[] = {kResourceTokenizer, kResourceEmbeddings};
// The CCW section's alignment: kept by resizing the padding (the header
// comment in RT calls it "padding for 4k alignment").
constexpr int64_t kCcwAlignment = 4096;
// A moved resource keeps its offset modulo this (any alignment the DFC gave it up to 8).
constexpr uint64_t kResourceAlignment = 8;

bool is_local(const std::string& name) {
  for (const char* n : kLocalResources)
    if (name == n) return true;
  return false;
}

// The resource message with offset (1) and, when given, size (2) and xxhash
// (4) replaced; every other field kept byte for byte.
std::string patched_resource(std::string_view msg, uint64_t offset, std::optional<uint64_t> size,
                             std::optional<uint64_t> xxhash, const std::string& ctx) {
  std::string out;
  bool wrote[5] = {};
  for (const auto& f : read_fields(msg, ctx)) {
    const std::optional<uint64_t> value = f.number == 1   ? std::optional<uint64_t>(offset)
                                          : f.number == 2 ? size
                                          : f.number == 4 ? xxhash
                                                          : std::nullopt;
    if (value) {
      if (!wrote[f.number]) put_varint_field(out, f.number, *value);
      wrote[f.number] = true;
    } else {
      out.append(f.raw);
    }
  }
  if (!wrote[1]) put_varint_field(out, 1, offset);
  if (size && !wrote[2]) put_varint_field(out, 2, *size);
  if (xxhash && !wrote[4]) put_varint_field(out, 4, *xxhash);
  return out;
}

std::string refusal(const std::string& what, const std::vector<rules::Finding>& problems) {
  std::string msg = what;
  for (const auto& p : problems)
    if (p.severity == rules::Severity::error) msg += "\n  " + rules::finding_tag(p) + " " + p.message;
  return msg;
}

// Where each resource goes in the new file, offsets relative to the zero point.
struct Placement {
  size_t proto_index = 0;
  uint64_t old_offset = 0, new_offset = 0, size = 0;
  std::string name;
};

// The new file's layout, offsets relative to the zero point.
struct Layout {
  uint64_t old_zero = 0;          // the input's zero point (where its CCWs start)
  uint64_t tail = 0;              // the input's bytes from its zero point on
  uint64_t ccws_real = 0;         // the CCWs without their padding
  uint64_t cut = 0;               // where the prefix copied unchanged ends
  std::vector<Placement> placed;  // the moved resources but the config, in write order
  uint64_t new_tail = 0;          // the new file's bytes from its zero point on
};

// The error findings of a check, by rule and message.
using ErrorSet = std::set<std::pair<std::string, std::string>>;

// A config the genai server would reject or misread, refused on its own.
void refuse_invalid_config(const std::string& config_text) {
  std::vector<rules::Finding> problems = check_hailo_config_text(config_text, "new hailo-config.json");
  for (const auto& p : problems)
    if (p.severity == rules::Severity::error)
      throw BadInput(
          refusal("the new hailo-config.json is refused (the genai server would reject or misread it):", problems));
}

void check_output_path(const fs::path& input, const fs::path& output, bool replace) {
  std::error_code ec;
  if (fs::exists(output, ec)) {
    if (fs::equivalent(input, output, ec)) throw UsageError(output.string() + ": is the input; write to another file");
    if (!replace) throw UsageError(output.string() + ": already exists (pass --force to replace it)");
  }
}

// The config resource of a HEF whose header this rewrite knows.
const Resource& editable_config_resource(const fs::path& input, const HefInfo& info) {
  if (info.header.version != 3)
    throw Unsupported(input.string() + ": header version " + std::to_string(info.header.version) +
                      "; set-config edits version 3 HEFs (what DFC 5.x writes and genai loads), whose header has an "
                      "additional_info section");
  const Resource* old_cfg = info.resource(kResourceHailoConfig);
  if (!old_cfg) throw BadInput(input.string() + ": has no hailo-config.json resource to replace");
  return *old_cfg;
}

// Every resource but the config is copied verbatim, and its stored XXH3
// with it: a damaged input would become a damaged output that looks freshly
// written. Refused here, naming the resource (hailort refuses it at load).
void refuse_damaged_resources(const fs::path& input, const ByteSource& src, const HefInfo& info) {
  const ChecksumReport sums = verify_checksums(src, info, UINT64_MAX, false);
  for (size_t i = 0; i < info.resources.size() && i < sums.resources.size(); ++i)
    if (sums.resources[i] == ChecksumStatus::mismatch && info.resources[i].name != kResourceHailoConfig)
      throw BadInput(input.string() + ": resource '" + info.resources[i].name +
                     "': its bytes do not match the stored XXH3 (hailort refuses it: \"Resource checksum does not "
                     "match\"); the input HEF is damaged, so set-config does not copy it");
}

// The new config against the HEF it patches: the rules of `hef check` that
// depend on it. Refuses a contradiction; keeps every finding about the config
// itself (its own rule table: stop tokens, the chat template) and the lesser
// findings of the HEF rules it feeds in `findings`. Returns the errors the
// input already has with the new config: what the rewrite itself must not add
// to (a HEF already failing `hef check` for reasons the config does not touch
// can still get a new config).
ErrorSet check_config_against_hef(const fs::path& input, const ByteSource& src, const HefInfo& info,
                                  const std::string& config_text, bool hailo_ollama,
                                  std::vector<rules::Finding>& findings) {
  ErrorSet errors_before;
  ContractOptions opt;
  opt.config_override = config_text;
  opt.hailo_ollama = hailo_ollama;
  opt.checksum_limit = 0;  // only the config-dependent rules matter here
  const rules::Report rep = check_hef_contract(src, info, opt);
  for (const auto& f : rep.findings)
    if (f.severity == rules::Severity::error) errors_before.emplace(f.rule, f.message);
  const auto& rules = config_dependent_rules();
  if (rep.errors_in(rules) > 0) {
    std::vector<rules::Finding> relevant;
    for (const auto& f : rep.findings)
      if (std::find(rules.begin(), rules.end(), f.rule) != rules.end()) relevant.push_back(f);
    throw BadInput(refusal("the new hailo-config.json contradicts " + input.string() + ":", relevant));
  }
  if (rep.errors_in({"chat-template-ollama"}) > 0)
    throw Unsupported(refusal(
        "the new hailo-config.json's chat template uses what hailo-ollama's older minja lacks (pass --genai-only if "
        "hailo-ollama will not serve the output):",
        rep.findings));
  auto about_the_config = [](const std::string& rule) {
    for (const auto& r : hailo_config_rule_table())
      if (rule == r.name) return true;
    return false;
  };
  for (const auto& f : rep.findings)
    if (about_the_config(f.rule) ||
        (f.severity != rules::Severity::error && std::find(rules.begin(), rules.end(), f.rule) != rules.end()))
      findings.push_back(f);
  return errors_before;
}

// Where the copied-unchanged prefix ends: tokenizer.json and embeddings.bin,
// and everything after the first of them, are moved. A previous config right
// before them (an earlier set-config; at most an alignment gap between) is
// reclaimed.
uint64_t find_cut(const fs::path& input, const HefInfo& info, const Resource& old_cfg, uint64_t ccws_real,
                  uint64_t tail) {
  uint64_t cut = tail;
  for (const auto& r : info.resources)
    if (is_local(r.name)) cut = std::min(cut, r.offset);
  const uint64_t cfg_end = old_cfg.offset + old_cfg.size;
  if (cfg_end <= cut && cut - cfg_end < kResourceAlignment && old_cfg.offset >= ccws_real) {
    bool shared = false;
    for (const auto& r : info.resources)
      shared = shared || (&r != &old_cfg && r.offset < cut && r.offset + r.size > old_cfg.offset);
    if (!shared) cut = old_cfg.offset;
  }
  if (cut < ccws_real)
    throw BadInput(input.string() +
                   ": tokenizer.json or embeddings.bin lies inside the CCW section; set-config "
                   "cannot move it");
  for (const auto& r : info.resources)
    if (r.offset < cut && r.offset + r.size > cut)
      throw BadInput(input.string() + ": resource '" + r.name +
                     "' straddles the start of tokenizer.json / "
                     "embeddings.bin; set-config cannot lay the file out with them last");
  return cut;
}

// New places: the prefix keeps its offsets; moved resources in their old
// order, other ones first, then the config, then tokenizer and embeddings.
// Fills the result's config place, sizes and moved names.
Layout lay_out(const fs::path& input, const HefInfo& info, const Resource& old_cfg, const std::string& config_text,
               SetConfigResult& res) {
  const HefHeader& h = info.header;
  Layout l;
  l.old_zero = h.zero_point();
  l.tail = info.file_size - l.old_zero;
  l.ccws_real = h.ccws_size - h.padding_size;
  if (l.tail < l.ccws_real)
    throw BadInput(input.string() +
                   ": the file ends inside its CCW section (ccws_size_with_padding - hef_padding_size = " +
                   std::to_string(l.ccws_real) + " bytes, " + std::to_string(l.tail) + " present)");
  l.cut = find_cut(input, info, old_cfg, l.ccws_real, l.tail);

  std::vector<const Resource*> after;
  for (const auto& r : info.resources)
    if (r.offset >= l.cut && &r != &old_cfg) after.push_back(&r);
  std::stable_sort(after.begin(), after.end(), [](const Resource* a, const Resource* b) {
    if (is_local(a->name) != is_local(b->name)) return !is_local(a->name);
    return a->offset < b->offset;
  });
  uint64_t pos = l.cut;
  auto place = [&](const Resource* r) {
    pos += (r->offset - pos) % kResourceAlignment;  // same offset modulo 8 as before
    l.placed.push_back({r->proto_index, r->offset, pos, r->size, r->name});
    pos += r->size;
  };
  uint64_t covered = 0;
  for (const Resource* r : after) {
    if (is_local(r->name)) continue;
    place(r);
    covered += r->size;
  }
  res.config_offset = pos;
  res.config_size = config_text.size();
  res.config_xxh3 = XXH3_64bits(config_text.data(), config_text.size());
  pos += config_text.size();
  for (const Resource* r : after) {
    if (!is_local(r->name)) continue;
    place(r);
    covered += r->size;
  }
  l.new_tail = pos;
  res.old_size = info.file_size;
  res.dead_bytes = old_cfg.offset < l.cut ? old_cfg.size : 0;
  const uint64_t old_cfg_after = old_cfg.offset >= l.cut ? old_cfg.size : 0;
  res.dropped_bytes = l.tail - l.cut - std::min(l.tail - l.cut, covered + old_cfg_after);
  for (const auto& p : l.placed)
    if (p.new_offset != p.old_offset) res.moved.push_back(p.name);
  return l;
}

// The new proto: top-level fields verbatim, the placed resources re-encoded.
std::string patched_proto(const fs::path& input, const std::string& old_proto, const Resource& old_cfg,
                          const Layout& layout, const SetConfigResult& res) {
  const std::string ctx = input.string() + ": ProtoHEFHef";
  std::string proto;
  proto.reserve(old_proto.size() + 64);
  size_t resource_index = 0;
  for (const auto& f : read_fields(old_proto, ctx)) {
    if (f.number != 7 || f.type != WireType::bytes) {
      proto.append(f.raw);
      continue;
    }
    const size_t index = resource_index++;
    if (index == old_cfg.proto_index) {
      put_bytes_field(proto, 7,
                      patched_resource(f.bytes, res.config_offset, res.config_size, res.config_xxh3,
                                       ctx + ".external_resources"));
      continue;
    }
    const auto p = std::find_if(layout.placed.begin(), layout.placed.end(),
                                [&](const Placement& x) { return x.proto_index == index; });
    if (p == layout.placed.end() || p->new_offset == p->old_offset)
      proto.append(f.raw);
    else
      put_bytes_field(proto, 7,
                      patched_resource(f.bytes, p->new_offset, std::nullopt, std::nullopt,
                                       ctx + ".external_resources"));
  }
  if (proto.size() > UINT32_MAX) throw BadInput(input.string() + ": the new proto would exceed 4 GB");
  return proto;
}

// The new header but its whole-file hash: sizes redone, the padding resized
// to keep the zero point (the CCWs' start) at the same offset modulo 4 KiB.
HefHeader patched_header(const HefHeader& h, const std::string& old_proto, const std::string& proto,
                         const Layout& layout) {
  int64_t padding = static_cast<int64_t>(h.padding_size) + static_cast<int64_t>(old_proto.size()) -
                    static_cast<int64_t>(proto.size());
  while (padding < 0) padding += kCcwAlignment;

  HefHeader nh = h;
  nh.proto_size = static_cast<uint32_t>(proto.size());
  nh.padding_size = static_cast<uint32_t>(padding);
  nh.ccws_size = layout.ccws_real + nh.padding_size;
  nh.additional_info_size = layout.new_tail - layout.ccws_real;
  // Always: genai builds the HEF from the first chunk (hailo-contract.md section 9).
  nh.proto_xxh3 = XXH3_64bits(proto.data(), proto.size());
  return nh;
}

// Writes the new file into `out`: proto, padding, the unchanged prefix, the
// moved resources, the config, tokenizer and embeddings, then the header
// with the whole-file XXH3 of what followed it. Returns the file's size.
uint64_t write_patched_file(AtomicFile& out, const ByteSource& src, HefHeader nh, const std::string& proto,
                            const Layout& layout, const std::string& config_text,
                            const std::function<void(uint64_t, uint64_t)>& progress) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  if (!state) throw InternalError("XXH3_createState failed");
  XXH3_64bits_reset(state.get());
  const uint64_t new_zero = 56 + proto.size() + nh.padding_size;
  uint64_t at = 56, done = 0;
  const uint64_t total = new_zero + layout.new_tail - 56;
  constexpr size_t kBlock = 8u << 20;
  std::vector<char> buf(kBlock);
  auto emit = [&](const void* data, size_t n) {
    out.write_at(at, data, n);
    XXH3_64bits_update(state.get(), data, n);
    at += n;
    done += n;
    if (progress) progress(done, total);
  };
  // Zeros up to a relative offset (padding, alignment gaps), in blocks.
  auto zeros_until = [&](uint64_t end) {
    std::fill(buf.begin(), buf.end(), '\0');
    while (at < end) emit(buf.data(), static_cast<size_t>(std::min<uint64_t>(end - at, kBlock)));
  };
  auto copy = [&](uint64_t from, uint64_t n) {
    for (uint64_t k = 0; k < n;) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(n - k, kBlock));
      src.read(from + k, buf.data(), m);
      emit(buf.data(), m);
      k += m;
    }
  };
  emit(proto.data(), proto.size());
  zeros_until(new_zero);
  copy(layout.old_zero, layout.cut);
  for (const auto& p : layout.placed) {
    if (is_local(p.name)) continue;
    zeros_until(new_zero + p.new_offset);
    copy(layout.old_zero + p.old_offset, p.size);
  }
  emit(config_text.data(), config_text.size());
  for (const auto& p : layout.placed) {
    if (!is_local(p.name)) continue;
    zeros_until(new_zero + p.new_offset);
    copy(layout.old_zero + p.old_offset, p.size);
  }
  nh.xxh3 = XXH3_64bits_digest(state.get());
  const std::string header = serialize_hef_header_v3(nh);
  out.write_at(0, header.data(), header.size());
  return at;
}

// Reads the result back before it replaces anything: it must parse, the
// config must be where the proto says, and it must pass the rules this
// layout is for (proto hash, resource order).
void verify_rewritten(const fs::path& written, const fs::path& output, const std::string& config_text,
                      uint64_t config_xxh3, const ErrorSet& errors_before, bool hailo_ollama) {
  const auto check = open_file_source(written.string());
  const HefInfo again = read_hef(*check);
  const Resource* r = again.resource(kResourceHailoConfig);
  if (!r || r->size != config_text.size() || xxh3_of_range(*check, r->file_offset, r->size) != config_xxh3)
    throw InternalError(output.string() + ": the rewritten HEF does not read back (hailo-config.json misplaced)");
  ContractOptions opt;
  opt.checksum_limit = 0;                // moved bytes are copied verbatim; the tests compare them
  opt.optimize_memory_on_device = true;  // the layout is for it: its order is an error here, not a warning
  const rules::Report rep = check_hef_contract(*check, again, opt);
  if (rep.errors_in({"proto-hash", "resource-order"}) > 0)
    throw InternalError(refusal(output.string() + ": the rewritten HEF fails its own layout rules:", rep.findings));
  // And the rules of `hef check` as the user runs it: set-config never
  // writes a HEF that `hef check` refuses for a reason the rewrite brought.
  ContractOptions as_run;
  as_run.hailo_ollama = hailo_ollama;
  const rules::Report as_checked = check_hef_contract(*check, again, as_run);
  std::vector<rules::Finding> errors;
  for (const auto& f : as_checked.findings)
    if (f.severity == rules::Severity::error && !errors_before.count({f.rule, f.message})) errors.push_back(f);
  if (!errors.empty())
    throw BadInput(
        refusal(output.string() + ": not written: the HEF set-config would write fails `llm2hef hef check`:", errors));
}

}  // namespace

SetConfigResult set_hailo_config(const fs::path& input, const std::string& config_text, const fs::path& output,
                                 bool replace, const std::function<void(uint64_t, uint64_t)>& progress,
                                 bool hailo_ollama) {
  refuse_invalid_config(config_text);
  check_output_path(input, output, replace);
  const auto src = open_file_source(input.string());
  const HefInfo info = read_hef(*src);
  const Resource& old_cfg = editable_config_resource(input, info);
  refuse_damaged_resources(input, *src, info);

  SetConfigResult res;
  const ErrorSet errors_before = check_config_against_hef(input, *src, info, config_text, hailo_ollama, res.findings);
  const Layout layout = lay_out(input, info, old_cfg, config_text, res);
  const std::string old_proto = read_proto_bytes(*src, info.header);
  const std::string proto = patched_proto(input, old_proto, old_cfg, layout, res);
  const HefHeader header = patched_header(info.header, old_proto, proto, layout);

  AtomicFile out(output, replace);
  res.new_size = write_patched_file(out, *src, header, proto, layout, config_text, progress);
  verify_rewritten(out.path(), output, config_text, res.config_xxh3, errors_before, hailo_ollama);
  out.commit();
  return res;
}

}  // namespace llm2hef::core::hef
