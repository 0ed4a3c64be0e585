#include "harness/profile/chrome_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <utility>

#include "harness/io/files.hpp"
#include "harness/profile/classify.hpp"

namespace ampbench::profile {
namespace {

constexpr std::int64_t kSyntheticHostPid = 1000000;

std::string quoted(std::string_view text) {
  return nlohmann::json(text).dump();
}

// Microseconds with exactly three decimals, from integer nanoseconds: no binary rounding.
std::string micros(std::uint64_t ns) {
  return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
}

std::uint64_t earliest_timestamp(const Trace& trace) {
  std::uint64_t base = std::numeric_limits<std::uint64_t>::max();
  const auto take = [&](const auto& events) {
    for (const auto& e : events) base = std::min(base, e.start_ns);
  };
  take(trace.kernels);
  take(trace.api_calls);
  take(trace.memcpys);
  take(trace.memsets);
  take(trace.synchronizations);
  take(trace.overheads);
  take(trace.ranges);
  return base == std::numeric_limits<std::uint64_t>::max() ? 0 : base;
}

class Writer {
 public:
  explicit Writer(const Trace& trace)
      : trace_(trace), base_(earliest_timestamp(trace)), host_(host_pid(trace)) {
    // When runtime and driver records share a correlation id, the runtime call is the launch.
    for (const ApiCallEvent& c : trace_.api_calls) {
      auto [it, inserted] = launches_.emplace(c.correlation_id, &c);
      if (!inserted && it->second->kind == ApiKind::driver && c.kind == ApiKind::runtime) {
        it->second = &c;
      }
    }
  }

  std::string run() {
    write_metadata();
    for (const KernelEvent& k : trace_.kernels) write_kernel(k);
    for (const MemcpyEvent& m : trace_.memcpys) {
      write_complete(fmt::format("Memcpy {}", to_string(m.kind)), "gpu_memcpy", m.device, m.stream,
                     m.start_ns, m.end_ns,
                     {{"correlation", m.correlation_id},
                      {"bytes", m.bytes},
                      {"device", m.device},
                      {"context", m.context},
                      {"stream", m.stream}});
    }
    for (const MemsetEvent& m : trace_.memsets) {
      write_complete("Memset", "gpu_memset", m.device, m.stream, m.start_ns, m.end_ns,
                     {{"correlation", m.correlation_id},
                      {"bytes", m.bytes},
                      {"value", m.value},
                      {"device", m.device},
                      {"context", m.context},
                      {"stream", m.stream}});
    }
    for (const ApiCallEvent& c : trace_.api_calls) {
      write_complete(c.name.empty() ? fmt::format("cbid {}", c.cbid) : c.name,
                     c.kind == ApiKind::runtime ? "cuda_runtime" : "cuda_driver", host_,
                     c.thread_id, c.start_ns, c.end_ns,
                     {{"correlation", c.correlation_id}, {"cbid", c.cbid}});
    }
    for (const RangeEvent& r : trace_.ranges) {
      nlohmann::json args = {{"kind", to_string(r.kind)}, {"depth", r.depth}};
      if (!r.domain.empty()) args["domain"] = r.domain;
      write_complete(r.name, r.kind == RangeKind::host_phase ? "host_phase" : "user_annotation",
                     host_, r.thread_id, r.start_ns, r.end_ns, std::move(args));
    }
    for (const SynchronizationEvent& s : trace_.synchronizations) {
      write_complete(fmt::format("Synchronize {}", to_string(s.kind)), "cuda_sync", host_,
                     sync_thread(s), s.start_ns, s.end_ns,
                     {{"correlation", s.correlation_id}, {"stream", s.stream}});
    }
    for (const OverheadEvent& o : trace_.overheads) {
      write_complete(o.kind, "overhead", host_, o.thread_id, o.start_ns, o.end_ns,
                     nlohmann::json::object());
    }
    write_flows();
    nlohmann::json other = {{"generator", "ampbench"},
                            {"dropped_records", total_dropped_records(trace_)}};
    return fmt::format(
        "{{\"schemaVersion\":1,\"displayTimeUnit\":\"ns\",\"baseTimeNanoseconds\":{},"
        "\"otherData\":{},\"traceEvents\":[\n{}\n]}}\n",
        base_, other.dump(), events_);
  }

 private:
  void append(const std::string& event) {
    if (!events_.empty()) events_ += ",\n";
    events_ += event;
  }

  void write_meta(std::string_view what, std::int64_t pid, std::int64_t tid,
                  std::string_view name) {
    append(fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":{}}}}})", what,
                       pid, tid, quoted(name)));
  }

  void write_complete(std::string_view name, std::string_view category, std::int64_t pid,
                      std::int64_t tid, std::uint64_t start, std::uint64_t end,
                      nlohmann::json args) {
    append(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{}}})",
        category, quoted(name), pid, tid, micros(start - base_), micros(duration_ns(start, end)),
        args.dump()));
  }

  void write_kernel(const KernelEvent& k) {
    write_complete(k.name, "kernel", k.device, k.stream, k.start_ns, k.end_ns,
                   {{"correlation", k.correlation_id},
                    {"device", k.device},
                    {"context", k.context},
                    {"stream", k.stream},
                    {"grid", {k.grid.x, k.grid.y, k.grid.z}},
                    {"block", {k.block.x, k.block.y, k.block.z}},
                    {"registers per thread", k.registers_per_thread},
                    {"shared memory", k.static_shared_memory_bytes + k.dynamic_shared_memory_bytes},
                    {"category", to_string(classify_kernel(k.name))}});
  }

  // A synchronization record names no host thread: put it on the thread of its API call.
  std::int64_t sync_thread(const SynchronizationEvent& s) const {
    const auto it = launches_.find(s.correlation_id);
    return it == launches_.end() ? 0 : it->second->thread_id;
  }

  void write_metadata() {
    std::set<std::uint32_t> devices;
    std::set<std::pair<std::uint32_t, std::uint32_t>> streams;
    const auto device_stream = [&](std::uint32_t device, std::uint32_t stream) {
      devices.insert(device);
      streams.emplace(device, stream);
    };
    for (const KernelEvent& k : trace_.kernels) device_stream(k.device, k.stream);
    for (const MemcpyEvent& m : trace_.memcpys) device_stream(m.device, m.stream);
    for (const MemsetEvent& m : trace_.memsets) device_stream(m.device, m.stream);
    for (const auto& [device, name] : trace_.metadata.device_names) devices.insert(device);

    write_meta("process_name", host_, 0,
               trace_.metadata.host_name.empty()
                   ? "host"
                   : fmt::format("host {}", trace_.metadata.host_name));
    append(fmt::format(
        R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":-1}}}})",
        host_));
    for (std::uint32_t device : devices) {
      const auto named = trace_.metadata.device_names.find(device);
      write_meta("process_name", device, 0,
                 named == trace_.metadata.device_names.end()
                     ? fmt::format("GPU {}", device)
                     : fmt::format("GPU {}: {}", device, named->second));
    }
    for (const auto& [device, stream] : streams) {
      write_meta("thread_name", device, stream, fmt::format("stream {}", stream));
    }
    std::set<std::uint32_t> threads;
    for (const ApiCallEvent& c : trace_.api_calls) threads.insert(c.thread_id);
    for (const RangeEvent& r : trace_.ranges) threads.insert(r.thread_id);
    for (const OverheadEvent& o : trace_.overheads) threads.insert(o.thread_id);
    for (std::uint32_t thread : threads) {
      write_meta("thread_name", host_, thread, fmt::format("thread {}", thread));
    }
  }

  // One s/f pair per kernel whose launch is in the trace.
  void write_flows() {
    for (const KernelEvent& k : trace_.kernels) {
      const auto it = launches_.find(k.correlation_id);
      if (it == launches_.end()) continue;
      const ApiCallEvent& c = *it->second;
      append(fmt::format(
          R"({{"ph":"s","id":{},"pid":{},"tid":{},"ts":{},"cat":"ac2g","name":"ac2g"}})",
          k.correlation_id, host_, c.thread_id, micros(c.start_ns - base_)));
      append(fmt::format(
          R"({{"ph":"f","id":{},"pid":{},"tid":{},"ts":{},"cat":"ac2g","name":"ac2g","bp":"e"}})",
          k.correlation_id, k.device, k.stream, micros(k.start_ns - base_)));
    }
  }

  const Trace& trace_;
  std::uint64_t base_;
  std::int64_t host_;
  std::unordered_map<std::uint32_t, const ApiCallEvent*> launches_;  // by correlation id
  std::string events_;
};

}  // namespace

std::int64_t host_pid(const Trace& trace) {
  return trace.metadata.process_id != 0 ? trace.metadata.process_id : kSyntheticHostPid;
}

std::string chrome_trace_json(const Trace& trace) {
  return Writer(trace).run();
}

void write_chrome_trace(const Trace& trace, const std::filesystem::path& path) {
  if (const auto problem = io::write_file(path, chrome_trace_json(trace))) {
    throw ExportError(fmt::format("chrome trace {}: {}", path.string(), *problem));
  }
}

}  // namespace ampbench::profile
