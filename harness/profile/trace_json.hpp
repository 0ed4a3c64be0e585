// A Trace as JSON ("schema": "ampbench.trace/1"): recorded traces for tests and for users who
// feed a trace recorded elsewhere into the attribution. One array per event kind, one object per
// event, members named as the struct fields of events.hpp; docs/profiling.md shows an example.
// Every member but a few (an event's times, a kernel's or range's name) may be left out and is then
// 0 or empty; an unknown member, a wrong type or an event that ends before it starts is an error.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "harness/io/json_arrays.hpp"
#include "harness/profile/events.hpp"

namespace ampbench::profile {

// Bad trace input: "NAME: PLACE: what", the place written as $.kernels[3].start_ns.
class TraceError : public io::InputError {
 public:
  using io::InputError::InputError;
};

// `name` (a file's path, or what the text is) starts every error message.
Trace trace_from_json(std::string_view text, std::string_view name);
Trace read_trace_file(const std::filesystem::path& path);

nlohmann::json trace_to_json(const Trace& trace);

}  // namespace ampbench::profile
