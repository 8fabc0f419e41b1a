// Which input layer carries which RoPE table is written in the manifest
// (input_layerN in ONNX input order, hailo-contract.md section 2), and the
// widening pass, the resources compile.py attaches and hailo-config.json's
// input_layers_names_suffixes all follow it. If the DFC parser ever numbered
// the inputs otherwise, nothing downstream would say so: a GQA model would
// fail on a width with no cause named, an MHA model would pass with cos and
// sin swapped. So each pe input's role is read again from the HN and
// compared with the manifest before anything is edited:
//
// - q or k: by the width its tiling conv widens it to (theta x attention
//   heads for q, theta x kv heads for k: the runtime's tiling, section 9) and
//   by the width of the operands it multiplies (heads x head_dim for q,
//   kv_heads x head_dim for k);
// - cos or sin: RoPE is x*cos + (x R)*sin with R the constant rotate-half
//   matrix (section 2), which the parser makes a single-input conv. The sin
//   table multiplies R's output, and R's input is what a cos table
//   multiplies; the cos table multiplies x itself, and x also feeds R.
//
// When the structure does not decide (another HN shape than the one the
// export writes, GPT-2's learned positions, which carry no rotation), the
// manifest is trusted and a warning says which role could not be confirmed.
#include <map>
#include <set>

#include "fixup_common.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::har {

namespace {

enum class Side { unknown, q, k, either };
enum class Trig { unknown, cos, sin };

struct PeInput {
  std::string layer;                 // `<scope>/input_layerN`
  const sdk::RuntimeInput* claimed;  // the manifest's role
  std::string table;                 // the tiling conv, or the input itself once widened
  int64_t table_width = 0;
  std::vector<std::pair<std::string, std::string>> multiplies;  // (ew_mult, its other operand)
  std::vector<std::string> other_consumers;                     // table consumers that are no RoPE multiply
  Side side = Side::unknown;
  std::string side_why;
  Trig trig = Trig::unknown;
  std::string trig_why;
};

std::string str(int64_t v) { return std::to_string(v); }

int64_t out_width(const HnModel& hn, const std::string& layer) {
  return last_width(hn, layer, hn.output_shapes(layer), "output_shapes");
}

// A single-input conv as wide out as in: the shape of the rotate-half matmul
// (and of the per-base picking matmul of two-base RoPE, which is told apart
// by which side of a multiply it is on).
bool square_single_input_conv(const HnModel& hn, const std::string& layer) {
  if (hn.type(layer) != "conv" || hn.inputs(layer).size() != 1) return false;
  return out_width(hn, hn.inputs(layer)[0]) == out_width(hn, layer);
}

// The RoPE multiplies a table feeds: its ew_mult consumers, also through
// single-input convs between the table and the multiply (two-base RoPE
// picks one base's columns with a constant matmul, sdk/rope_bases.hpp).
void collect_multiplies(const HnModel& hn, const std::string& table, int depth, PeInput& pe) {
  for (const auto& c : hn.outputs(table)) {
    const auto ins = hn.inputs(c);
    if (hn.type(c) == "ew_mult" && ins.size() == 2 && ins[0] != ins[1]) {
      pe.multiplies.push_back({c, ins[0] == table ? ins[1] : ins[0]});
    } else if (depth > 0 && hn.type(c) == "conv" && ins.size() == 1) {
      collect_multiplies(hn, c, depth - 1, pe);
    } else {
      pe.other_consumers.push_back(c);
    }
  }
}

const char* side_name(Side s) { return s == Side::q ? "q" : s == Side::k ? "k" : "?"; }
const char* trig_name(Trig t) { return t == Trig::cos ? "cos" : t == Trig::sin ? "sin" : "?"; }
Side claimed_side(const PeInput& p) { return p.claimed->tiling == sdk::PeTiling::q_heads ? Side::q : Side::k; }
Trig claimed_trig(const PeInput& p) { return p.claimed->cosine ? Trig::cos : Trig::sin; }

// The role the structure gives, with the manifest's part where the
// structure does not tell (q/k of an MHA model, where both tables are equal)
// and saying so where it could not.
std::string structural_role(const PeInput& p) {
  const bool side_known = p.side == Side::q || p.side == Side::k;
  const Side s = side_known ? p.side : claimed_side(p);
  const Trig t = p.trig == Trig::unknown ? claimed_trig(p) : p.trig;
  std::string role = std::string("pe_") + side_name(s) + "_" + trig_name(t);
  if (p.side == Side::unknown) role += " (q/k undecided)";
  if (p.trig == Trig::unknown) role += " (cos/sin undecided)";
  return role;
}

void read_side(const HnModel& hn, const ExportManifest& m, PeInput& p) {
  const int64_t q_table = m.theta_length * m.pe_q_tiles, k_table = m.theta_length * m.pe_k_tiles;
  if (q_table == k_table) {
    p.side = Side::either;
    p.side_why = "q and k tables are both " + str(q_table) + " wide: the runtime writes the same values to both";
    return;
  }
  Side by_table = Side::unknown;
  if (p.table_width == q_table) by_table = Side::q;
  if (p.table_width == k_table) by_table = Side::k;
  const std::string table_why =
      (p.table == p.layer ? "it is " + str(p.table_width) + " wide"
                          : "its tiling conv '" + p.table + "' widens it to " + str(p.table_width)) +
      " (q tables are theta " + str(m.theta_length) + " x " + str(m.pe_q_tiles) + " heads = " + str(q_table) +
      ", k tables x " + str(m.pe_k_tiles) + " kv heads = " + str(k_table) + ")";
  // What it feeds: the width of the q or k projection it multiplies.
  const int64_t q_op = m.dims.heads * m.dims.head_dim, k_op = m.dims.kv_heads * m.dims.head_dim;
  std::set<Side> by_operand;
  for (const auto& [mult, operand] : p.multiplies) {
    const int64_t w = out_width(hn, operand);
    by_operand.insert(w == q_op && q_op != k_op ? Side::q : w == k_op && q_op != k_op ? Side::k : Side::unknown);
  }
  const Side operand_side = by_operand.size() == 1 ? *by_operand.begin() : Side::unknown;
  const std::string operand_why = p.multiplies.empty() ? ""
                                                       : ", and its multiplies take " +
                                                             std::string(operand_side == Side::q   ? "q-wide"
                                                                         : operand_side == Side::k ? "k-wide"
                                                                                                   : "mixed or other") +
                                                             " operands (q " + str(q_op) + ", k " + str(k_op) + ")";
  if (by_table != Side::unknown && operand_side != Side::unknown && by_table != operand_side) {
    p.side_why = table_why + operand_why + ": the two disagree";
    return;
  }
  p.side = by_table != Side::unknown ? by_table : operand_side;
  p.side_why = table_why + operand_why;
}

// cos or sin for every pe input at once: the rotate-half pattern relates the
// multiplies of one table to those of its partner.
void read_trig(const HnModel& hn, std::vector<PeInput>& pes) {
  std::map<std::string, std::set<size_t>> multiplied_by;  // operand -> the pe inputs multiplying it
  for (size_t i = 0; i < pes.size(); ++i)
    for (const auto& [mult, operand] : pes[i].multiplies) multiplied_by[operand].insert(i);
  auto by_another = [&](const std::string& operand, size_t self) {
    const auto it = multiplied_by.find(operand);
    return it != multiplied_by.end() && (it->second.size() > 1 || !it->second.contains(self));
  };
  for (size_t i = 0; i < pes.size(); ++i) {
    PeInput& p = pes[i];
    size_t cos = 0, sin = 0;
    std::string cos_example, sin_example;
    for (const auto& [mult, operand] : p.multiplies) {
      // sin: the operand is the rotate-half conv, whose input another table multiplies.
      const bool rotated = square_single_input_conv(hn, operand) && by_another(hn.inputs(operand)[0], i);
      // cos: the operand also feeds the rotate-half conv, whose output another table multiplies.
      bool plain = false;
      for (const auto& r : hn.outputs(operand))
        if (square_single_input_conv(hn, r) && by_another(r, i)) plain = true;
      if (rotated && !plain) {
        ++sin;
        if (sin_example.empty())
          sin_example = "'" + mult + "' multiplies it with '" + operand + "', the rotate-half conv of '" +
                        hn.inputs(operand)[0] + "'";
      } else if (plain && !rotated) {
        ++cos;
        if (cos_example.empty())
          cos_example = "'" + mult + "' multiplies it with '" + operand + "', the input of a rotate-half conv";
      }
    }
    const std::string counted = " (" + str(static_cast<int64_t>(p.multiplies.size())) + " multiplies";
    if (cos && !sin) {
      p.trig = Trig::cos;
      p.trig_why = cos_example + counted + ", " + str(static_cast<int64_t>(cos)) + " on the unrotated path)";
    } else if (sin && !cos) {
      p.trig = Trig::sin;
      p.trig_why = sin_example + counted + ", " + str(static_cast<int64_t>(sin)) + " on the rotate-half path)";
    } else if (sin && cos) {
      p.trig_why = str(static_cast<int64_t>(cos)) + " of its multiplies are on the unrotated path and " +
                   str(static_cast<int64_t>(sin)) + " on the rotate-half path";
    } else if (p.multiplies.empty()) {
      p.trig_why = "its table feeds no multiply" +
                   (p.other_consumers.empty() ? std::string() : " (it feeds " + join(p.other_consumers) + ")");
    } else {
      p.trig_why = "none of its " + str(static_cast<int64_t>(p.multiplies.size())) +
                   " multiplies has a rotate-half conv on either side";
    }
  }
}

}  // namespace

FixupResult pe_input_roles(FixupInput& in) {
  FixupResult r{{}, true, "", {}, {}};  // named by the table in har_fix.cpp
  if (!in.manifest) {
    r.note = "no manifest: the roles come from the manifest only, nothing to check";
    return r;
  }
  const HnModel& hn = in.hn;
  const ExportManifest& m = *in.manifest;
  std::vector<PeInput> pes;
  for (const ManifestInput& inp : m.inputs) {
    const sdk::RuntimeInput* contract = sdk::find_runtime_input(inp.role);
    if (!contract || contract->tiling == sdk::PeTiling::none) continue;
    PeInput p;
    p.layer = find_input_layer(hn, inp.dfc_layer);
    p.claimed = contract;
    const auto tiling = tiling_conv_behind(hn, p.layer);
    p.table = tiling ? tiling->conv : p.layer;
    p.table_width = out_width(hn, p.table);
    collect_multiplies(hn, p.table, 2, p);
    read_side(hn, m, p);
    pes.push_back(std::move(p));
  }
  read_trig(hn, pes);

  std::vector<std::string> disagree, confirmed, unconfirmed;
  for (const PeInput& p : pes) {
    const bool side_differs = (p.side == Side::q || p.side == Side::k) && p.side != claimed_side(p);
    const bool trig_differs = p.trig != Trig::unknown && p.trig != claimed_trig(p);
    if (side_differs || trig_differs) {
      std::string why;
      if (side_differs) why += "q/k: " + p.side_why;
      if (trig_differs) why += std::string(why.empty() ? "" : "; ") + "cos/sin: " + p.trig_why;
      disagree.push_back("'" + p.layer + "' is " + std::string(p.claimed->role) + " in the manifest but " +
                         structural_role(p) + " by the HN's structure (" + why + ")");
      continue;
    }
    if (p.side == Side::unknown)
      unconfirmed.push_back("'" + p.layer + "' as a " + side_name(claimed_side(p)) + " table: " + p.side_why);
    if (p.trig == Trig::unknown)
      unconfirmed.push_back("'" + p.layer + "' as " + trig_name(claimed_trig(p)) + ": " + p.trig_why);
    if (p.side != Side::unknown && p.trig != Trig::unknown)
      confirmed.push_back(short_name(p.layer) + " " + std::string(p.claimed->role));
  }
  if (!disagree.empty())
    throw BadInput(hn.label() + ": the manifest's pe input roles disagree with the HN: " + join(disagree, "; ") +
                   ". The DFC parser numbered the inputs otherwise than the export's ONNX input order "
                   "(hailo-contract.md section 2); the resources, hailo-config.json's input_layers_names_suffixes "
                   "and the RoPE widening all follow the manifest, so the runtime would feed these layers the "
                   "wrong tables. Nothing was written; `llm2hef har inspect` lists the inputs with their ONNX names");
  if (!unconfirmed.empty())
    r.warnings.push_back("pe input roles not confirmed by the HN's structure, the manifest is trusted for: " +
                         join(unconfirmed, "; "));
  std::string note =
      confirmed.empty() ? "no pe role confirmed by structure" : "confirmed by structure: " + join(confirmed);
  if (!pes.empty() && pes.front().side == Side::either) note += "; " + pes.front().side_why + ", so q/k need no check";
  r.note = note;
  return r;
}

}  // namespace llm2hef::core::har
