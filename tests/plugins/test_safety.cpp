// Safety refusals: adapters are native code, so the host refuses files from a
// world-writable folder, world-writable files and files owned by someone else
// before dlopen-ing them, unless SearchOptions::allow_unsafe.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llm2hef/plugins/host.hpp"
#include "test_support.hpp"

namespace {

using namespace llm2hef::plugins;
using namespace llm2hef_test;

const fs::path fake_good{LLM2HEF_TEST_FAKE_GOOD};
constexpr const char* kHint = " (pass --allow-unsafe-adapters to override)";

AdapterHost discovered(const fs::path& root, bool allow_unsafe = false) {
  AdapterHost host(SearchOptions{.explicit_paths = {root.string()},
                                 .environment = std::nullopt,
                                 .install_dir = {},
                                 .build_dir = {},
                                 .user_dir = {},
                                 .allow_unsafe = allow_unsafe});
  host.discover();
  return host;
}

// A fresh folder holding a copy of fake_good.so, with the given modes.
struct Fixture {
  TempDir dir;
  fs::path file = dir / "fake_good.so";

  Fixture(fs::perms dir_mode, fs::perms file_mode) {
    fs::copy_file(fake_good, file);
    fs::permissions(file, file_mode);
    fs::permissions(dir.path(), dir_mode);
  }
  ~Fixture() {
    std::error_code ec;
    fs::permissions(dir.path(), fs::perms::owner_all, ec);  // so TempDir can clean up
  }
};

constexpr fs::perms k0755 = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec;
constexpr fs::perms k0777 = fs::perms::all;
constexpr fs::perms k0666 = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                            fs::perms::group_write | fs::perms::others_read | fs::perms::others_write;

void expect_refused(const AdapterHost& host, const std::string& reason) {
  EXPECT_TRUE(host.adapters().empty());
  ASSERT_EQ(host.considered().size(), 1u);
  const Considered& c = host.considered()[0];
  EXPECT_FALSE(c.loaded);
  EXPECT_TRUE(c.unsafe);
  EXPECT_FALSE(c.error.has_value());  // never opened as a library
  EXPECT_EQ(c.reason, reason);
}

void expect_loads(const AdapterHost& host) {
  EXPECT_EQ(host.names(), std::vector<std::string>{"fake_good"});
  ASSERT_EQ(host.considered().size(), 1u);
  EXPECT_TRUE(host.considered()[0].loaded);
  EXPECT_FALSE(host.considered()[0].unsafe);
  EXPECT_EQ(host.considered()[0].reason, "");
}

// After a refusal the host still works: a good adapter in a safe folder loads.
void expect_good_still_loads() {
  Fixture good(k0755, k0755);
  expect_loads(discovered(good.dir.path()));
}

TEST(Safety, WorldWritableFolderIsRefused) {
  Fixture f(k0777, k0755);
  AdapterHost host = discovered(f.dir.path());
  expect_refused(host,
                 "folder " + f.dir.path().string() + " is world-writable; refusing to load adapters from it" + kHint);
  ASSERT_EQ(host.roots().size(), 1u);
  EXPECT_TRUE(host.roots()[0].world_writable);
  EXPECT_EQ(host.roots()[0].state, SearchRoot::State::folder);
  EXPECT_FALSE(host.roots()[0].note.empty());
  expect_good_still_loads();
}

TEST(Safety, WorldWritableFolderLoadsWithAllowUnsafe) {
  Fixture f(k0777, k0755);
  AdapterHost host = discovered(f.dir.path(), true);
  expect_loads(host);
  EXPECT_TRUE(host.roots()[0].world_writable);
}

TEST(Safety, PrivateFolderLoads) {
  Fixture f(k0755, k0755);
  AdapterHost host = discovered(f.dir.path());
  expect_loads(host);
  EXPECT_FALSE(host.roots()[0].world_writable);
  EXPECT_EQ(host.roots()[0].note, "");
}

TEST(Safety, WorldWritableFileIsRefused) {
  Fixture f(k0755, k0666);
  expect_refused(discovered(f.dir.path()), std::string("file is world-writable; refusing to load it") + kHint);
  // Named directly as well as found in a folder.
  expect_refused(discovered(f.file), std::string("file is world-writable; refusing to load it") + kHint);
  expect_good_still_loads();
}

TEST(Safety, WorldWritableFileLoadsWithAllowUnsafe) {
  Fixture f(k0755, k0666);
  expect_loads(discovered(f.dir.path(), true));
}

TEST(Safety, FileOwnedBySomeoneElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown the copy to another user";
  Fixture f(k0755, k0755);
  ASSERT_EQ(::chown(f.file.c_str(), 65534, static_cast<gid_t>(-1)), 0);
  expect_refused(discovered(f.dir.path()),
                 std::string("file is owned by uid 65534, not by you or root; refusing to load it") + kHint);
  expect_good_still_loads();

  expect_loads(discovered(f.dir.path(), true));
}

TEST(Safety, SymlinkIsCheckedOnItsTarget) {
  Fixture target(k0755, k0666);
  TempDir links;
  fs::create_symlink(target.file, links / "fake_good.so");
  expect_refused(discovered(links.path()), std::string("file is world-writable; refusing to load it") + kHint);
}

std::string folder_refusal(const fs::path& dir) {
  return "folder " + fs::canonical(dir).string() +
         " on the path to the library is world-writable; refusing to load it" + kHint;
}

TEST(Safety, LinkInPrivateFolderToLibraryInWorldWritableFolderIsRefused) {
  Fixture target(k0777, k0755);  // anyone could swap the library the link points to
  TempDir links;
  fs::create_symlink(target.file, links / "fake_good.so");
  expect_refused(discovered(links.path()), folder_refusal(target.dir.path()));
  expect_refused(discovered(links / "fake_good.so"), folder_refusal(target.dir.path()));
  expect_loads(discovered(links.path(), true));
  expect_good_still_loads();
}

TEST(Safety, LinkInWorldWritableFolderToSafeLibraryIsRefused) {
  Fixture target(k0755, k0755);
  Fixture links(k0777, k0755);  // anyone could repoint the link
  fs::remove(links.file);
  fs::create_symlink(target.file, links.file);
  // Found by scanning the folder: the folder rule.
  expect_refused(discovered(links.dir.path()), "folder " + links.dir.path().string() +
                                                   " is world-writable; refusing to load adapters from it" + kHint);
  // Named directly: the rule for folders on the path.
  expect_refused(discovered(links.file), folder_refusal(links.dir.path()));
  expect_loads(discovered(links.file, true));
}

TEST(Safety, WorldWritableFolderHigherUpIsRefused) {
  TempDir outer;
  const fs::path inner = outer / "private";
  fs::create_directory(inner);
  fs::permissions(inner, k0755);
  fs::copy_file(fake_good, inner / "fake_good.so");
  fs::permissions(outer.path(), k0777);  // anyone could rename "private" away and put their own in its place
  expect_refused(discovered(inner), folder_refusal(outer.path()));
  // With the sticky bit (like /tmp) nobody else may rename what we own there.
  fs::permissions(outer.path(), k0777 | fs::perms::sticky_bit);
  expect_loads(discovered(inner));
  fs::permissions(outer.path(), fs::perms::owner_all);
}

TEST(Safety, FolderOwnedBySomeoneElseHigherUpIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a folder to another user";
  TempDir outer;
  const fs::path inner = outer / "theirs";
  fs::create_directory(inner);
  fs::permissions(inner, k0755);
  fs::copy_file(fake_good, inner / "fake_good.so");
  ASSERT_EQ(::chown(inner.c_str(), 65534, static_cast<gid_t>(-1)), 0);
  expect_refused(discovered(inner), "folder " + fs::canonical(inner).string() +
                                        " on the path to the library is owned by uid 65534, not by you or root; "
                                        "refusing to load it" +
                                        kHint);
  expect_loads(discovered(inner, true));
}

}  // namespace
