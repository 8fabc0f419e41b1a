// registry::make_manifest(), make_index() and verify_published() on the test
// adapters: a faithful manifest passes; a tampered library, a wrong claim, a
// wrong ABI, a missing or unsafe library each fail the right check with the
// right message, and a library whose checksum fails is never loaded.
#include <sys/stat.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/registry/verify.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "test_support.hpp"

namespace {

using namespace llm2hef::registry;
using namespace llm2hef_test;
using nlohmann::json;

const Publisher kPublisher{"MIT", "Test Maintainer <t@example.org>", "https://example.org/adapters"};

// A published adapter in its own folder: a copy of `library` plus its manifest.
struct Published {
  TempDir dir;
  fs::path library, manifest;
  json document;

  explicit Published(const fs::path& source, const std::string& file_name = "adapter.so") {
    library = dir / file_name;
    fs::copy_file(source, library);
    document = adapter_manifest_json(make_manifest(llm2hef::plugins::load_adapter(library), kPublisher));
    manifest = dir / "adapter.json";
    save();
  }
  void save() const { std::ofstream(manifest) << document.dump(2); }
};

// check name -> (passed, detail) of the single manifest verified at `path`.
ManifestVerdict verify_one(const fs::path& path, VerifyOptions options = {}) {
  VerifyReport report = verify_published(path, options);
  EXPECT_EQ(report.manifests.size(), 1u);
  return report.manifests.at(0);
}

std::string names_of(const ManifestVerdict& v) {
  std::string out;
  for (const auto& c : v.checks) out += (out.empty() ? "" : ",") + c.name + (c.passed ? "" : "!");
  return out;
}

const std::string& detail_of(const ManifestVerdict& v, const std::string& check) {
  for (const auto& c : v.checks)
    if (c.name == check) return c.detail;
  static const std::string none = "<check not run>";
  return none;
}

TEST(RegistryManifest, DescribesTheLibrary) {
  Published p(adapter_dir / "fake_good.so");
  const json& m = p.document;
  EXPECT_EQ(m["manifest_version"], 1);
  EXPECT_EQ(m["name"], "fake_good");
  EXPECT_EQ(m["version"], "1.0.0");
  EXPECT_EQ(m["architectures"], json({"FakeForCausalLM"}));
  EXPECT_EQ(m["model_types"], json({"fake"}));
  EXPECT_EQ(m["sdk_abi"], LLM2HEF_ADAPTER_ABI_VERSION);
  EXPECT_EQ(m["sdk_fingerprint"], host_fingerprint());
  EXPECT_EQ(m["library"]["file"], "adapter.so");
  EXPECT_EQ(m["library"]["sha256"], sha256_file_hex(p.library));
  EXPECT_EQ(m["library"]["size"], fs::file_size(p.library));
  EXPECT_EQ(m["license"], "MIT");
  EXPECT_EQ(m["homepage"], "https://example.org/adapters");
  EXPECT_TRUE(manifest_schema().validate(m).empty());
}

TEST(RegistryManifest, RefusesAnInvalidPublisher) {
  Publisher bad{"", "me", "not a url"};
  try {
    make_manifest(llm2hef::plugins::load_adapter(adapter_dir / "fake_good.so"), bad);
    FAIL() << "accepted an empty license and a bad homepage";
  } catch (const llm2hef::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("field 'homepage': \"not a url\" does not match"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("field 'license': must not be empty"), std::string::npos) << e.what();
  }
}

TEST(RegistryVerify, AFaithfulManifestPasses) {
  Published p(adapter_dir / "fake_good.so");
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_TRUE(v.passed());
  EXPECT_EQ(names_of(v), "schema,library,sha256,abi,load,identity,claims");
  EXPECT_EQ(v.adapter, "fake_good");
  EXPECT_EQ(v.library, p.library);
}

TEST(RegistryVerify, ATamperedLibraryFailsTheChecksumAndIsNeverLoaded) {
  Published p(adapter_dir / "fake_good.so");
  {
    // Flip one byte in the middle of the file, as a patched binary would.
    std::fstream f(p.library, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(fs::file_size(p.library) / 2));
    char c = 0;
    f.read(&c, 1);
    f.seekp(static_cast<std::streamoff>(fs::file_size(p.library) / 2));
    c = static_cast<char>(c ^ 0x5a);
    f.write(&c, 1);
  }
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_FALSE(v.passed());
  EXPECT_EQ(names_of(v), "schema,library,sha256!");  // no "load": the code was not run
  EXPECT_EQ(detail_of(v, "sha256"), "checksum mismatch: manifest says " +
                                        p.document["library"]["sha256"].get<std::string>() + ", file has " +
                                        sha256_file_hex(p.library) +
                                        " (the library was changed after the manifest was written; it was not loaded)");
}

TEST(RegistryVerify, SizeIsCheckedToo) {
  Published p(adapter_dir / "fake_good.so");
  p.document["library"]["size"] = 1;
  p.save();
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_EQ(names_of(v), "schema,library,sha256!");
  EXPECT_EQ(detail_of(v, "sha256"), "size mismatch: manifest says 1 bytes, file has " +
                                        std::to_string(fs::file_size(p.library)) + " (it was not hashed or loaded)");
}

TEST(RegistryVerify, ClaimsMustEqualWhatTheLibraryReports) {
  Published p(adapter_dir / "claim_a.so");
  p.document["architectures"] = json({"ClashForCausalLM", "ExtraForCausalLM"});
  p.document["model_types"] = json::array();
  p.save();
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_EQ(names_of(v), "schema,library,sha256,abi,load,identity,claims!");
  EXPECT_EQ(detail_of(v, "claims"),
            "architectures claimed by the manifest but not by the library: ExtraForCausalLM; architectures the "
            "library claims but the manifest does not list: OnlyAForCausalLM; model_types the library claims but the "
            "manifest does not list: clash");
}

TEST(RegistryVerify, NameAndVersionMustMatch) {
  Published p(adapter_dir / "fake_good.so");
  p.document["name"] = "impostor";
  p.document["version"] = "9.9.9";
  p.save();
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_EQ(detail_of(v, "identity"),
            "library is adapter 'fake_good', manifest says 'impostor'; library is version 1.0.0, manifest says 9.9.9");
  EXPECT_FALSE(v.passed());
}

TEST(RegistryVerify, AbiAndFingerprintOfTheManifest) {
  Published p(adapter_dir / "fake_good.so");
  const unsigned other = LLM2HEF_ADAPTER_ABI_VERSION + 1;
  p.document["sdk_abi"] = other;
  p.save();
  EXPECT_EQ(detail_of(verify_one(p.manifest), "abi"), "built for SDK ABI " + std::to_string(other) +
                                                          ", this llm2hef speaks ABI " +
                                                          std::to_string(LLM2HEF_ADAPTER_ABI_VERSION));
  p.document["sdk_abi"] = LLM2HEF_ADAPTER_ABI_VERSION;
  p.document["sdk_fingerprint"] = "gcc-1;other";
  p.save();
  EXPECT_EQ(detail_of(verify_one(p.manifest), "abi"),
            std::string("built with fingerprint 'gcc-1;other', this llm2hef is '") + host_fingerprint() + "'");
}

TEST(RegistryVerify, ALibraryBuiltForAnotherAbiFailsToLoad) {
  // The manifest lies about the ABI; the checksum is right, so the loader's
  // own check is what catches it.
  Published good(adapter_dir / "fake_good.so");
  TempDir dir;
  fs::copy_file(adapter_dir / "wrong_abi.so", dir / "wrong.so");
  json m = good.document;
  m["library"] = {{"file", "wrong.so"}, {"sha256", sha256_file_hex(dir / "wrong.so")}};
  std::ofstream(dir / "wrong.json") << m.dump();
  ManifestVerdict v = verify_one(dir / "wrong.json");
  EXPECT_EQ(names_of(v), "schema,library,sha256,abi,load!");
  EXPECT_NE(detail_of(v, "load").find("ABI version"), std::string::npos) << detail_of(v, "load");
}

TEST(RegistryVerify, MissingOrUnsafeLibrary) {
  Published p(adapter_dir / "fake_good.so");
  fs::permissions(p.library, fs::perms::others_write, fs::perm_options::add);
  ManifestVerdict unsafe = verify_one(p.manifest);
  EXPECT_EQ(names_of(unsafe), "schema,library!");
  EXPECT_EQ(detail_of(unsafe, "library"), p.library.string() +
                                              ": file is world-writable; refusing to load it (pass "
                                              "--allow-unsafe-adapters to override)");
  EXPECT_TRUE(verify_one(p.manifest, {.allow_unsafe = true}).passed());

  fs::remove(p.library);
  EXPECT_EQ(detail_of(verify_one(p.manifest), "library"),
            p.library.string() +
                ": not found (library.file is looked for in the manifest's folder; pass --library FILE for a "
                "library kept elsewhere)");
}

TEST(RegistryVerify, TheLibraryGivenIsCheckedInsteadOfTheOneBeside) {
  Published p(adapter_dir / "fake_good.so");
  const fs::path elsewhere = p.library.parent_path() / "elsewhere";
  fs::create_directories(elsewhere);
  const fs::path moved = elsewhere / "kept.so";
  fs::rename(p.library, moved);
  EXPECT_EQ(names_of(verify_one(p.manifest)), "schema,library!");
  const ManifestVerdict given = verify_one(p.manifest, {.library = moved});
  EXPECT_TRUE(given.passed()) << names_of(given);
  EXPECT_EQ(given.library, moved);
  // Given, it wins over a library beside the manifest.
  fs::copy_file(adapter_dir / "claim_a.so", p.library);  // another library: its checksum fails
  EXPECT_TRUE(verify_one(p.manifest, {.library = moved}).passed());
  EXPECT_FALSE(verify_one(p.manifest).passed());
  // A folder or an index of several manifests has no one library.
  EXPECT_THROW(llm2hef::registry::verify_published(p.library.parent_path(), {.library = moved}), llm2hef::UsageError);
}

TEST(RegistryVerify, SchemaErrorsStopEarly) {
  Published p(adapter_dir / "fake_good.so");
  p.document.erase("maintainer");
  p.document["library"]["file"] = "../elsewhere.so";
  p.save();
  ManifestVerdict v = verify_one(p.manifest);
  EXPECT_EQ(names_of(v), "schema!");
  EXPECT_EQ(detail_of(v, "schema"),
            "field 'maintainer': is required; field 'library.file': \"../elsewhere.so\" does not match "
            "^[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\\.so$");  // no hidden file (issue 30, item 16)
}

TEST(RegistryVerify, IndexesAndFolders) {
  TempDir dir;
  fs::copy_file(adapter_dir / "fake_good.so", dir / "fake_good.so");
  fs::copy_file(adapter_dir / "claim_a.so", dir / "claim_a.so");
  json index = make_index({make_manifest(llm2hef::plugins::load_adapter(dir / "fake_good.so"), kPublisher),
                           make_manifest(llm2hef::plugins::load_adapter(dir / "claim_a.so"), kPublisher)});
  EXPECT_EQ(index["index_version"], 1);
  EXPECT_EQ(index["adapters"][0]["name"], "claim_a");  // sorted by name
  std::ofstream(dir / "index.json") << index.dump();

  VerifyReport report = verify_published(dir.path());  // the folder: every *.json
  ASSERT_EQ(report.manifests.size(), 2u);
  EXPECT_TRUE(report.passed());
  EXPECT_EQ(report.manifests[1].source, (dir / "index.json").string() + "#adapters[1]");
  EXPECT_EQ(report.to_json()["ok"], true);

  index["adapters"][1]["license"] = "";
  std::ofstream(dir / "index.json") << index.dump();
  report = verify_published(dir / "index.json");
  EXPECT_FALSE(report.passed());
  EXPECT_TRUE(report.manifests[0].passed());
  EXPECT_EQ(report.to_text().substr(0, 5), "PASS ");

  std::ofstream(dir / "index.json") << R"({"index_version": 7, "adapters": []})";
  EXPECT_THROW(verify_published(dir / "index.json"), llm2hef::BadInput);
  std::ofstream(dir / "index.json") << "{not json";
  EXPECT_THROW(verify_published(dir / "index.json"), llm2hef::BadInput);
  TempDir empty;
  EXPECT_THROW(verify_published(empty.path()), llm2hef::BadInput);
}

}  // namespace
