// How a Hub id is read off the command line (core/hub/hub_id.hpp), where the
// Hugging Face cache is (hub_settings.hpp), and the git blob id a download of
// a file kept in git is checked against (registry/git_blob_id.hpp).
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "llm2hef/core/hub/hub_id.hpp"
#include "llm2hef/core/hub/hub_settings.hpp"
#include "llm2hef/registry/git_blob_id.hpp"
#include "llm2hef/sdk/errors.hpp"

using llm2hef::core::hub::parse_hub_id;

TEST(HubId, Forms) {
  auto id = parse_hub_id("HuggingFaceTB/SmolLM2-135M-Instruct");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "HuggingFaceTB/SmolLM2-135M-Instruct");
  EXPECT_EQ(id->revision, "main");
  EXPECT_EQ(id->file, "");

  id = parse_hub_id("org/name@v1.0");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "org/name");
  EXPECT_EQ(id->revision, "v1.0");

  id = parse_hub_id("org/name@refs/pr/1");  // a revision with '/': all of it
  ASSERT_TRUE(id);
  EXPECT_EQ(id->revision, "refs/pr/1");
  EXPECT_EQ(id->file, "");

  id = parse_hub_id("org/name-GGUF/model-f16.gguf");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "org/name-GGUF");
  EXPECT_EQ(id->file, "model-f16.gguf");

  id = parse_hub_id("org/name-GGUF@abc/BF16/model-00001-of-00002.gguf");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->revision, "abc");
  EXPECT_EQ(id->file, "BF16/model-00001-of-00002.gguf");
}

TEST(HubId, NotHubIds) {
  for (const char* text :
       {"model", "./org/name", "/abs/path", "org/name/", "org/", "/name", "org//name", "org/name/config.json",
        "org/name/../x.gguf", "-org/name", "org/name.", "org/na--me", "org/na..me", "org/name@", "org/name@a b",
        "org/name@..", "org/name@a/../b", "~user/name", "org/name/a\\b.gguf"})
    EXPECT_FALSE(parse_hub_id(text)) << text;
  EXPECT_FALSE(parse_hub_id("org/" + std::string(97, 'a')));
}

TEST(HubId, SafeRepoPaths) {
  using llm2hef::core::hub::is_safe_repo_path;
  EXPECT_TRUE(is_safe_repo_path("model.safetensors"));
  EXPECT_TRUE(is_safe_repo_path("additional_chat_templates/tool_use.jinja"));
  for (const char* p : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", "a\nb", "a\\b"})
    EXPECT_FALSE(is_safe_repo_path(p)) << p;
}

TEST(HubSettings, CacheAndEnvironment) {
  using llm2hef::core::hub::hub_settings_from_environment;
  for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HF_TOKEN", "HF_ENDPOINT",
                        "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN_PATH"})
    ::unsetenv(v);
  ::setenv("HOME", "/home/u", 1);
  auto s = hub_settings_from_environment();
  EXPECT_EQ(s.cache, "/home/u/.cache/huggingface/hub");
  EXPECT_EQ(s.endpoint, "https://huggingface.co");
  EXPECT_FALSE(s.offline);

  ::setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(hub_settings_from_environment().cache, "/x/huggingface/hub");
  ::setenv("HF_HOME", "/h", 1);
  EXPECT_EQ(hub_settings_from_environment().cache, "/h/hub");
  ::setenv("HF_HUB_CACHE", "/c", 1);
  ::setenv("HF_ENDPOINT", "http://mirror.example/", 1);
  ::setenv("HF_HUB_OFFLINE", "yes", 1);
  ::setenv("HF_TOKEN", " hf_abc \n", 1);
  s = hub_settings_from_environment();
  EXPECT_EQ(s.cache, "/c");
  EXPECT_EQ(s.endpoint, "http://mirror.example");
  EXPECT_TRUE(s.offline);
  EXPECT_EQ(s.token.value_or(""), "hf_abc");
  EXPECT_EQ(llm2hef::core::hub::repo_cache_dir(s.cache, "org/name"), "/c/models--org--name");

  ::setenv("HF_TOKEN", "hf_a\r\nX-Injected: 1", 1);  // would end up in a request header
  EXPECT_THROW(hub_settings_from_environment(), llm2hef::BadInput);
  for (const char* v : {"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HF_TOKEN", "HF_ENDPOINT", "HF_HUB_OFFLINE"})
    ::unsetenv(v);
}

TEST(GitBlobId, AsGitHashObject) {
  // `git hash-object` of an empty file and of "hello\n".
  llm2hef::registry::GitBlobId empty(0);
  EXPECT_EQ(empty.finish_hex(), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  llm2hef::registry::GitBlobId hello(6);
  hello.update("hel", 3);
  hello.update("lo\n", 3);
  EXPECT_EQ(hello.finish_hex(), "ce013625030ba8dba906f756967f9e9ca394464a");
}
