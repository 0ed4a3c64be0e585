#include "harness/profile/trace_json.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness/io/files.hpp"

namespace ampbench::profile {
namespace {

constexpr std::string_view kSchema = "ampbench.trace/1";

using Json = nlohmann::json;

// One JSON object of the input, with the place it was found at for error messages.
class Object {
 public:
  Object(const Json& json, std::string place, std::string_view name)
      : json_(json), place_(std::move(place)), name_(name) {
    if (!json_.is_object()) fail(place_, "expected an object");
  }

  [[noreturn]] void fail(const std::string& place, std::string_view what) const {
    throw TraceError(fmt::format("{}: {}: {}", name_, place, what));
  }

  void allow_only(std::initializer_list<std::string_view> members) const {
    for (const auto& [key, value] : json_.items()) {
      if (std::find(members.begin(), members.end(), key) == members.end()) {
        fail(place(key), fmt::format("unknown member (known: {})", fmt::join(members, ", ")));
      }
    }
  }

  std::string place(std::string_view key) const { return fmt::format("{}.{}", place_, key); }

  const Json* find(std::string_view key) const {
    const auto it = json_.find(key);
    return it == json_.end() ? nullptr : &*it;
  }

  std::uint64_t u64(std::string_view key, bool required = false) const {
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) fail(place(key), "missing");
      return 0;
    }
    if (!value->is_number_unsigned()) {
      // nlohmann types a non-negative integer literal as unsigned; anything else is wrong.
      fail(place(key), fmt::format("expected a non-negative integer, got {}", value->dump()));
    }
    return value->get<std::uint64_t>();
  }

  std::uint32_t u32(std::string_view key) const {
    const std::uint64_t value = u64(key);
    if (value > std::numeric_limits<std::uint32_t>::max()) {
      fail(place(key), fmt::format("{} does not fit 32 bits", value));
    }
    return static_cast<std::uint32_t>(value);
  }

  std::string text(std::string_view key, bool required = false) const {
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) fail(place(key), "missing");
      return {};
    }
    if (!value->is_string())
      fail(place(key), fmt::format("expected a string, got {}", value->dump()));
    return value->get<std::string>();
  }

  Dim3 dim3(std::string_view key) const {
    const Json* value = find(key);
    if (value == nullptr) return {};
    if (!value->is_array() || value->size() != 3) {
      fail(place(key), "expected [x, y, z]");
    }
    std::uint32_t xyz[3] = {};
    for (std::size_t i = 0; i < 3; ++i) {
      const Json& e = (*value)[i];
      if (!e.is_number_unsigned() ||
          e.get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max()) {
        fail(fmt::format("{}[{}]", place(key), i), "expected a 32-bit non-negative integer");
      }
      xyz[i] = e.get<std::uint32_t>();
    }
    return {.x = xyz[0], .y = xyz[1], .z = xyz[2]};
  }

  template <class Enum, std::size_t N>
  Enum choice(std::string_view key, const std::pair<std::string_view, Enum> (&names)[N],
              Enum fallback) const {
    if (find(key) == nullptr) return fallback;
    const std::string value = text(key);
    std::vector<std::string_view> known;
    for (const auto& [name, e] : names) {
      if (name == value) return e;
      known.push_back(name);
    }
    fail(place(key),
         fmt::format("unknown value \"{}\" (known: {})", value, fmt::join(known, ", ")));
  }

  // start_ns and end_ns, required, end not before start.
  std::pair<std::uint64_t, std::uint64_t> times() const {
    const std::uint64_t start = u64("start_ns", true);
    const std::uint64_t end = u64("end_ns", true);
    if (end < start) fail(place_, fmt::format("end_ns {} is before start_ns {}", end, start));
    return {start, end};
  }

 private:
  const Json& json_;
  std::string place_;
  std::string_view name_;
};

constexpr std::pair<std::string_view, ApiKind> kApiKinds[] = {{"runtime", ApiKind::runtime},
                                                              {"driver", ApiKind::driver}};
constexpr std::pair<std::string_view, MemcpyKind> kMemcpyKinds[] = {
    {"unknown", MemcpyKind::unknown},     {"HtoD", MemcpyKind::host_to_device},
    {"DtoH", MemcpyKind::device_to_host}, {"DtoD", MemcpyKind::device_to_device},
    {"HtoH", MemcpyKind::host_to_host},   {"PtoP", MemcpyKind::peer_to_peer}};
constexpr std::pair<std::string_view, SynchronizationKind> kSyncKinds[] = {
    {"unknown", SynchronizationKind::unknown},
    {"event", SynchronizationKind::event},
    {"stream_wait_event", SynchronizationKind::stream_wait_event},
    {"stream", SynchronizationKind::stream},
    {"context", SynchronizationKind::context}};
constexpr std::pair<std::string_view, RangeKind> kRangeKinds[] = {
    {"push_pop", RangeKind::push_pop},
    {"start_end", RangeKind::start_end},
    {"host_phase", RangeKind::host_phase}};

// Calls read(object) for each element of the array member `key` of the top level, if present.
template <class Read>
void each(const Object& top, std::string_view key, std::string_view name, Read read) {
  const Json* array = top.find(key);
  if (array == nullptr) return;
  if (!array->is_array()) top.fail(top.place(key), "expected an array");
  for (std::size_t i = 0; i < array->size(); ++i) {
    read(Object((*array)[i], fmt::format("$.{}[{}]", key, i), name));
  }
}

void read_metadata(const Object& top, std::string_view name, TraceMetadata& metadata) {
  const Json* json = top.find("metadata");
  if (json == nullptr) return;
  const Object object(*json, "$.metadata", name);
  object.allow_only({"devices", "host_name", "process_id"});
  metadata.host_name = object.text("host_name");
  metadata.process_id = object.u32("process_id");
  const Json* devices = object.find("devices");
  if (devices == nullptr) return;
  if (!devices->is_object()) object.fail(object.place("devices"), "expected an object");
  for (const auto& [key, value] : devices->items()) {
    const std::string place = fmt::format("$.metadata.devices.{}", key);
    std::uint32_t device = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), device);
    if (ec != std::errc{} || end != key.data() + key.size()) {
      object.fail(place, "expected a device number as the key");
    }
    if (!value.is_string()) object.fail(place, "expected the device's name");
    metadata.device_names[device] = value.get<std::string>();
  }
}

Json times_json(std::uint64_t start, std::uint64_t end) {
  return {{"start_ns", start}, {"end_ns", end}};
}

}  // namespace

Trace trace_from_json(std::string_view text, std::string_view name) {
  Json json;
  try {
    json = io::parse_json(text, name);
  } catch (const io::FileError& e) {
    throw TraceError(e.what());
  }
  const Object top(json, "$", name);
  top.allow_only({"schema", "metadata", "kernels", "api_calls", "memcpys", "memsets",
                  "synchronizations", "overheads", "ranges", "external_correlations",
                  "dropped_records"});
  if (top.text("schema", true) != kSchema) {
    top.fail("$.schema", fmt::format("expected \"{}\", got \"{}\"", kSchema, top.text("schema")));
  }
  Trace trace;
  read_metadata(top, name, trace.metadata);
  each(top, "kernels", name, [&](const Object& o) {
    o.allow_only({"name", "device", "context", "stream", "correlation_id", "start_ns", "end_ns",
                  "grid", "block", "registers_per_thread", "static_shared_memory_bytes",
                  "dynamic_shared_memory_bytes"});
    const auto [start, end] = o.times();
    trace.kernels.push_back({.name = o.text("name", true),
                             .device = o.u32("device"),
                             .context = o.u32("context"),
                             .stream = o.u32("stream"),
                             .correlation_id = o.u32("correlation_id"),
                             .start_ns = start,
                             .end_ns = end,
                             .grid = o.dim3("grid"),
                             .block = o.dim3("block"),
                             .registers_per_thread = o.u32("registers_per_thread"),
                             .static_shared_memory_bytes = o.u32("static_shared_memory_bytes"),
                             .dynamic_shared_memory_bytes = o.u32("dynamic_shared_memory_bytes")});
  });
  each(top, "api_calls", name, [&](const Object& o) {
    o.allow_only({"kind", "name", "cbid", "thread_id", "correlation_id", "start_ns", "end_ns"});
    const auto [start, end] = o.times();
    trace.api_calls.push_back({.kind = o.choice("kind", kApiKinds, ApiKind::runtime),
                               .name = o.text("name"),
                               .cbid = o.u32("cbid"),
                               .thread_id = o.u32("thread_id"),
                               .correlation_id = o.u32("correlation_id"),
                               .start_ns = start,
                               .end_ns = end});
  });
  each(top, "memcpys", name, [&](const Object& o) {
    o.allow_only(
        {"kind", "bytes", "device", "context", "stream", "correlation_id", "start_ns", "end_ns"});
    const auto [start, end] = o.times();
    trace.memcpys.push_back({.kind = o.choice("kind", kMemcpyKinds, MemcpyKind::unknown),
                             .bytes = o.u64("bytes"),
                             .device = o.u32("device"),
                             .context = o.u32("context"),
                             .stream = o.u32("stream"),
                             .correlation_id = o.u32("correlation_id"),
                             .start_ns = start,
                             .end_ns = end});
  });
  each(top, "memsets", name, [&](const Object& o) {
    o.allow_only(
        {"bytes", "value", "device", "context", "stream", "correlation_id", "start_ns", "end_ns"});
    const auto [start, end] = o.times();
    trace.memsets.push_back({.bytes = o.u64("bytes"),
                             .value = o.u32("value"),
                             .device = o.u32("device"),
                             .context = o.u32("context"),
                             .stream = o.u32("stream"),
                             .correlation_id = o.u32("correlation_id"),
                             .start_ns = start,
                             .end_ns = end});
  });
  each(top, "synchronizations", name, [&](const Object& o) {
    o.allow_only({"kind", "context", "stream", "correlation_id", "start_ns", "end_ns"});
    const auto [start, end] = o.times();
    trace.synchronizations.push_back(
        {.kind = o.choice("kind", kSyncKinds, SynchronizationKind::unknown),
         .context = o.u32("context"),
         .stream = o.u32("stream"),
         .correlation_id = o.u32("correlation_id"),
         .start_ns = start,
         .end_ns = end});
  });
  each(top, "overheads", name, [&](const Object& o) {
    o.allow_only({"kind", "thread_id", "start_ns", "end_ns"});
    const auto [start, end] = o.times();
    trace.overheads.push_back({.kind = o.text("kind"),
                               .thread_id = o.u32("thread_id"),
                               .start_ns = start,
                               .end_ns = end});
  });
  each(top, "ranges", name, [&](const Object& o) {
    o.allow_only({"name", "domain", "kind", "thread_id", "start_ns", "end_ns", "depth"});
    const auto [start, end] = o.times();
    trace.ranges.push_back({.name = o.text("name", true),
                            .domain = o.text("domain"),
                            .kind = o.choice("kind", kRangeKinds, RangeKind::push_pop),
                            .thread_id = o.u32("thread_id"),
                            .start_ns = start,
                            .end_ns = end,
                            .depth = o.u32("depth")});
  });
  each(top, "external_correlations", name, [&](const Object& o) {
    o.allow_only({"kind", "external_id", "correlation_id"});
    trace.external_correlations.push_back({.kind = o.u32("kind"),
                                           .external_id = o.u64("external_id"),
                                           .correlation_id = o.u32("correlation_id")});
  });
  each(top, "dropped_records", name, [&](const Object& o) {
    o.allow_only({"context", "stream", "count"});
    trace.dropped_records.push_back(
        {.context = o.u32("context"), .stream = o.u32("stream"), .count = o.u64("count")});
  });
  return trace;
}

Trace read_trace_file(const std::filesystem::path& path) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const io::FileError& e) {
    throw TraceError(e.what());
  }
  return trace_from_json(text, path.string());
}

Json trace_to_json(const Trace& trace) {
  Json devices = Json::object();
  for (const auto& [device, name] : trace.metadata.device_names) {
    devices[std::to_string(device)] = name;
  }
  Json out = {{"schema", kSchema},
              {"metadata",
               {{"devices", std::move(devices)},
                {"host_name", trace.metadata.host_name},
                {"process_id", trace.metadata.process_id}}}};
  Json& kernels = out["kernels"] = Json::array();
  for (const KernelEvent& k : trace.kernels) {
    Json e = {{"name", k.name},
              {"device", k.device},
              {"context", k.context},
              {"stream", k.stream},
              {"correlation_id", k.correlation_id},
              {"grid", {k.grid.x, k.grid.y, k.grid.z}},
              {"block", {k.block.x, k.block.y, k.block.z}},
              {"registers_per_thread", k.registers_per_thread},
              {"static_shared_memory_bytes", k.static_shared_memory_bytes},
              {"dynamic_shared_memory_bytes", k.dynamic_shared_memory_bytes}};
    e.update(times_json(k.start_ns, k.end_ns));
    kernels.push_back(std::move(e));
  }
  Json& calls = out["api_calls"] = Json::array();
  for (const ApiCallEvent& c : trace.api_calls) {
    Json e = {{"kind", to_string(c.kind)},
              {"name", c.name},
              {"cbid", c.cbid},
              {"thread_id", c.thread_id},
              {"correlation_id", c.correlation_id}};
    e.update(times_json(c.start_ns, c.end_ns));
    calls.push_back(std::move(e));
  }
  Json& memcpys = out["memcpys"] = Json::array();
  for (const MemcpyEvent& m : trace.memcpys) {
    Json e = {{"kind", to_string(m.kind)}, {"bytes", m.bytes},
              {"device", m.device},        {"context", m.context},
              {"stream", m.stream},        {"correlation_id", m.correlation_id}};
    e.update(times_json(m.start_ns, m.end_ns));
    memcpys.push_back(std::move(e));
  }
  Json& memsets = out["memsets"] = Json::array();
  for (const MemsetEvent& m : trace.memsets) {
    Json e = {{"bytes", m.bytes},     {"value", m.value},   {"device", m.device},
              {"context", m.context}, {"stream", m.stream}, {"correlation_id", m.correlation_id}};
    e.update(times_json(m.start_ns, m.end_ns));
    memsets.push_back(std::move(e));
  }
  Json& syncs = out["synchronizations"] = Json::array();
  for (const SynchronizationEvent& s : trace.synchronizations) {
    Json e = {{"kind", to_string(s.kind)},
              {"context", s.context},
              {"stream", s.stream},
              {"correlation_id", s.correlation_id}};
    e.update(times_json(s.start_ns, s.end_ns));
    syncs.push_back(std::move(e));
  }
  Json& overheads = out["overheads"] = Json::array();
  for (const OverheadEvent& o : trace.overheads) {
    Json e = {{"kind", o.kind}, {"thread_id", o.thread_id}};
    e.update(times_json(o.start_ns, o.end_ns));
    overheads.push_back(std::move(e));
  }
  Json& ranges = out["ranges"] = Json::array();
  for (const RangeEvent& r : trace.ranges) {
    Json e = {{"name", r.name},
              {"domain", r.domain},
              {"kind", to_string(r.kind)},
              {"thread_id", r.thread_id},
              {"depth", r.depth}};
    e.update(times_json(r.start_ns, r.end_ns));
    ranges.push_back(std::move(e));
  }
  Json& external = out["external_correlations"] = Json::array();
  for (const ExternalCorrelation& x : trace.external_correlations) {
    external.push_back(
        {{"kind", x.kind}, {"external_id", x.external_id}, {"correlation_id", x.correlation_id}});
  }
  Json& dropped = out["dropped_records"] = Json::array();
  for (const DroppedRecords& d : trace.dropped_records) {
    dropped.push_back({{"context", d.context}, {"stream", d.stream}, {"count", d.count}});
  }
  return out;
}

}  // namespace ampbench::profile
