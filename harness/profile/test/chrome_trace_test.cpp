// The Chrome trace exporter's output, parsed back and checked field by field.
#include "harness/profile/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness/profile/trace_json.hpp"

namespace ampbench::profile {
namespace {

using Json = nlohmann::json;

// Base time 1'000'000 ns. One kernel [1'002'500, 1'003'750) on device 1 stream 7 launched by
// cudaLaunchKernel [1'001'000, 1'001'250) on host thread 42 (correlation 5) inside the range
// "forward" [1'000'000, 1'010'000); a memcpy on device 1 stream 9 with no launch record.
Trace small_trace() {
  Trace t;
  t.metadata.device_names[1] = "NVIDIA H100 80GB HBM3";
  t.metadata.process_id = 777;
  KernelEvent k;
  k.name = "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn";
  k.device = 1;
  k.stream = 7;
  k.correlation_id = 5;
  k.start_ns = 1'002'500;
  k.end_ns = 1'003'750;
  k.grid = {.x = 4, .y = 2, .z = 1};
  k.block = {.x = 128, .y = 1, .z = 1};
  k.registers_per_thread = 230;
  k.static_shared_memory_bytes = 1024;
  k.dynamic_shared_memory_bytes = 48128;
  t.kernels.push_back(k);
  ApiCallEvent a;
  a.name = "cudaLaunchKernel";
  a.thread_id = 42;
  a.correlation_id = 5;
  a.start_ns = 1'001'000;
  a.end_ns = 1'001'250;
  t.api_calls.push_back(a);
  RangeEvent r;
  r.name = "forward";
  r.domain = "ampbench";
  r.thread_id = 42;
  r.start_ns = 1'000'000;
  r.end_ns = 1'010'000;
  t.ranges.push_back(r);
  MemcpyEvent m;
  m.kind = MemcpyKind::host_to_device;
  m.bytes = 4096;
  m.device = 1;
  m.stream = 9;
  m.correlation_id = 6;
  m.start_ns = 1'000'001;
  m.end_ns = 1'000'002;
  t.memcpys.push_back(m);
  return t;
}

std::vector<Json> events_with(const Json& trace, std::string_view ph) {
  std::vector<Json> out;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph) out.push_back(e);
  }
  return out;
}

const Json& complete_event(const Json& trace, std::string_view name) {
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("name") == name) return e;
  }
  throw std::runtime_error("no X event " + std::string(name));
}

TEST(ChromeTrace, TopLevel) {
  const Json j = Json::parse(chrome_trace_json(small_trace()));
  EXPECT_EQ(j.at("displayTimeUnit"), "ns");
  EXPECT_EQ(j.at("baseTimeNanoseconds"), 1'000'000);
  EXPECT_EQ(j.at("otherData").at("dropped_records"), 0);
  EXPECT_TRUE(j.at("traceEvents").is_array());
}

TEST(ChromeTrace, KernelOnDevicePidAndStreamTid) {
  const Json j = Json::parse(chrome_trace_json(small_trace()));
  const Json& k = complete_event(j, "ampere_fp16_s16816gemm_fp16_64x64_ldg8_f2f_stages_64x5_tn");
  EXPECT_EQ(k.at("cat"), "kernel");
  EXPECT_EQ(k.at("pid"), 1);
  EXPECT_EQ(k.at("tid"), 7);
  EXPECT_DOUBLE_EQ(k.at("ts").get<double>(), 2.5);    // 2'500 ns after the base
  EXPECT_DOUBLE_EQ(k.at("dur").get<double>(), 1.25);  // 1'250 ns
  const Json& args = k.at("args");
  EXPECT_EQ(args.at("correlation"), 5);
  EXPECT_EQ(args.at("grid"), Json::array({4, 2, 1}));
  EXPECT_EQ(args.at("block"), Json::array({128, 1, 1}));
  EXPECT_EQ(args.at("registers per thread"), 230);
  EXPECT_EQ(args.at("shared memory"), 49152);
  EXPECT_EQ(args.at("category"), "gemm_tensor_core");
}

TEST(ChromeTrace, TimesHaveThreeDecimals) {
  const std::string text = chrome_trace_json(small_trace());
  EXPECT_NE(text.find(R"("ts":2.500,"dur":1.250)"), std::string::npos);
  EXPECT_NE(text.find(R"("ts":0.001,"dur":0.001)"), std::string::npos);  // the memcpy
}

TEST(ChromeTrace, HostEventsOnHostPidAndThreadTid) {
  const Json j = Json::parse(chrome_trace_json(small_trace()));
  const Json& api = complete_event(j, "cudaLaunchKernel");
  EXPECT_EQ(api.at("cat"), "cuda_runtime");
  EXPECT_EQ(api.at("pid"), 777);
  EXPECT_EQ(api.at("tid"), 42);
  EXPECT_DOUBLE_EQ(api.at("ts").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(api.at("dur").get<double>(), 0.25);
  const Json& range = complete_event(j, "forward");
  EXPECT_EQ(range.at("cat"), "user_annotation");
  EXPECT_EQ(range.at("pid"), 777);
  EXPECT_EQ(range.at("tid"), 42);
  EXPECT_DOUBLE_EQ(range.at("ts").get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(range.at("dur").get<double>(), 10.0);
  EXPECT_EQ(range.at("args").at("domain"), "ampbench");
  const Json& copy = complete_event(j, "Memcpy HtoD");
  EXPECT_EQ(copy.at("pid"), 1);
  EXPECT_EQ(copy.at("tid"), 9);
  EXPECT_EQ(copy.at("args").at("bytes"), 4096);
}

TEST(ChromeTrace, FlowsPairLaunchAndKernel) {
  const Json j = Json::parse(chrome_trace_json(small_trace()));
  const std::vector<Json> starts = events_with(j, "s");
  const std::vector<Json> finishes = events_with(j, "f");
  ASSERT_EQ(starts.size(), 1u);  // the memcpy has no launch record: no flow
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(starts[0].at("id"), finishes[0].at("id"));
  EXPECT_EQ(starts[0].at("id"), 5);
  EXPECT_EQ(starts[0].at("cat"), "ac2g");
  EXPECT_EQ(finishes[0].at("cat"), "ac2g");
  EXPECT_EQ(finishes[0].at("bp"), "e");
  EXPECT_EQ(starts[0].at("pid"), 777);
  EXPECT_EQ(starts[0].at("tid"), 42);
  EXPECT_DOUBLE_EQ(starts[0].at("ts").get<double>(), 1.0);
  EXPECT_EQ(finishes[0].at("pid"), 1);
  EXPECT_EQ(finishes[0].at("tid"), 7);
  EXPECT_DOUBLE_EQ(finishes[0].at("ts").get<double>(), 2.5);
}

TEST(ChromeTrace, MetadataNamesProcessesAndThreads) {
  const Json j = Json::parse(chrome_trace_json(small_trace()));
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> process_names, thread_names;
  for (const Json& e : events_with(j, "M")) {
    const auto key = std::pair(e.at("pid").get<std::int64_t>(), e.at("tid").get<std::int64_t>());
    if (e.at("name") == "process_name") process_names[key] = e.at("args").at("name");
    if (e.at("name") == "thread_name") thread_names[key] = e.at("args").at("name");
  }
  EXPECT_EQ(process_names.at({1, 0}), "GPU 1: NVIDIA H100 80GB HBM3");
  EXPECT_EQ(process_names.at({777, 0}), "host");
  EXPECT_EQ(thread_names.at({1, 7}), "stream 7");
  EXPECT_EQ(thread_names.at({1, 9}), "stream 9");
  EXPECT_EQ(thread_names.at({777, 42}), "thread 42");
}

TEST(ChromeTrace, HostPidWithoutAProcessId) {
  Trace t = small_trace();
  t.metadata.process_id = 0;
  EXPECT_EQ(host_pid(t), 1000000);
  const Json j = Json::parse(chrome_trace_json(t));
  EXPECT_EQ(complete_event(j, "cudaLaunchKernel").at("pid"), 1000000);
}

TEST(ChromeTrace, RecordedStepExportsEveryEvent) {
  const Trace trace = read_trace_file(AMPBENCH_PROFILE_TEST_DATA "/mlp_amp_step.json");
  const Json j = Json::parse(chrome_trace_json(trace));
  // 12 kernels + 1 memcpy + 14 API calls + 8 ranges + 1 synchronization + 1 overhead.
  EXPECT_EQ(events_with(j, "X").size(), 37u);
  EXPECT_EQ(events_with(j, "s").size(), 12u);
  EXPECT_EQ(events_with(j, "f").size(), 12u);
}

TEST(ChromeTrace, WritesAtomically) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "ampbench_chrome_trace_test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / "trace.json";
  write_chrome_trace(small_trace(), path);
  EXPECT_FALSE(std::filesystem::exists(dir / "trace.json.tmp"));
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(Json::parse(text.str()).at("displayTimeUnit"), "ns");
  std::filesystem::remove_all(dir);
}

TEST(ChromeTrace, UnwritableFileNamesTheFile) {
  const std::filesystem::path path = "/nonexistent-ampbench-dir/trace.json";
  try {
    write_chrome_trace(small_trace(), path);
    FAIL() << "expected ExportError";
  } catch (const ExportError& e) {
    EXPECT_NE(std::string(e.what()).find("chrome trace /nonexistent-ampbench-dir/trace.json"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ampbench::profile
