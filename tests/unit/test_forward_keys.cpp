// The forward-key table (sdk/forward_keys.hpp): neutral values pass, others
// are refused naming the key, keys an adapter applies are skipped, and a key
// an adapter names that the table lacks is an llm2hef bug.
#include <gtest/gtest.h>

#include <string>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"

using llm2hef::sdk::changes_forward;
using llm2hef::sdk::JsonFile;
using llm2hef::sdk::refuse_unapplied_forward_keys;
using nlohmann::json;

namespace {

JsonFile config(json extra) {
  json doc = {{"hidden_size", 64}, {"num_attention_heads", 4}, {"num_hidden_layers", 2}};
  doc.update(extra);
  return JsonFile("config.json", doc);
}

std::string refusal(const JsonFile& c, const std::vector<std::string>& applied = {}) {
  try {
    refuse_unapplied_forward_keys(c, applied);
  } catch (const llm2hef::Unsupported& e) {
    return e.what();
  }
  return "";
}

TEST(ForwardKeys, NeutralValuesPass) {
  EXPECT_EQ(refusal(config({{"attention_bias", false},
                            {"mlp_bias", nullptr},
                            {"partial_rotary_factor", 1.0},
                            {"final_logit_softcapping", nullptr},
                            {"attention_multiplier", 0.25},  // 1/sqrt(64/4)
                            {"layer_types", {"full_attention", "full_attention"}},
                            {"word_embed_proj_dim", 64},
                            {"scale_attn_weights", true}})),
            "");
}

TEST(ForwardKeys, AWindowCountsOnlyWhenSlidingIsOn) {
  EXPECT_FALSE(changes_forward(config({{"sliding_window", 4096}, {"use_sliding_window", false}}), "sliding_window"));
  EXPECT_TRUE(changes_forward(config({{"sliding_window", 4096}}), "sliding_window"));
}

TEST(ForwardKeys, PartialRotaryIsFoundInsideTheRopeDict) {
  const JsonFile c = config({{"rope_parameters", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}}});
  EXPECT_TRUE(changes_forward(c, "partial_rotary_factor"));
  const std::string why = refusal(c);
  EXPECT_NE(why.find("'rope_parameters'"), std::string::npos) << why;
  EXPECT_NE(why.find("partial_rotary_factor"), std::string::npos) << why;
}

// Which adapters apply the key is the host's to add (it knows them all):
// the SDK's refusal carries the key for it.
TEST(ForwardKeys, ARefusalNamesKeyAndValueAndCarriesTheKey) {
  try {
    refuse_unapplied_forward_keys(config({{"attn_logit_softcapping", 50.0}}), {});
    FAIL() << "attn_logit_softcapping was accepted";
  } catch (const llm2hef::sdk::UnappliedForwardKey& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("'attn_logit_softcapping'"), std::string::npos) << why;
    EXPECT_NE(why.find("50"), std::string::npos) << why;
    EXPECT_EQ(why.find("--adapter"), std::string::npos) << why;
    EXPECT_EQ(e.key(), "attn_logit_softcapping");
    EXPECT_EQ(e.code(), llm2hef::ExitCode::unsupported);
  }
}

TEST(ForwardKeys, PresenceAloneSteersForKeysWithoutANeutralValue) {
  EXPECT_TRUE(changes_forward(config({{"query_pre_attn_scalar", 16}}), "query_pre_attn_scalar"));
  EXPECT_TRUE(changes_forward(config({{"no_rope_layer_interval", 4}}), "no_rope_layer_interval"));
}

TEST(ForwardKeys, AppliedKeysAreLeftToTheAdapter) {
  EXPECT_EQ(refusal(config({{"qk_layernorm", true}, {"partial_rotary_factor", 0.4}}),
                    {"qk_layernorm", "partial_rotary_factor"}),
            "");
}

TEST(ForwardKeys, AnUnknownAppliedKeyIsAnInternalError) {
  EXPECT_THROW(refuse_unapplied_forward_keys(config(json::object()), {"attention_bais"}), llm2hef::InternalError);
}

TEST(ForwardKeys, EveryRowHasItsTexts) {
  for (const auto& k : llm2hef::sdk::forward_keys()) {
    EXPECT_TRUE(k.key && *k.key && k.what && *k.what && k.neutral && *k.neutral);
    EXPECT_FALSE(changes_forward(config(json::object()), k.key)) << k.key << ": an absent key changes nothing";
  }
}

}  // namespace
