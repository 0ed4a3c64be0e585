// --backend as every command reads it, through the backend registry (harness/runtime): the
// command's name in front of the registry's messages, and the exit statuses of commands.hpp.
#pragma once

#include <iosfwd>
#include <optional>
#include <span>
#include <string_view>

#include "harness/runtime/backend.hpp"

namespace ampbench::cli {

// The request of a --backend value among those the command accepts, or nothing with
// "COMMAND: --backend: unknown backend 'X' (available: ...)" on `err` (exit kExitUsage).
std::optional<runtime::Request> read_backend(
    std::string_view command, std::string_view value, std::ostream& err,
    std::span<const runtime::Request> allowed = runtime::kEveryRequest);

// Whether the registry refused the request (cuda without a usable device): then
// "COMMAND: --backend cuda: WHY" is on `err`, for the caller to exit with kExitNoDevice.
bool refused(std::string_view command, const runtime::Opening& opening, std::ostream& err);

}  // namespace ampbench::cli
