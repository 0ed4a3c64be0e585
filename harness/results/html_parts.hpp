// What the HTML report and the device comparison page share (defined in html_report.cpp): the
// page's style and head, readers of a record's JSON for the charts, and the chart of a profile
// run's step by phase.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ampbench::results::html {

// "<!DOCTYPE html>...<body><h1>TITLE</h1>": the inline style, no script, nothing fetched.
std::string page_start(std::string_view title);
inline constexpr std::string_view kPageEnd = "</body>\n</html>\n";

// A number of the record, NaN for null or a missing member.
double number_of(const nlohmann::json& j, const char* key);
// The member, or null when `j` is not an object or lacks it.
const nlohmann::json& member(const nlohmann::json& j, const char* key);

// Stacked bars, one per (label, profile run of an ampbench.profile-run/1 record): the median
// step's milliseconds split by the phases' shares of the step time; what no phase covers is
// "rest". Empty when there is no run.
std::string phase_chart(const std::string& title,
                        const std::vector<std::pair<std::string, const nlohmann::json*>>& runs);

}  // namespace ampbench::results::html
