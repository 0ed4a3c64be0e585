// The comparison of devices: which cases disagree beyond the tolerance and in what, the order
// (disagreeing cases first), the ratios to the first device, the page and its Markdown, and the
// inputs that are refused. The records here are built for the test: their devices' names say so.
#include "harness/results/device_comparison.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/results/compare.hpp"

namespace ampbench::results {
namespace {

ResultDocument on_device(const std::string& source, const std::string& device,
                         const std::string& records, const std::string& suite = "t") {
  return {source, nlohmann::json::parse(R"({"schema": "ampbench.result/1", "suite": ")" + suite +
                                        R"(", "shard": "0/1", "tolerance": 0.1,
      "environment": {"cpu": "Test CPU", "device": )" +
                                        device + R"(}, "records": )" + records + "}")};
}

const char* const kA100 =
    R"({"kind": "gpu", "name": "TEST FIXTURE A100", "compute_capability": "8.0", "sms": 108})";
const char* const kH200 =
    R"({"kind": "gpu", "name": "TEST FIXTURE H200", "compute_capability": "9.0"})";
const char* const kEmulation = R"({"kind": "cpu-emulation", "name": "Test CPU", "mma": []})";

std::string audit(const std::string& key, const char* status, double normwise, double ulp) {
  return nlohmann::json{{"key", key},
                        {"kind", "audit"},
                        {"status", status},
                        {"metrics", {{"normwise_rel_error", normwise}, {"max_ulp", ulp}}}}
      .dump();
}

std::vector<ResultDocument> three_devices() {
  return {
      on_device("a100.json", kA100,
                "[" + audit("audit/gemm/8/fp16/normal/seed=1/backend=cuda", "pass", 1e-4, 2) + "," +
                    audit("audit/dot/8/fp16/normal/seed=1/backend=cuda", "pass", 1e-4, 2) + "," +
                    audit("audit/add/8/fp16/normal/seed=1/backend=cuda", "pass", 1e-4, 1) + "]"),
      on_device("h200.json", kH200,
                "[" + audit("audit/add/8/fp16/normal/seed=1/backend=cuda", "fail", 1e-4, 1) + "," +
                    audit("audit/dot/8/fp16/normal/seed=1/backend=cuda", "pass", 1.05e-4, 2) + "," +
                    audit("audit/gemm/8/fp16/normal/seed=1/backend=cuda", "pass", 3e-4, 2) + "]"),
      on_device("cpu.json", kEmulation,
                "[" + audit("audit/gemm/8/fp16/normal/seed=1", "pass", 1e-4, 2) + "," +
                    audit("audit/mul/8/fp16/normal/seed=1", "pass", 1e-4, 1) + "]"),
  };
}

TEST(DeviceComparison, KeysLoseTheirDevicesParts) {
  EXPECT_EQ(case_key("audit/gemm/8/fp16/normal/seed=1/backend=cuda"),
            "audit/gemm/8/fp16/normal/seed=1");
  EXPECT_EQ(case_key("audit/gemm/8/fp16/normal/seed=1/mma=hopper/samples=4"),
            "audit/gemm/8/fp16/normal/seed=1/samples=4");
  EXPECT_EQ(case_key("train/mlp/steps=20/seed=1"), "train/mlp/steps=20/seed=1");
}

// "The emulator says X, the H200 does Y": a CPU record's Tensor Core model cases are a column of
// their own beside the plain emulation, each lined up with the GPU's case; a --backend all
// record is a GPU column and a CPU emulation column.
TEST(DeviceComparison, EachEmulatedModelIsAColumnBesideTheGpu) {
  const std::vector<ResultDocument> documents{
      on_device("h200.json", kH200,
                "[" + audit("audit/gemm/8/fp16/normal/seed=1/backend=cuda", "pass", 2e-4, 2) + "]"),
      on_device("cpu.json", kEmulation,
                "[" + audit("audit/gemm/8/fp16/normal/seed=1", "pass", 1e-4, 1) + "," +
                    audit("audit/gemm/8/fp16/normal/seed=1/mma=hopper", "pass", 2e-4, 2) + "," +
                    audit("audit/gemm/8/fp16/normal/seed=1/mma=volta", "pass", 4e-4, 3) + "]"),
      on_device("all.json", kA100,
                "[" + audit("audit/gemm/8/fp16/normal/seed=1", "pass", 1e-4, 1) + "," +
                    audit("audit/gemm/8/fp16/normal/seed=1/backend=cuda", "pass", 1e-4, 1) + "]"),
  };
  EXPECT_THROW(compare_devices(documents, false), ResultError);  // two plain CPU emulations
  const DeviceComparison c = compare_devices(documents, true);
  std::vector<std::string> labels;
  for (const auto& d : c.devices) labels.push_back(d.label);
  EXPECT_EQ(labels, (std::vector<std::string>{
                        "TEST FIXTURE H200 (sm 9.0)",
                        "#2 CPU emulation on Test CPU · cpu.json",
                        "CPU emulation (mma=hopper) on Test CPU",
                        "CPU emulation (mma=volta) on Test CPU",
                        "#5 CPU emulation on Test CPU · all.json",
                        "TEST FIXTURE A100 (sm 8.0)",
                    }));
  ASSERT_EQ(c.cases.size(), 1u);
  const CaseAcross& gemm = c.cases[0];
  EXPECT_EQ(gemm.key, "audit/gemm/8/fp16/normal/seed=1");
  ASSERT_EQ(gemm.on.size(), 6u);
  for (const auto& on : gemm.on) EXPECT_TRUE(on.has_value());
  EXPECT_EQ(gemm.on[2]->key, "audit/gemm/8/fp16/normal/seed=1/mma=hopper");
  EXPECT_EQ(gemm.on[3]->metrics.at("max_ulp"), 3);
  EXPECT_EQ(c.devices[3].cases, 1u);
  // Against the H200 the plain emulation and volta's differ; hopper's model agrees.
  EXPECT_EQ(gemm.disagreements, (std::vector<std::string>{"max_ulp", "normwise_rel_error"}));
}

TEST(DeviceComparison, DisagreeingCasesComeFirstWithWhatDisagrees) {
  const auto documents = three_devices();
  const DeviceComparison c = compare_devices(documents, false);
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[0].label, "TEST FIXTURE A100 (sm 8.0)");
  EXPECT_EQ(c.devices[2].label, "CPU emulation on Test CPU");
  std::vector<std::string> keys;
  for (const auto& k : c.cases) keys.push_back(k.key);
  // gemm (3x the normwise error on the H200) and add (fails there) disagree, in the first
  // record's order; dot's 5% is within the 10% tolerance; mul is only on the CPU, last.
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "audit/gemm/8/fp16/normal/seed=1", "audit/add/8/fp16/normal/seed=1",
                      "audit/dot/8/fp16/normal/seed=1", "audit/mul/8/fp16/normal/seed=1"}));
  EXPECT_EQ(c.cases[0].disagreements, std::vector<std::string>{"normwise_rel_error"});
  EXPECT_EQ(c.cases[1].disagreements, std::vector<std::string>{"status"});
  EXPECT_TRUE(c.cases[2].disagreements.empty());
  EXPECT_EQ(c.disagreeing(), 2u);
  EXPECT_TRUE(c.cases[0].on[2].has_value());  // the emulation's gemm lines up with the GPUs'
  EXPECT_FALSE(c.cases[3].on[0].has_value());
  EXPECT_EQ(c.cases[2].on[1]->key, "audit/dot/8/fp16/normal/seed=1/backend=cuda");
}

TEST(DeviceComparison, TheTablesGiveEachDeviceARowWithItsRatio) {
  const auto documents = three_devices();
  const std::string md = markdown_comparison(compare_devices(documents, false));
  EXPECT_NE(md.find("4 case(s) on 3 devices; 2 where the devices disagree"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| audit/gemm/8/fp16/normal/seed=1 | TEST FIXTURE H200 (sm 9.0) | PASS | "
                    "0.0003 | 2 | not recorded | 3 | normwise_rel_error |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| audit/mul/8/fp16/normal/seed=1 | TEST FIXTURE A100 (sm 8.0) | not in this "
                    "record | - | - | - | - | - |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- audit/add/8/fp16/normal/seed=1: status"), std::string::npos) << md;
  EXPECT_NE(md.find("| SMs | 108 | unknown | unknown |"), std::string::npos) << md;
  const std::string page = html_comparison(compare_devices(documents, false));
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_NE(page.find("aria-label=\"gemm: normwise error per case, a bar per device\""),
            std::string::npos);
  EXPECT_NE(page.find("<tr class=\"fail disagree\">"), std::string::npos);
}

TEST(DeviceComparison, TrainingAndProfileRunsLineUpPerPolicy) {
  const auto run = [](const std::string& device, double error, double step_ms) {
    nlohmann::json train{{"key", "train/mlp/steps=2/seed=1/backend=cuda"},
                         {"kind", "train"},
                         {"status", "pass"},
                         {"metrics", {{"amp-fp16.eval_loss_error", error}}},
                         {"detail",
                          {{"runs",
                            {{{"policy", "amp-fp16"},
                              {"steps",
                               {{{"step", 1}, {"loss_rel_error", error / 2}},
                                {{"step", 2}, {"loss_rel_error", error}}}}}}}}}};
    nlohmann::json profile{
        {"key", "profile/mlp/steps=2/warmup=0/seed=1/backend=cuda"},
        {"kind", "profile"},
        {"status", "pass"},
        {"metrics",
         {{"fp32.step_ms", step_ms}, {"amp-fp16.step_ms", step_ms / 2}, {"amp-fp16.vs_fp32", 0.5}}},
        {"detail",
         {{"runs",
           {{{"policy", "amp-fp16"},
             {"step_ms", {{"median", step_ms / 2}}},
             {"peak_device_bytes", 3 * 1024 * 1024},
             {"attribution", {{"shares", {{"tensor_core", 0.25}, {"cast", nullptr}}}}},
             {"hardware_metrics",
              {{"ranges",
                {{{"path", "step"},
                  {"gpu_time_ns", 1000},
                  {"dram_bytes", 2000},
                  {"tensor_active_share", 0.4}},
                 {{"path", "step/forward"},
                  {"gpu_time_ns", 500},
                  {"dram_bytes", 9e9},
                  {"tensor_active_share", 0.9}}}}}}}}}}}};
    return on_device(device == kA100 ? "a.json" : "h.json", device,
                     nlohmann::json::array({train, profile}).dump());
  };
  const std::vector<ResultDocument> documents{run(kA100, 1e-3, 10), run(kH200, 4e-3, 4)};
  const DeviceComparison c = compare_devices(documents, false);
  EXPECT_EQ(c.cases[0].key, "train/mlp/steps=2/seed=1");
  EXPECT_EQ(c.cases[0].disagreements, std::vector<std::string>{"amp-fp16.eval_loss_error"});
  const std::string md = markdown_comparison(c);
  EXPECT_NE(md.find("| train/mlp/steps=2/seed=1 · amp-fp16 | TEST FIXTURE H200 (sm 9.0) | PASS | "
                    "0.004 | not recorded | not recorded | not recorded | 4 |"),
            std::string::npos)
      << md;
  // The counters of the outermost range only: 40% active, 2000 bytes in 1000 ns = 2 GB/s.
  EXPECT_NE(md.find("| profile/mlp/steps=2/warmup=0/seed=1 · amp-fp16 | TEST FIXTURE H200 (sm "
                    "9.0) | 2 | 0.5 | not recorded | not recorded | 25.0% | not recorded | 3.0 | "
                    "40.0% | 2.0 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| profile/mlp/steps=2/warmup=0/seed=1 · fp32 | TEST FIXTURE A100 (sm 8.0) | "
                    "10 | not recorded |"),
            std::string::npos)
      << md;
  const std::string page = html_comparison(c);
  for (const char* chart : {"amp-fp16: loss error per step, a line per device",
                            "Median step time by phase, per policy and device",
                            "Step time over fp32&#39;s, a bar per device"}) {
    EXPECT_NE(page.find(fmt::format("aria-label=\"{}\"", chart)), std::string::npos) << chart;
  }
}

// A fingerprint case on two GPUs: each device's inferred value beside the preset, per parameter;
// the parameter in which they differ is a disagreement and its rows are marked, the others not.
TEST(DeviceComparison, TheFingerprintSetsEachDevicesParametersBesideThePreset) {
  const auto fingerprint = [](const char* status, const char* fused_k) {
    return nlohmann::json{
        {"key", "fingerprint/hopper-fp16/backend=cuda"},
        {"kind", "fingerprint"},
        {"status", status},
        {"metrics", nlohmann::json::object()},
        {"features", {{"fraction_bits", "25"}, {"fused_k", fused_k}}},
        {"detail",
         {{"preset", "hopper-fp16"},
          {"parameters",
           {{{"parameter", "fraction_bits"}, {"inferred", "25"}, {"preset", "25"}, {"match", true}},
            {{"parameter", "fused_k"},
             {"inferred", fused_k},
             {"preset", "16"},
             {"match", std::string(fused_k) == "16"}}}}}}}
        .dump();
  };
  const std::vector<ResultDocument> results{
      on_device("h200.json", kH200, "[" + fingerprint("pass", "16") + "]"),
      on_device("a100.json", kA100, "[" + fingerprint("fail", "8") + "]")};
  const DeviceComparison c = compare_devices(results, false);
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].key, "fingerprint/hopper-fp16");
  EXPECT_EQ(c.cases[0].kind, "fingerprint");
  EXPECT_EQ(c.cases[0].disagreements, (std::vector<std::string>{"status", "fused_k"}));
  const std::string md = markdown_comparison(c);
  EXPECT_NE(md.find("## Fingerprint\n\n| case · parameter | device | status | inferred | preset | "
                    "matches the preset |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fingerprint/hopper-fp16 · fused_k | TEST FIXTURE A100 (sm 8.0) | FAIL | 8 | "
                    "16 | NO |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(
      md.find("| fingerprint/hopper-fp16 · fused_k | TEST FIXTURE H200 (sm 9.0) | PASS | 16 | "
              "16 | yes |\n"),
      std::string::npos)
      << md;
  const std::string html = html_comparison(c);
  EXPECT_NE(html.find("<h2>Fingerprint</h2>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"fail disagree\"><td class=\"key\">fingerprint/hopper-fp16 · "
                      "fused_k</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr class=\"pass\"><td class=\"key\">fingerprint/hopper-fp16 · "
                      "fraction_bits</td>"),
            std::string::npos);
  // The single-record report lists the case's parameters against the preset.
  const std::string report = markdown_report(std::span(results).first(1));
  EXPECT_NE(report.find("| fingerprint/hopper-fp16/backend=cuda | fingerprint | PASS | 2 of 2 "
                        "parameters match hopper-fp16 |"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("| parameter | inferred | preset | match |\n|---|---|---|---|\n"
                        "| fraction_bits | 25 | 25 | yes |\n| fused_k | 16 | 16 | yes |\n"),
            std::string::npos)
      << report;
}

TEST(DeviceComparison, BadInputIsNamed) {
  const auto message = [](const std::vector<ResultDocument>& documents, bool side_by_side) {
    try {
      compare_devices(documents, side_by_side);
    } catch (const ResultError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto a = on_device("a.json", kA100, "[]");
  EXPECT_EQ(message({a, on_device("b.json", kH200, "[]", "other")}, false),
            "b.json: a result of suite 'other', not of suite 't' as a.json: a comparison sets one "
            "suite's results side by side");
  EXPECT_EQ(
      message({a, on_device("h.json", kH200, "[]"), on_device("a2.json", kA100, "[]")}, false),
      "a2.json: the same device (TEST FIXTURE A100 (sm 8.0)) as a.json: give each device "
      "once (merge a device's shards first), or --side-by-side to set results of one device "
      "side by side");
  EXPECT_EQ(message({a}, true), "a comparison of devices needs two or more result files");
  // --side-by-side sets one device's records side by side, told apart by place and file.
  const std::vector<ResultDocument> twice{a, a};
  const DeviceComparison c = compare_devices(twice, true);
  EXPECT_EQ(c.devices[0].label, "#1 TEST FIXTURE A100 (sm 8.0) · a.json");
  EXPECT_EQ(c.devices[1].label, "#2 TEST FIXTURE A100 (sm 8.0) · a.json");
}

TEST(DeviceComparison, OnlyWholeRecordsOfDifferentDevicesMakeAComparison) {
  const auto a = on_device("a.json", kA100, "[]");
  const auto h = on_device("h.json", kH200, "[]");
  EXPECT_TRUE(from_several_devices(std::vector<ResultDocument>{a, h}));
  EXPECT_FALSE(from_several_devices(std::vector<ResultDocument>{a, a}));
  ResultDocument shard = h;
  shard.document["shard"] = "1/4";
  EXPECT_FALSE(from_several_devices(std::vector<ResultDocument>{a, shard}));
  ResultDocument unknown = h;
  unknown.document.erase("environment");
  EXPECT_FALSE(from_several_devices(std::vector<ResultDocument>{a, unknown}));
}

}  // namespace
}  // namespace ampbench::results
