// HAR reading and the HN fixups, in memory: tar member validation, the HN
// model's checks, conv input-order repair, npy headers, and the adapter hook
// through sdk::HnFixupContext.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/har_fix.hpp"
#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/har/npz_stream.hpp"
#include "llm2hef/core/har/tar_stream.hpp"
#include "llm2hef/core/har/tar_writer.hpp"
#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/hn_fixup.hpp"
#include "temp_dir.hpp"

using namespace llm2hef;
using namespace llm2hef::core::har;
using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;
using llm2hef::testing::TempDir;

namespace {

ojson layer(const char* type, std::vector<std::string> in, std::vector<std::string> out, std::vector<Shape> in_shapes,
            std::vector<Shape> out_shapes) {
  return {{"type", type}, {"input", in}, {"output", out}, {"input_shapes", in_shapes}, {"output_shapes", out_shapes}};
}

// a -> c, b -> c where c declares widths [4864, 896] and lists [b, a] (permuted).
ojson permuted_conv_hn(bool permuted) {
  ojson hn;
  hn["name"] = "n";
  hn["layers"]["s/a"] = layer("conv", {}, {"s/c"}, {}, {{-1, 1, 8, 4864}});
  hn["layers"]["s/b"] = layer("ew_add", {}, {"s/c"}, {}, {{-1, 1, 8, 896}});
  hn["layers"]["s/c"] =
      layer("conv", permuted ? std::vector<std::string>{"s/b", "s/a"} : std::vector<std::string>{"s/a", "s/b"}, {},
            {{-1, 1, 8, 4864}, {-1, 1, 8, 896}}, {{-1, 1, 8, 896}});
  return hn;
}

}  // namespace

TEST(TarMemberNames, RefusesEscapes) {
  EXPECT_NO_THROW(validate_member_name("x.har", "a.hn"));
  EXPECT_NO_THROW(validate_member_name("x.har", "./dir/a..b.npz"));
  EXPECT_THROW(validate_member_name("x.har", "/abs.hn"), BadInput);
  EXPECT_THROW(validate_member_name("x.har", ".."), BadInput);
  EXPECT_THROW(validate_member_name("x.har", "a/../../b"), BadInput);
  EXPECT_THROW(validate_member_name("x.har", "a/.."), BadInput);
  EXPECT_THROW(validate_member_name("x.har", ""), BadInput);
  EXPECT_THROW(validate_member_name("x.har", "./"), BadInput);
}

TEST(TarStream, RoundTripAndDuplicateRefusal) {
  const TempDir tmp;
  const fs::path& dir = tmp.path();
  const fs::path p = dir / "t.tar";
  {
    TarWriter w(p);
    for (const std::string name : {"a.hn", "dir/b.npz"}) {
      const std::string data = "payload of " + name;
      w.begin(TarMember{name, data.size(), false, 0644, 1});
      w.write(data.data(), data.size());
      w.end();
    }
    w.close();
  }
  auto r = TarReader::open_file(p);
  auto m = r->next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "a.hn");
  EXPECT_EQ(r->read_all(1000), "payload of a.hn");
  m = r->next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "dir/b.npz");
  EXPECT_THROW(r->read_all(5), BadInput);  // limit enforced
  EXPECT_FALSE(r->next());

  // The same name twice (spelled differently) is refused.
  const fs::path dup = dir / "dup.tar";
  {
    TarWriter w(dup);
    for (const std::string name : {"a.hn", "./a.hn"}) {
      w.begin(TarMember{name, 1, false, 0644, 1});
      w.write("x", 1);
      w.end();
    }
    w.close();
  }
  auto d = TarReader::open_file(dup);
  EXPECT_TRUE(d->next());
  EXPECT_THROW(d->next(), BadInput);
}

TEST(HnModel, ValidatesEdgesAndShapes) {
  EXPECT_NO_THROW(HnModel(permuted_conv_hn(true), "t"));
  ojson bad = permuted_conv_hn(true);
  bad["layers"]["s/a"]["output"] = ojson::array();  // one-sided edge
  EXPECT_THROW(HnModel(bad, "t"), BadInput);
  bad = permuted_conv_hn(true);
  bad["layers"]["s/c"]["input_shapes"][0][1] = "x";
  EXPECT_THROW(HnModel(bad, "t"), BadInput);
  bad = permuted_conv_hn(true);
  bad["layers"]["s/c"].erase("type");
  EXPECT_THROW(HnModel(bad, "t"), BadInput);
  EXPECT_THROW(HnModel::parse("[1, 2]", "t"), BadInput);
  EXPECT_THROW(HnModel::parse("{\"layers\": 3}", "t"), BadInput);
}

TEST(HnModel, ScopesFreshNamesAndEdits) {
  HnModel hn(permuted_conv_hn(true), "t");
  EXPECT_EQ(hn.scopes(), std::vector<std::string>{"s"});
  EXPECT_EQ(hn.fresh_name("s", "conv"), "s/conv1");
  hn.doc()["layers"]["s/conv7"] = layer("conv", {}, {}, {}, {});
  EXPECT_EQ(hn.fresh_name("s", "conv"), "s/conv8");
  EXPECT_EQ(hn.layer_names().front(), "s/a");  // document order kept, not sorted
  hn.replace_in_list("s/c", "input", "s/b", {"s/x", "s/y"});
  EXPECT_EQ(hn.inputs("s/c"), (std::vector<std::string>{"s/x", "s/y", "s/a"}));
}

TEST(ConvInputOrder, ReordersOnlyInput) {
  HnModel hn(permuted_conv_hn(true), "t");
  const ojson before = hn.doc();
  WeightsEdit w;
  FixupInput in{hn, w, nullptr};
  FixupResult r = conv_input_order(in);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(hn.inputs("s/c"), (std::vector<std::string>{"s/a", "s/b"}));
  ojson expected = before;
  expected["layers"]["s/c"]["input"] = {"s/a", "s/b"};
  EXPECT_EQ(hn.doc(), expected);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(conv_input_order(in).changes.empty());  // idempotent
}

TEST(ConvInputOrder, LeavesUnmatchableAlone) {
  ojson doc = permuted_conv_hn(true);
  doc["layers"]["s/a"]["output_shapes"] = {{-1, 1, 8, 100}};
  HnModel hn(doc, "t");
  WeightsEdit w;
  FixupInput in{hn, w, nullptr};
  FixupResult r = conv_input_order(in);
  EXPECT_TRUE(r.changes.empty());
  EXPECT_NE(r.note.find("left unchanged"), std::string::npos);
  EXPECT_EQ(hn.doc(), doc);
}

TEST(NpyHeader, ParsesAndRefuses) {
  std::string h = "\x93NUMPY\x01";
  h += '\0';
  const std::string dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 5), }\n";
  h += static_cast<char>(dict.size());
  h += '\0';
  h += dict;
  const NpyInfo info = parse_npy_header(h, "t");
  EXPECT_EQ(info.descr, "<f2");
  EXPECT_EQ(info.element_size, 2u);
  EXPECT_EQ(info.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(info.header_bytes, h.size());
  EXPECT_THROW(parse_npy_header(h.substr(0, 20), "t"), BadInput);
  std::string fortran = h;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THROW(parse_npy_header(fortran, "t"), BadInput);
  EXPECT_THROW(parse_npy_header("not numpy at all", "t"), BadInput);
}

TEST(MemberRoles, MainHnIsNeitherVariant) {
  EXPECT_EQ(classify_member("net.hn"), MemberRole::main_hn);
  EXPECT_EQ(classify_member("net.fp.hn"), MemberRole::variant_hn);
  EXPECT_EQ(classify_member("net.native.hn"), MemberRole::variant_hn);
  EXPECT_EQ(classify_member("net.npz"), MemberRole::weights);
  EXPECT_EQ(classify_member("net.q.npz"), MemberRole::other_weights);
  EXPECT_EQ(classify_member("net.fpo.npz"), MemberRole::other_weights);
  EXPECT_EQ(classify_member("net.metadata.json"), MemberRole::metadata);
}

namespace {

// An adapter whose only behaviour is its HAR hook.
class HookAdapter final : public sdk::Adapter {
 public:
  enum class Mode { report, silent, break_hn, nothing };
  explicit HookAdapter(Mode m) : mode_(m) {}
  sdk::AdapterInfo info() const override { return {"hook", "0.0.1", "test", {}, {}, {}}; }
  sdk::Plan plan(const sdk::Checkpoint&, const sdk::ExportOptions&) const override { throw Unsupported("test"); }
  void build_graph(const sdk::Checkpoint&, const sdk::Plan&, sdk::GraphBuilder&) const override {}
  void har_fixups(sdk::HnFixupContext& ctx) const override {
    auto& layers = ctx.hn()["layers"];
    switch (mode_) {
      case Mode::report:
        if (!layers["s/a"].contains("note")) {
          layers["s/a"]["note"] = ctx.stage() == sdk::HarStage::after_optimize ? "after" : "before";
          ctx.report("tagged s/a");
        }
        break;
      case Mode::silent: layers["s/a"]["note"] = "x"; break;
      case Mode::break_hn: layers["s/c"]["input"].push_back("s/ghost"); break;
      case Mode::nothing: break;
    }
  }

 private:
  Mode mode_;
};

std::vector<FixupResult> run_hook(HnModel& hn, HookAdapter::Mode mode) {
  WeightsEdit w;
  FixOptions o;
  HookAdapter a(mode);
  o.adapter = &a;
  o.adapter_name = "hook";
  return run_fixups(hn, w, sdk::HarStage::after_optimize, "quantized_model", o);
}

}  // namespace

TEST(AdapterHook, ReportedChangesAndIdempotence) {
  HnModel hn(permuted_conv_hn(false), "t");
  auto r = run_hook(hn, HookAdapter::Mode::report);
  EXPECT_EQ(r.back().name, "adapter:hook");
  EXPECT_EQ(r.back().changes, std::vector<std::string>{"tagged s/a"});
  EXPECT_EQ(hn.layer("s/a")["note"], "after");
  EXPECT_TRUE(run_hook(hn, HookAdapter::Mode::report).back().changes.empty());
}

TEST(AdapterHook, UnreportedChangeIsReported) {
  HnModel hn(permuted_conv_hn(false), "t");
  auto r = run_hook(hn, HookAdapter::Mode::silent);
  ASSERT_EQ(r.back().changes.size(), 1u);
  EXPECT_NE(r.back().changes[0].find("unreported"), std::string::npos);
}

TEST(AdapterHook, BrokenHnIsAnInternalError) {
  HnModel hn(permuted_conv_hn(false), "t");
  EXPECT_THROW(run_hook(hn, HookAdapter::Mode::break_hn), InternalError);
}

TEST(TarStream, LongNamesFoldersAndPatchedSizes) {
  const TempDir tmp;
  const fs::path& dir = tmp.path();
  const fs::path p = dir / "t.tar";
  const std::string long_flat(150, 'n');                           // needs a pax record
  const std::string long_split = std::string(120, 'd') + "/x.hn";  // fits ustar prefix + name
  const std::string open_data(1234, 'z');
  {
    TarWriter w(p);
    w.begin(TarMember{"folder", 0, true, 0755, 5});
    w.end();
    for (const auto& name : {long_flat, long_split}) {
      w.begin(TarMember{name, 3, false, 0600, 7});
      w.write("abc", 3);
      w.end();
    }
    w.begin_open(TarMember{"open.npz", 0, false, 0644, 9});
    w.write(open_data.data(), 1000);
    w.write(open_data.data(), 234);
    w.end();
    w.begin(TarMember{"after", 1, false, 0644, 9});
    w.write("!", 1);
    w.end();
    w.close();
  }
  auto r = TarReader::open_file(p);
  auto m = r->next();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->is_dir);
  for (const auto& name : {long_flat, long_split}) {
    m = r->next();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->name, name);
    EXPECT_EQ(m->mode, 0600u);
    EXPECT_EQ(m->mtime, 7);
    EXPECT_EQ(r->read_all(10), "abc");
  }
  m = r->next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "open.npz");
  EXPECT_EQ(m->size, 1234u);
  EXPECT_EQ(r->read_all(5000), open_data);
  m = r->next();
  ASSERT_TRUE(m);
  EXPECT_EQ(r->read_all(5), "!");
  EXPECT_FALSE(r->next());
}

TEST(TarStream, SizesBeyondOctalUseBase256) {
  // Only the header is written: enough for the reader to report the size.
  const TempDir tmp;
  const fs::path& dir = tmp.path();
  const fs::path p = dir / "big.tar";
  const uint64_t big = (9ull << 30) + 7;  // above the 8 GiB an 11-digit octal field holds
  {
    TarWriter w(p);
    w.begin(TarMember{"big.npz", big, false, 0644, 1});
  }
  std::ifstream f(p, std::ios::binary);
  std::string head(512, '\0');
  f.read(head.data(), 512);
  EXPECT_EQ(static_cast<unsigned char>(head[124]), 0x80u);
  auto r = TarReader::open_file(p);
  auto m = r->next();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->size, big);
}
