// Reading and writing traces as JSON: the fixture, a round trip and the errors.
#include "harness/profile/trace_json.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ampbench::profile {
namespace {

TEST(TraceJson, ReadsTheRecordedStep) {
  const Trace t = read_trace_file(AMPBENCH_PROFILE_TEST_DATA "/mlp_amp_step.json");
  EXPECT_EQ(t.metadata.device_names.at(0), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(t.metadata.process_id, 4242u);
  EXPECT_EQ(t.kernels.size(), 12u);
  EXPECT_EQ(t.api_calls.size(), 14u);
  EXPECT_EQ(t.ranges.size(), 8u);
  EXPECT_EQ(t.memcpys.at(0).kind, MemcpyKind::host_to_device);
  EXPECT_EQ(t.synchronizations.at(0).kind, SynchronizationKind::stream);
  EXPECT_EQ(t.external_correlations.at(0).external_id, 501u);
  const KernelEvent& gemm = t.kernels.at(2);
  EXPECT_EQ(gemm.grid.x, 4u);
  EXPECT_EQ(gemm.block.x, 128u);
  EXPECT_EQ(gemm.registers_per_thread, 230u);
  EXPECT_EQ(gemm.dynamic_shared_memory_bytes, 49152u);
}

TEST(TraceJson, RoundTrips) {
  const Trace t = read_trace_file(AMPBENCH_PROFILE_TEST_DATA "/mlp_amp_step.json");
  const nlohmann::json once = trace_to_json(t);
  const nlohmann::json twice = trace_to_json(trace_from_json(once.dump(), "round trip"));
  EXPECT_EQ(once, twice);
}

std::string error_of(std::string_view text) {
  try {
    trace_from_json(text, "t.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceJson, ErrorsNameThePlace) {
  EXPECT_NE(error_of("{").find("t.json: line 1, column 2: "), std::string::npos);
  EXPECT_EQ(error_of(R"({"kernels": []})"), "t.json: $.schema: missing");
  EXPECT_EQ(error_of(R"({"schema": "x"})"),
            R"(t.json: $.schema: expected "ampbench.trace/1", got "x")");
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "kernels": [{"name": "k", "start_ns": 5,
                        "end_ns": 3}]})"),
            "t.json: $.kernels[0]: end_ns 3 is before start_ns 5");
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "kernels": [{"name": "k", "start_ns": -1,
                        "end_ns": 3}]})"),
            "t.json: $.kernels[0].start_ns: expected a non-negative integer, got -1");
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "ranges": [{"start_ns": 1, "end_ns": 3}]})"),
            "t.json: $.ranges[0].name: missing");
  EXPECT_NE(error_of(R"({"schema": "ampbench.trace/1", "kernels": [{"name": "k", "start": 1}]})")
                .find("t.json: $.kernels[0].start: unknown member"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "ampbench.trace/1", "memcpys": [{"kind": "HostToDevice",
                        "start_ns": 1, "end_ns": 2}]})")
                .find(R"(t.json: $.memcpys[0].kind: unknown value "HostToDevice")"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "kernels": {}})"),
            "t.json: $.kernels: expected an array");
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "kernels": [{"name": "k", "start_ns": 1,
                        "end_ns": 2, "grid": [1, 2]}]})"),
            "t.json: $.kernels[0].grid: expected [x, y, z]");
  EXPECT_EQ(error_of(R"({"schema": "ampbench.trace/1", "metadata": {"devices": {"gpu0": "A"}}})"),
            "t.json: $.metadata.devices.gpu0: expected a device number as the key");
}

TEST(TraceJson, MissingFileNamesIt) {
  try {
    read_trace_file("/nonexistent-ampbench/trace.json");
    FAIL() << "expected TraceError";
  } catch (const io::InputError& e) {  // TraceError is an InputError: the CLI exits 2 on it
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent-ampbench/trace.json: cannot open: No such file or directory");
  }
  EXPECT_THROW(read_trace_file("/tmp"), TraceError);
}

TEST(TraceJson, InvalidJsonSaysWhereBriefly) {
  EXPECT_EQ(error_of("{\"schema\": 1e400}"),
            "t.json: line 1, column 12: the number 1e400 is beyond the range of a binary64 (about "
            "1.8e308)");
  EXPECT_EQ(error_of("{\"schema\": \"" + std::string(100000, 'x')),
            "t.json: line 1, column 100013: syntax error while parsing value - invalid string: "
            "missing closing quote; last read: '\"" +
                std::string(59, 'x') + "…'");
}

}  // namespace
}  // namespace ampbench::profile
