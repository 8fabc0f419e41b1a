// Rewrites a HAR's weights member (an .npz: a zip of .npy arrays, keys
// `<scope>/<layer>/<param>:0`) as a stream: arrays of untouched layers are
// copied block by block, arrays of removed layers are dropped, and only the
// arrays that change (an lm_head split, duplicated layers) are spooled to a
// temporary file to be sliced. Memory stays flat whatever the size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace llm2hef::core::har {

// What the HN edits mean for the weights, keyed by full HN layer name.
struct WeightsEdit {
  std::set<std::string> dropped;                           // layers deleted from the HN: their arrays go
  std::map<std::string, std::vector<std::string>> copies;  // layer -> new layers getting a copy of every array
  struct Split {
    std::vector<std::string> shards;  // layer per shard; shards[0] may be the original name
    std::vector<int64_t> widths;      // last-axis width per shard
    // false (the lm_head conv): `kernel` and `bias` sliced on the last axis,
    // other arrays copied; the layer must have a kernel. true (a per-channel
    // layer behind it, e.g. the final logit soft-cap): every array whose last
    // axis is the whole width is sliced, other arrays copied.
    bool by_width = false;
  };
  std::map<std::string, Split> splits;

  bool empty() const { return dropped.empty() && copies.empty() && splits.empty(); }
};

struct NpzRewriteReport {
  std::vector<std::string> dropped, added, sliced;  // npz keys
};

// Reads a zip from `read` (sequential; returns 0 at the end) and streams the
// edited zip (stored, uncompressed) into `write`. `label` names the input in
// errors; the arrays that are split or copied are spooled to `scratch`.
NpzRewriteReport rewrite_npz(const std::function<size_t(void*, size_t)>& read, const std::string& label,
                             const WeightsEdit& edit, const std::function<void(const void*, size_t)>& write,
                             const std::filesystem::path& scratch);

// Visits every array of an .npz read from `read`: key (without .npy), dtype
// descr, shape, and its data as a sequence of blocks.
struct NpyInfo {
  std::string descr;  // e.g. "<f4"
  size_t element_size = 0;
  std::vector<int64_t> shape;
  uint64_t header_bytes = 0;
};
// Parses an .npy header at the start of `bytes`; BadInput (naming `label`) when malformed.
NpyInfo parse_npy_header(const std::string& bytes, const std::string& label);

using NpzVisitor = std::function<void(const std::string& key, const NpyInfo& info,
                                      const std::function<size_t(void*, size_t)>& read_data)>;
void visit_npz(const std::function<size_t(void*, size_t)>& read, const std::string& label, const NpzVisitor& visit);

}  // namespace llm2hef::core::har
