// `llm2hef har fix`: scan, decide what applies, run the passes and the
// adapter hook on the HN, then write a new HAR in one streaming pass where
// only the HN and (when layers were removed or split) the weights change.
#include <fstream>
#include <sstream>

#include "fixups/fixup_common.hpp"
#include "llm2hef/core/har/har_fix.hpp"
#include "llm2hef/core/har/tar_writer.hpp"
#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

namespace {

const char* stage_name(sdk::HarStage s) {
  return s == sdk::HarStage::before_optimize ? "before_optimize" : "after_optimize";
}

class HookContext final : public sdk::HnFixupContext {
 public:
  HookContext(HnModel& hn, sdk::HarStage stage, std::string state, const nlohmann::json& manifest)
      : hn_(hn), stage_(stage), state_(std::move(state)), manifest_(manifest) {}
  sdk::HarStage stage() const override { return stage_; }
  std::string state() const override { return state_; }
  nlohmann::ordered_json& hn() override { return hn_.doc(); }
  const nlohmann::json& manifest() const override { return manifest_; }
  void report(const std::string& change) override { changes.push_back(change); }
  std::vector<std::string> changes;

 private:
  HnModel& hn_;
  sdk::HarStage stage_;
  std::string state_;
  const nlohmann::json& manifest_;
};

// The generic passes in the order they run: each applies to one stage of the
// HAR and is reported as skipped, with the reason, at the other.
struct Fixup {
  const char* name;
  sdk::HarStage stage;
  const char* why_this_stage_only;
  FixupResult (*run)(FixupInput&);
};

constexpr const char* kDfcOwnsQuantized = "(the quantized HN's weights and scopes are the DFC's own)";
const Fixup kFixups[] = {
    // First: the widening below takes the pe roles from the manifest.
    {"pe-input-roles", sdk::HarStage::before_optimize, kDfcOwnsQuantized, pe_input_roles},
    {"rope-input-widening", sdk::HarStage::before_optimize, kDfcOwnsQuantized, rope_input_widening},
    {"mask-wiring", sdk::HarStage::before_optimize, kDfcOwnsQuantized, mask_wiring},
    {"lm-head-split", sdk::HarStage::before_optimize, kDfcOwnsQuantized, lm_head_split},
    {"conv-input-order", sdk::HarStage::after_optimize,
     "(the defect appears when set_kv_cache_global_params duplicates scopes)", conv_input_order},
};

}  // namespace

std::vector<FixupResult> run_fixups(HnModel& hn, WeightsEdit& weights, sdk::HarStage stage, const std::string& state,
                                    const FixOptions& o) {
  std::vector<FixupResult> out;
  FixupInput in{hn, weights, o.manifest ? &*o.manifest : nullptr};
  for (const Fixup& f : kFixups) {
    if (f.stage == stage) {
      out.push_back(f.run(in));
    } else {
      const char* only =
          f.stage == sdk::HarStage::before_optimize ? "runs before optimize only " : "runs after optimize only ";
      out.push_back(FixupResult{{}, false, only + std::string(f.why_this_stage_only), {}, {}});
    }
    out.back().name = f.name;
  }
  // Each pass must keep the HN well formed; the input was valid, so a
  // failure here is a bug in a pass, not bad input.
  try {
    hn.validate();
  } catch (const BadInput& e) {
    throw InternalError(std::string("a generic fixup left an invalid HN: ") + e.what());
  }
  const std::string name = "adapter:" + (o.adapter_name.empty() ? std::string("none") : o.adapter_name);
  if (!o.adapter) {
    out.push_back(FixupResult{name, false, o.adapter_note.empty() ? "no adapter given" : o.adapter_note, {}, {}});
    return out;
  }
  const auto before = hn.digest();  // not a copy of the DOM: the HN can be hundreds of MB
  // Adapters see the manifest as the JSON document export wrote (the SDK knows no core types).
  const nlohmann::json manifest_doc = o.manifest ? manifest_json(*o.manifest) : nlohmann::json();
  HookContext ctx(hn, stage, state, manifest_doc);
  o.adapter->har_fixups(ctx);
  try {
    hn.validate();
  } catch (const BadInput& e) {
    throw InternalError("adapter '" + o.adapter_name + "' left an invalid HN: " + e.what());
  }
  FixupResult r{name, true, "", ctx.changes, {}};
  if (hn.digest() != before && r.changes.empty()) r.changes.push_back(o.adapter_name + ": unreported HN change");
  if (r.changes.empty()) r.note = "the adapter's hook changed nothing";
  out.push_back(r);
  return out;
}

size_t FixReport::change_count() const {
  size_t n = 0;
  for (const auto& f : fixups) n += f.changes.size();
  return n;
}

nlohmann::json FixReport::to_json() const {
  nlohmann::json fx = nlohmann::json::array();
  for (const auto& f : fixups)
    fx.push_back(
        {{"name", f.name}, {"ran", f.ran}, {"note", f.note}, {"changes", f.changes}, {"warnings", f.warnings}});
  return {{"input", input},
          {"output", output.empty() ? nlohmann::json(nullptr) : nlohmann::json(output)},
          {"state", state},
          {"stage", stage_name(stage)},
          {"stage_reason", stage_reason},
          {"scopes", scopes_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(scopes_note)},
          {"fixups", fx},
          {"changes", change_count()},
          {"rewritten_members", rewritten_members},
          {"written", written}};
}

std::string FixReport::to_text() const {
  std::ostringstream s;
  s << "har fix: " << input << (written ? " -> " + output : std::string(" (dry run, nothing written)")) << "\n";
  s << "stage: " << stage_name(stage) << " - " << stage_reason << "\n";
  if (!scopes_note.empty()) s << "scopes: " << scopes_note << "\n";
  for (const auto& f : fixups) {
    s << "  " << f.name << ": ";
    if (!f.ran)
      s << "skipped, " << f.note << "\n";
    else if (f.changes.empty())
      s << "no change (" << f.note << ")\n";
    else
      s << f.changes.size() << " change(s)\n";
    for (const auto& c : f.changes) s << "    - " << c << "\n";
    for (const auto& w : f.warnings) s << "    warning: " << w << "\n";
  }
  s << change_count() << " change(s)";
  if (!rewritten_members.empty()) s << "; rewritten: " << join(rewritten_members);
  s << "; every other member copied unchanged\n";
  return s.str();
}

FixReport fix_har(const FixOptions& o) {
  std::error_code ec;
  if (!o.dry_run && fs::exists(o.output) && fs::equivalent(o.input, o.output, ec))
    throw UsageError(o.output.string() + ": is the input; the input is never modified (choose another -o)");
  HarIndex idx = scan_har(o.input);
  if (!idx.refusal.empty()) throw Unsupported(idx.refusal);
  FixReport rep;
  rep.input = o.input.string();
  rep.output = o.dry_run ? std::string() : o.output.string();
  rep.state = idx.state;
  rep.stage = idx.stage;
  rep.stage_reason = idx.stage_reason;
  HnModel& hn = *idx.hn;
  if (idx.stage == sdk::HarStage::after_optimize) {
    // The quantized HN keeps the base scope next to the two groups
    // (hailo-contract.md section 3): accepted, but there must be exactly one
    // group of each suffix, or the compile that follows cannot be right.
    const KvScopes kv = require_kv_scopes(hn);
    rep.scopes_note = "network groups " + kv.prefill + ", " + kv.tbt +
                      (kv.base.empty() ? std::string() : "; base scope " + kv.base + " kept (not a network group)");
  }
  const auto original = hn.digest();  // not a copy of the DOM: the HN can be hundreds of MB
  WeightsEdit weights;
  rep.fixups = run_fixups(hn, weights, idx.stage, idx.state, o);
  const bool hn_changed = hn.digest() != original;
  if (!weights.empty()) {
    if (idx.weights_member.empty())
      throw BadInput(idx.label + ": layers with weights were removed or split, but the HAR has no .npz weights member");
    for (const auto& m : idx.members)
      if (m.role == MemberRole::other_weights)
        throw Unsupported(idx.label + ": member '" + m.entry.name +
                          "' holds weights llm2hef cannot rewrite consistently (only the parsed .npz); "
                          "apply the pre-optimize fixups to the parsed HAR");
  }
  if (hn_changed) rep.rewritten_members.push_back(idx.hn_member);
  if (!weights.empty()) rep.rewritten_members.push_back(idx.weights_member);
  if (o.dry_run) return rep;

  AtomicFile out(o.output, o.force);
  {
    TarWriter w(out.path());
    auto in = TarReader::open_file(o.input);
    Progress progress("har fix", idx.total_bytes, o.progress);
    uint64_t done = 0;
    auto tick = [&](uint64_t n) {
      done += n;
      progress.update(done);
    };
    while (auto m = in->next()) {
      TarMember entry = *m;
      if (m->name == idx.hn_member && hn_changed) {
        const std::string text = hn.dump();
        entry.size = text.size();
        w.begin(entry);
        w.write(text.data(), text.size());
        w.end();
        tick(m->size);
      } else if (m->name == idx.weights_member && !weights.empty()) {
        // Straight into the output: the member's size is patched in its
        // header at the end, so the new .npz is never staged on disk.
        w.begin_open(entry);
        auto read = [&](void* b, size_t n) {
          const size_t got = in->read(b, n);
          tick(got);
          return got;
        };
        auto write = [&](const void* b, size_t n) { w.write(b, n); };
        rewrite_npz(read, idx.label + ": " + m->name, weights, write, out.folder());
        w.end();
      } else {
        w.begin(entry);
        if (!entry.is_dir) copy_member_data(*in, w, entry.size, tick);
        w.end();
      }
    }
    w.close();
    progress.finish();
  }
  out.commit();
  rep.written = true;
  return rep;
}

}  // namespace llm2hef::core::har
