// Merging shard results: the suite's order comes back, the environment is merged member by
// member, missing shards are reported, and every inconsistency between the inputs is refused.
#include "harness/results/merge.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/results/compare.hpp"

namespace ampbench::results {
namespace {

// Shard `index` of `count` of a suite whose cases are k0 ... k{cases-1}: the cases whose index
// % count == index, as `ampbench run --shard` selects them.
ResultDocument shard(std::size_t index, std::size_t count, std::size_t cases,
                     const std::string& suite = "s") {
  nlohmann::json records = nlohmann::json::array();
  for (std::size_t i = index; i < cases; i += count) {
    records.push_back({{"key", fmt::format("k{}", i)},
                       {"kind", "audit"},
                       {"status", i == 4 ? "fail" : "pass"},
                       {"metrics", {{"max_ulp", static_cast<double>(i)}}}});
  }
  const std::string started = fmt::format("2026-11-29T10:0{}:00Z", count - index);
  return {fmt::format("shard{}.json", index),
          {{"schema", "ampbench.result/1"},
           {"suite", suite},
           {"shard", fmt::format("{}/{}", index, count)},
           {"environment",
            {{"git_revision", "abc"},
             {"hostname", fmt::format("node{}", index)},
             {"cores", 2},
             {"started", started},
             {"finished", fmt::format("2026-11-29T11:0{}:00Z", index)}}},
           {"records", records}}};
}

// The same shard as `ampbench run` writes it now: the cases it expects, the suite's, complete.
ResultDocument complete_shard(std::size_t index, std::size_t count, std::size_t cases) {
  ResultDocument s = shard(index, count, cases);
  std::vector<std::string> expected;
  std::vector<std::string> suite;
  for (std::size_t i = 0; i < cases; ++i) {
    suite.push_back(fmt::format("k{}", i));
    if (i % count == index) expected.push_back(suite.back());
  }
  s.document["expected"] = {{"cases", expected.size()}, {"keys", expected}};
  if (count > 1) s.document["expected"]["suite_keys"] = suite;
  s.document["complete"] = true;
  return s;
}

std::vector<std::string> keys(const nlohmann::json& document) {
  std::vector<std::string> k;
  for (const auto& r : document["records"]) k.push_back(r["key"].get<std::string>());
  return k;
}

TEST(Merge, ShardsComeBackInTheSuitesOrderWhateverTheirOrder) {
  const std::vector<ResultDocument> shards{shard(2, 3, 7), shard(0, 3, 7), shard(1, 3, 7)};
  const Merged merged = merge_shards(shards);
  EXPECT_TRUE(merged.missing_shards.empty());
  EXPECT_EQ(merged.shard_count, 3u);
  EXPECT_EQ(keys(merged.document),
            (std::vector<std::string>{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}));
  EXPECT_EQ(merged.document["shard"], "0/1");
  EXPECT_EQ(merged.document["suite"], "s");
  // The merged record is a result record compare accepts, with every record intact.
  const ResultFile file = parse_result(merged.document, "merged");
  ASSERT_EQ(file.records.size(), 7u);
  EXPECT_FALSE(file.records[4].pass);
  EXPECT_EQ(file.records[6].metrics.at("max_ulp"), 6.0);
}

TEST(Merge, EnvironmentKeepsWhatTheShardsAgreeOn) {
  const std::vector<ResultDocument> shards{shard(0, 2, 5), shard(1, 2, 5)};
  const nlohmann::json merged = merge_shards(shards).document;
  const auto& environment = merged["environment"];
  EXPECT_EQ(environment["git_revision"], "abc");
  EXPECT_EQ(environment["cores"], 2);
  EXPECT_EQ(environment["hostname"], "mixed");
  EXPECT_EQ(environment["started"], "2026-11-29T10:01:00Z");   // the earliest (shard 1's)
  EXPECT_EQ(environment["finished"], "2026-11-29T11:01:00Z");  // the latest (shard 1's)
  ASSERT_EQ(merged["merged_from"].size(), 2u);
  EXPECT_EQ(merged["merged_from"][0]["shard"], "0/2");
  EXPECT_EQ(merged["merged_from"][0]["environment"]["hostname"], "node0");
  EXPECT_EQ(merged["merged_from"][1]["records"], 2);
}

// The structured device (device.hpp) of shards of one device is kept; of several, it is "mixed",
// which readers take for mixed devices.
TEST(Merge, TheDeviceIsKeptWhenTheShardsAgree) {
  const nlohmann::json h200{{"kind", "gpu"}, {"name", "TEST FIXTURE H200"}};
  std::vector<ResultDocument> shards{shard(0, 2, 5), shard(1, 2, 5)};
  for (auto& s : shards) s.document["environment"]["device"] = h200;
  const Merged same = merge_shards(shards);
  EXPECT_EQ(same.document["environment"]["device"], h200);
  EXPECT_EQ(label_of(parse_result(same.document, "merged").device), "TEST FIXTURE H200");
  shards[1].document["environment"]["device"]["name"] = "TEST FIXTURE B200";
  const Merged mixed = merge_shards(shards);
  EXPECT_EQ(mixed.document["environment"]["device"], "mixed");
  EXPECT_EQ(parse_result(mixed.document, "merged").device.kind, "mixed");
}

TEST(Merge, MissingShardsAreReportedAndNamedInTheShardMember) {
  const std::vector<ResultDocument> shards{shard(0, 3, 7), shard(2, 3, 7)};
  const Merged merged = merge_shards(shards);
  EXPECT_EQ(merged.missing_shards, std::vector<std::size_t>{1});
  EXPECT_EQ(keys(merged.document), (std::vector<std::string>{"k0", "k2", "k3", "k5", "k6"}));
  EXPECT_EQ(merged.document["shard"], "0,2/3");
}

TEST(Merge, WhatABackendCouldNotRunIsListedOnce) {
  std::vector<ResultDocument> shards{shard(0, 2, 4), shard(1, 2, 4)};
  for (auto& s : shards) {
    s.document["not_run"] = {{{"key", "train/mlp/backend=cuda"}, {"why", "no CUDA training"}}};
  }
  const nlohmann::json merged = merge_shards(shards).document;
  ASSERT_EQ(merged["not_run"].size(), 1u);
  EXPECT_EQ(merged["not_run"][0]["why"], "no CUDA training");
  EXPECT_FALSE(
      merge_shards(std::vector<ResultDocument>{shard(0, 1, 2)}).document.contains("not_run"));
}

TEST(Merge, EmptyShardsMergeToo) {
  // More shards than cases: some shards ran nothing, and their records are still a valid part.
  const std::vector<ResultDocument> shards{shard(0, 4, 2), shard(1, 4, 2), shard(2, 4, 2),
                                           shard(3, 4, 2)};
  const Merged merged = merge_shards(shards);
  EXPECT_EQ(keys(merged.document), (std::vector<std::string>{"k0", "k1"}));
  EXPECT_EQ(merged.document["shard"], "0/1");
}

// Shards that name the suite's cases merge in its order, and the merged record expects them all.
TEST(Merge, ShardsThatNameTheSuitesCasesMergeInItsOrder) {
  const std::vector<ResultDocument> shards{complete_shard(1, 3, 7), complete_shard(2, 3, 7),
                                           complete_shard(0, 3, 7)};
  const Merged merged = merge_shards(shards);
  EXPECT_TRUE(merged.complete());
  EXPECT_TRUE(merged.unknown_shards.empty());
  EXPECT_EQ(keys(merged.document),
            (std::vector<std::string>{"k0", "k1", "k2", "k3", "k4", "k5", "k6"}));
  EXPECT_EQ(merged.document["complete"], true);
  EXPECT_EQ(merged.document["expected"]["cases"], 7);
  EXPECT_FALSE(merged.document.contains("missing"));
  EXPECT_TRUE(parse_result(merged.document, "m").completeness->complete);
}

// A shard that stopped early and a missing shard: their cases are named, in the suite's order,
// and the merged record is partial.
TEST(Merge, ShardsThatStoppedOrAreMissingAreNamedWithTheirCases) {
  ResultDocument stopped = complete_shard(1, 3, 7);  // k1, k4
  stopped.document["records"].erase(1);
  stopped.document["complete"] = false;
  const Merged merged = merge_shards(std::vector<ResultDocument>{complete_shard(0, 3, 7), stopped});
  EXPECT_FALSE(merged.complete());
  EXPECT_EQ(merged.missing_shards, std::vector<std::size_t>{2});
  ASSERT_EQ(merged.partial_shards.size(), 1u);
  EXPECT_EQ(merged.partial_shards[0].source, "shard1.json");
  EXPECT_EQ(merged.partial_shards[0].expected, 2u);
  EXPECT_EQ(merged.partial_shards[0].missing, std::vector<std::string>{"k4"});
  EXPECT_EQ(merged.missing_cases, (std::vector<std::string>{"k2", "k4", "k5"}));
  EXPECT_EQ(keys(merged.document), (std::vector<std::string>{"k0", "k1", "k3", "k6"}));
  EXPECT_EQ(merged.document["complete"], false);
  EXPECT_EQ(merged.document["missing"], nlohmann::json::array({"k2", "k4", "k5"}));
  const ResultFile file = parse_result(merged.document, "m");
  EXPECT_EQ(file.completeness->missing, (std::vector<std::string>{"k2", "k4", "k5"}));
  // A shard from before the members: merged as before, the merged completeness unknown.
  const Merged mixed =
      merge_shards(std::vector<ResultDocument>{complete_shard(0, 2, 4), shard(1, 2, 4)});
  EXPECT_EQ(mixed.unknown_shards, std::vector<std::string>{"shard1.json"});
  EXPECT_FALSE(mixed.document.contains("complete"));
  EXPECT_EQ(keys(mixed.document), (std::vector<std::string>{"k0", "k1", "k2", "k3"}));
}

void expect_refused(std::vector<ResultDocument> shards, const std::string& message) {
  try {
    merge_shards(shards);
    ADD_FAILURE() << "merged, expected: " << message;
  } catch (const ResultError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(Merge, InconsistentShardsAreRefusedWithTheirSource) {
  expect_refused({}, "no shard results to merge");
  expect_refused({shard(0, 2, 5), shard(0, 2, 5)}, "shard0.json: shard 0/2 is also shard0.json");
  expect_refused({shard(0, 2, 5), shard(1, 2, 5, "other")},
                 "shard1.json: suite \"other\", but shard0.json is of suite \"s\"");
  expect_refused({shard(0, 2, 5), shard(1, 3, 5)},
                 "shard1.json: shard 1/3, but shard0.json is one of 2 shards");
  ResultDocument overlapping = shard(1, 2, 5);
  overlapping.document["records"].push_back(shard(0, 2, 5).document["records"][0]);
  expect_refused({shard(0, 2, 5), overlapping}, "shard1.json: case k0 is also in shard0.json");
  ResultDocument partial = shard(0, 2, 5);
  partial.document["shard"] = "0,2/3";
  expect_refused({partial}, "shard0.json: shard \"0,2/3\"");
  ResultDocument other_suite = complete_shard(1, 2, 5);
  other_suite.document["expected"]["suite_keys"][4] = "k9";
  expect_refused({complete_shard(0, 2, 5), other_suite},
                 "shard1.json: its suite's cases differ from those of shard0.json");
  ResultDocument wrong_share = complete_shard(1, 2, 4);
  wrong_share.document["expected"]["keys"] = {"k1"};
  wrong_share.document["records"].erase(1);
  expect_refused({wrong_share},
                 "shard1.json: the cases it expects are not shard 1/2 of its suite's");
  ResultDocument not_result = shard(0, 1, 1);
  not_result.document["schema"] = "ampbench.audit/1";
  expect_refused({not_result}, "shard0.json: not an ampbench.result/1 record");
}

}  // namespace
}  // namespace ampbench::results
