#include "harness/profile/attribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <unordered_map>
#include <utility>

namespace ampbench::profile {
namespace {

constexpr std::size_t kNoApi = std::numeric_limits<std::size_t>::max();

struct Interval {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
};

// Sorted, disjoint, non-touching intervals covering the same points as `intervals`.
std::vector<Interval> merge(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> merged;
  for (const Interval& i : intervals) {
    if (i.end <= i.start) continue;
    if (!merged.empty() && i.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, i.end);
    } else {
      merged.push_back(i);
    }
  }
  return merged;
}

std::uint64_t union_length(std::vector<Interval> intervals) {
  std::uint64_t total = 0;
  for (const Interval& i : merge(std::move(intervals))) total += i.end - i.start;
  return total;
}

// Union length per key (device or thread), summed over keys.
std::uint64_t union_length_by_key(const std::vector<std::pair<std::uint32_t, Interval>>& keyed) {
  std::map<std::uint32_t, std::vector<Interval>> by_key;
  for (const auto& [key, interval] : keyed) by_key[key].push_back(interval);
  std::uint64_t total = 0;
  for (auto& [key, intervals] : by_key) total += union_length(std::move(intervals));
  return total;
}

enum class ActivityKind { kernel, memcpy, memset };

// A kernel, memcpy or memset record, as attribution sees it.
struct Activity {
  ActivityKind kind = ActivityKind::kernel;
  std::size_t index = 0;  // into the trace's vector of that kind
  std::uint32_t device = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t bytes = 0;
  KernelCategory category = KernelCategory::other;
  std::size_t api = kNoApi;
};

class Attributor {
 public:
  explicit Attributor(const Trace& trace) : trace_(trace) {}

  Attribution run() {
    index_api_calls();
    collect_activities();
    assign_api_calls_to_ranges();
    Attribution result;
    compute_window(result);
    fill_totals(result);
    fill_ranges(result);
    fill_gemm_summary(result);
    fill_shares(result);
    fill_warnings(result);
    return result;
  }

 private:
  // When runtime and driver records share a correlation id, the runtime call is the launch the
  // user wrote.
  void index_api_calls() {
    for (std::size_t i = 0; i < trace_.api_calls.size(); ++i) {
      const ApiCallEvent& call = trace_.api_calls[i];
      auto [it, inserted] = api_by_correlation_.emplace(call.correlation_id, i);
      if (!inserted && trace_.api_calls[it->second].kind == ApiKind::driver &&
          call.kind == ApiKind::runtime) {
        it->second = i;
      }
    }
  }

  std::size_t api_for(std::uint32_t correlation_id) const {
    const auto it = api_by_correlation_.find(correlation_id);
    return it == api_by_correlation_.end() ? kNoApi : it->second;
  }

  void collect_activities() {
    for (std::size_t i = 0; i < trace_.kernels.size(); ++i) {
      const KernelEvent& k = trace_.kernels[i];
      activities_.push_back({.kind = ActivityKind::kernel,
                             .index = i,
                             .device = k.device,
                             .start_ns = k.start_ns,
                             .end_ns = k.end_ns,
                             .bytes = 0,
                             .category = classify_kernel(k.name),
                             .api = api_for(k.correlation_id)});
      if (activities_.back().api != kNoApi) {
        kernel_launch_calls_.insert(activities_.back().api);
      }
    }
    for (std::size_t i = 0; i < trace_.memcpys.size(); ++i) {
      const MemcpyEvent& m = trace_.memcpys[i];
      activities_.push_back({.kind = ActivityKind::memcpy,
                             .index = i,
                             .device = m.device,
                             .start_ns = m.start_ns,
                             .end_ns = m.end_ns,
                             .bytes = m.bytes,
                             .category = KernelCategory::memcpy,
                             .api = api_for(m.correlation_id)});
    }
    for (std::size_t i = 0; i < trace_.memsets.size(); ++i) {
      const MemsetEvent& m = trace_.memsets[i];
      activities_.push_back({.kind = ActivityKind::memset,
                             .index = i,
                             .device = m.device,
                             .start_ns = m.start_ns,
                             .end_ns = m.end_ns,
                             .bytes = m.bytes,
                             .category = KernelCategory::memset,
                             .api = api_for(m.correlation_id)});
    }
  }

  // For every API call, the range instances on its thread that contain its start, innermost
  // last: a sweep over each thread's calls in time order, keeping the ranges open at that time.
  void assign_api_calls_to_ranges() {
    const auto& ranges = trace_.ranges;
    enclosing_.assign(trace_.api_calls.size(), {});
    std::map<std::uint32_t, std::vector<std::size_t>> ranges_by_thread;
    for (std::size_t r = 0; r < ranges.size(); ++r)
      ranges_by_thread[ranges[r].thread_id].push_back(r);
    std::map<std::uint32_t, std::vector<std::size_t>> calls_by_thread;
    for (std::size_t a = 0; a < trace_.api_calls.size(); ++a) {
      calls_by_thread[trace_.api_calls[a].thread_id].push_back(a);
    }
    // Outer before inner: earlier start first; for equal starts the longer range first; then
    // record order, so that of two identical ranges the later record is the inner one.
    const auto outer_first = [&](std::size_t a, std::size_t b) {
      if (ranges[a].start_ns != ranges[b].start_ns) return ranges[a].start_ns < ranges[b].start_ns;
      if (ranges[a].end_ns != ranges[b].end_ns) return ranges[a].end_ns > ranges[b].end_ns;
      return a < b;
    };
    for (auto& [thread, calls] : calls_by_thread) {
      auto found = ranges_by_thread.find(thread);
      if (found == ranges_by_thread.end()) continue;
      std::vector<std::size_t>& thread_ranges = found->second;
      std::sort(thread_ranges.begin(), thread_ranges.end(), outer_first);
      std::sort(calls.begin(), calls.end(), [&](std::size_t a, std::size_t b) {
        return trace_.api_calls[a].start_ns < trace_.api_calls[b].start_ns;
      });
      std::vector<std::size_t> open;  // in outer_first order
      std::size_t next = 0;
      for (std::size_t call : calls) {
        const std::uint64_t t = trace_.api_calls[call].start_ns;
        while (next < thread_ranges.size() && ranges[thread_ranges[next]].start_ns <= t) {
          open.push_back(thread_ranges[next++]);
        }
        std::erase_if(open, [&](std::size_t r) { return ranges[r].end_ns <= t; });
        enclosing_[call] = open;
      }
    }
  }

  void compute_window(Attribution& result) const {
    std::uint64_t lo = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t hi = 0;
    const auto extend = [&](std::uint64_t start, std::uint64_t end) {
      lo = std::min(lo, start);
      hi = std::max(hi, std::max(start, end));
    };
    for (const Activity& a : activities_) extend(a.start_ns, a.end_ns);
    for (const ApiCallEvent& c : trace_.api_calls) extend(c.start_ns, c.end_ns);
    for (const RangeEvent& r : trace_.ranges) extend(r.start_ns, r.end_ns);
    if (lo > hi) return;  // an empty trace
    result.window_start_ns = lo;
    result.window_end_ns = hi;
    result.wall_ns = hi - lo;
  }

  BucketStats bucket(const std::vector<std::size_t>& activity_ids,
                     const std::vector<std::size_t>& api_ids) const {
    BucketStats stats;
    std::vector<std::pair<std::uint32_t, Interval>> busy;
    std::map<KernelCategory, std::vector<std::pair<std::uint32_t, Interval>>> busy_by_category;
    std::vector<std::int64_t> delays;
    for (std::size_t id : activity_ids) {
      const Activity& a = activities_[id];
      const std::uint64_t length = duration_ns(a.start_ns, a.end_ns);
      const Interval interval{a.start_ns, a.end_ns};
      busy.emplace_back(a.device, interval);
      busy_by_category[a.category].emplace_back(a.device, interval);
      CategoryStats& category = stats.categories[a.category];
      ++category.count;
      category.time_ns += length;
      switch (a.kind) {
        case ActivityKind::kernel:
          ++stats.kernel_count;
          stats.kernel_time_ns += length;
          if (a.api != kNoApi) {
            delays.push_back(static_cast<std::int64_t>(a.start_ns) -
                             static_cast<std::int64_t>(trace_.api_calls[a.api].end_ns));
          }
          break;
        case ActivityKind::memcpy:
          ++stats.memcpy_count;
          stats.memcpy_bytes += a.bytes;
          break;
        case ActivityKind::memset: ++stats.memset_count; break;
      }
    }
    stats.busy_ns = union_length_by_key(busy);
    for (auto& [category, intervals] : busy_by_category) {
      stats.categories[category].busy_ns = union_length_by_key(intervals);
    }
    if (!delays.empty()) {
      std::sort(delays.begin(), delays.end());
      stats.launch_delay = {.count = delays.size(),
                            .median_ns = delays[(delays.size() - 1) / 2],
                            .max_ns = delays.back()};
    }
    std::vector<std::pair<std::uint32_t, Interval>> api;
    std::vector<std::pair<std::uint32_t, Interval>> launch_api;
    for (std::size_t id : api_ids) {
      const ApiCallEvent& call = trace_.api_calls[id];
      const Interval interval{call.start_ns, call.end_ns};
      api.emplace_back(call.thread_id, interval);
      if (kernel_launch_calls_.contains(id) || call.name.find("Launch") != std::string::npos) {
        launch_api.emplace_back(call.thread_id, interval);
      }
    }
    stats.api_count = api_ids.size();
    stats.api_time_ns = union_length_by_key(api);
    stats.launch_api_time_ns = union_length_by_key(launch_api);
    return stats;
  }

  void fill_totals(Attribution& result) {
    std::vector<std::size_t> all_activities(activities_.size());
    std::iota(all_activities.begin(), all_activities.end(), std::size_t{0});
    std::vector<std::size_t> all_calls(trace_.api_calls.size());
    std::iota(all_calls.begin(), all_calls.end(), std::size_t{0});
    result.total = bucket(all_activities, all_calls);

    std::map<std::uint32_t, std::vector<Interval>> by_device;
    for (const Activity& a : activities_) by_device[a.device].push_back({a.start_ns, a.end_ns});
    result.devices = static_cast<std::uint32_t>(by_device.size());
    for (auto& [device, intervals] : by_device) {
      std::uint64_t cursor = result.window_start_ns;
      const auto gap = [&](std::uint64_t until) {
        if (until <= cursor) return;
        ++result.idle.count;
        result.idle.total_ns += until - cursor;
        result.idle.largest_ns = std::max(result.idle.largest_ns, until - cursor);
      };
      for (const Interval& busy : merge(std::move(intervals))) {
        gap(busy.start);
        cursor = std::max(cursor, busy.end);
      }
      gap(result.window_end_ns);
    }

    for (const Activity& a : activities_) {
      if (a.kind == ActivityKind::kernel && a.api == kNoApi) ++result.kernels_without_api_record;
      if (a.category == KernelCategory::other) {
        ++result.other_kernel_names[trace_.kernels[a.index].name];
      }
    }
    for (const SynchronizationEvent& s : trace_.synchronizations) {
      result.synchronization_time_ns += duration_ns(s.start_ns, s.end_ns);
    }
    for (const OverheadEvent& o : trace_.overheads) {
      result.cupti_overhead_ns += duration_ns(o.start_ns, o.end_ns);
    }
  }

  // Range instances are grouped by name; the outside bucket holds what no range contains.
  void fill_ranges(Attribution& result) {
    std::map<std::string, std::size_t> name_index;
    for (const RangeEvent& r : trace_.ranges) name_index.emplace(r.name, 0);
    std::size_t next_index = 0;
    for (auto& [name, index] : name_index) index = next_index++;
    const std::size_t outside = name_index.size();
    range_name_of_.resize(trace_.ranges.size());
    for (std::size_t r = 0; r < trace_.ranges.size(); ++r) {
      range_name_of_[r] = name_index.at(trace_.ranges[r].name);
    }

    std::vector<std::vector<std::size_t>> self_activities(outside + 1), self_calls(outside + 1);
    std::vector<std::vector<std::size_t>> inclusive_activities(outside + 1),
        inclusive_calls(outside + 1);
    const auto add = [&](std::size_t api, std::vector<std::vector<std::size_t>>& self,
                         std::vector<std::vector<std::size_t>>& inclusive, std::size_t id) {
      if (api == kNoApi || enclosing_[api].empty()) {
        self[outside].push_back(id);
        inclusive[outside].push_back(id);
        return;
      }
      self[range_name_of_[enclosing_[api].back()]].push_back(id);
      std::set<std::size_t> names;  // a name nested in itself counts once
      for (std::size_t r : enclosing_[api]) names.insert(range_name_of_[r]);
      for (std::size_t name : names) inclusive[name].push_back(id);
    };
    for (std::size_t id = 0; id < activities_.size(); ++id) {
      add(activities_[id].api, self_activities, inclusive_activities, id);
    }
    for (std::size_t call = 0; call < trace_.api_calls.size(); ++call) {
      add(call, self_calls, inclusive_calls, call);
    }

    result.ranges.resize(outside);
    for (const auto& [name, index] : name_index) result.ranges[index].name = name;
    for (const RangeEvent& r : trace_.ranges) {
      RangeStats& stats = result.ranges[name_index.at(r.name)];
      ++stats.instances;
      stats.wall_ns += duration_ns(r.start_ns, r.end_ns);
    }
    for (std::size_t index = 0; index < outside; ++index) {
      result.ranges[index].self = bucket(self_activities[index], self_calls[index]);
      result.ranges[index].inclusive = bucket(inclusive_activities[index], inclusive_calls[index]);
    }
    result.outside_any_range.name = std::string(kOutsideAnyRange);
    result.outside_any_range.self = bucket(self_activities[outside], self_calls[outside]);
    result.outside_any_range.inclusive = result.outside_any_range.self;
  }

  // Per GEMM range instance: the kernels launched inside it (at any depth).
  void fill_gemm_summary(Attribution& result) const {
    struct Instance {
      std::uint64_t kernels = 0;
      std::uint64_t tensor_core_kernels = 0;
      std::uint64_t time_ns = 0;
    };
    std::map<std::size_t, Instance> instances;
    for (const Activity& a : activities_) {
      if (a.kind != ActivityKind::kernel || a.api == kNoApi) continue;
      for (std::size_t r : enclosing_[a.api]) {
        if (!parse_gemm_range_name(trace_.ranges[r].name)) continue;
        Instance& instance = instances[r];
        ++instance.kernels;
        instance.time_ns += duration_ns(a.start_ns, a.end_ns);
        if (uses_tensor_cores(a.category)) ++instance.tensor_core_kernels;
      }
    }
    std::map<std::string, GemmRangeStats> by_name;
    for (const auto& [r, instance] : instances) {
      const std::string& name = trace_.ranges[r].name;
      const GemmShape shape = *parse_gemm_range_name(name);
      const TensorCoreEligibility eligibility = tensor_core_eligibility(shape);
      GemmEligibilitySummary& summary = result.gemm;
      ++summary.gemm_ranges;
      switch (eligibility) {
        case TensorCoreEligibility::eligible: ++summary.eligible; break;
        case TensorCoreEligibility::misaligned: ++summary.misaligned; break;
        case TensorCoreEligibility::unsupported_dtype: ++summary.unsupported_dtype; break;
      }
      if (eligibility == TensorCoreEligibility::eligible && instance.tensor_core_kernels == 0) {
        ++summary.eligible_but_not_tensor_core;
        summary.eligible_but_not_tensor_core_time_ns += instance.time_ns;
      }
      GemmRangeStats& stats = by_name[name];
      stats.name = name;
      stats.shape = shape;
      stats.eligibility = eligibility;
      ++stats.instances;
      stats.kernel_count += instance.kernels;
      stats.kernel_time_ns += instance.time_ns;
      stats.tensor_core_kernel_count += instance.tensor_core_kernels;
    }
    for (auto& [name, stats] : by_name) result.gemm.by_name.push_back(std::move(stats));
  }

  static void fill_shares(Attribution& result) {
    const BucketStats& total = result.total;
    const auto time_of = [&](KernelCategory c) {
      const auto it = total.categories.find(c);
      return it == total.categories.end() ? std::uint64_t{0} : it->second.time_ns;
    };
    const auto ratio = [](std::uint64_t numerator, std::uint64_t denominator) {
      return denominator == 0 ? std::nullopt
                              : std::optional<double>(static_cast<double>(numerator) /
                                                      static_cast<double>(denominator));
    };
    result.cast_share = ratio(time_of(KernelCategory::cast), total.kernel_time_ns);
    result.tensor_core_share =
        ratio(time_of(KernelCategory::gemm_tensor_core) + time_of(KernelCategory::conv_tensor_core),
              total.kernel_time_ns);
    result.idle_share = ratio(result.idle.total_ns, result.wall_ns * result.devices);
    // Nothing launched (a CPU run's host phases): no launch overhead to speak of, not 0.
    if (total.kernel_count > 0 || total.launch_api_time_ns > 0) {
      result.launch_overhead_share = ratio(total.launch_api_time_ns, result.wall_ns);
    }
  }

  void fill_warnings(Attribution& result) const {
    result.dropped_records = total_dropped_records(trace_);
    if (result.dropped_records > 0) {
      std::string where;
      for (const DroppedRecords& d : trace_.dropped_records) {
        if (d.count == 0) continue;
        where += fmt::format("{}context {} stream {}: {}", where.empty() ? "" : ", ", d.context,
                             d.stream, d.count);
      }
      result.warnings.push_back(
          fmt::format("CUPTI dropped {} activity records ({}): kernel counts, busy times and "
                      "shares are lower bounds; enlarge the activity buffers",
                      result.dropped_records, where));
    }
    if (result.kernels_without_api_record > 0) {
      result.warnings.push_back(fmt::format(
          "{} kernels have no launch record (the API call was not traced or was dropped); they "
          "are counted under {}",
          result.kernels_without_api_record, kOutsideAnyRange));
    }
  }

  const Trace& trace_;
  std::unordered_map<std::uint32_t, std::size_t> api_by_correlation_;
  std::set<std::size_t> kernel_launch_calls_;
  std::vector<Activity> activities_;
  std::vector<std::vector<std::size_t>> enclosing_;  // per API call: ranges, innermost last
  std::vector<std::size_t> range_name_of_;
};

nlohmann::json to_json(const LaunchDelayStats& s) {
  return {{"count", s.count}, {"median_ns", s.median_ns}, {"max_ns", s.max_ns}};
}

nlohmann::json to_json(const BucketStats& s) {
  nlohmann::json categories = nlohmann::json::object();
  for (const auto& [category, c] : s.categories) {
    categories[std::string(to_string(category))] = {
        {"count", c.count}, {"time_ns", c.time_ns}, {"busy_ns", c.busy_ns}};
  }
  return {{"kernel_count", s.kernel_count},
          {"kernel_time_ns", s.kernel_time_ns},
          {"memcpy_count", s.memcpy_count},
          {"memcpy_bytes", s.memcpy_bytes},
          {"memset_count", s.memset_count},
          {"busy_ns", s.busy_ns},
          {"api_count", s.api_count},
          {"api_time_ns", s.api_time_ns},
          {"launch_api_time_ns", s.launch_api_time_ns},
          {"launch_delay", to_json(s.launch_delay)},
          {"categories", std::move(categories)}};
}

nlohmann::json to_json(const RangeStats& r) {
  return {{"name", r.name},
          {"instances", r.instances},
          {"wall_ns", r.wall_ns},
          {"self", to_json(r.self)},
          {"inclusive", to_json(r.inclusive)}};
}

nlohmann::json share(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

}  // namespace

Attribution attribute(const Trace& trace) {
  return Attributor(trace).run();
}

nlohmann::json to_json(const Attribution& a) {
  nlohmann::json ranges = nlohmann::json::array();
  for (const RangeStats& r : a.ranges) ranges.push_back(to_json(r));
  nlohmann::json gemm_ranges = nlohmann::json::array();
  for (const GemmRangeStats& g : a.gemm.by_name) {
    gemm_ranges.push_back({{"name", g.name},
                           {"m", g.shape.m},
                           {"n", g.shape.n},
                           {"k", g.shape.k},
                           {"dtype", to_string(g.shape.dtype)},
                           {"eligibility", to_string(g.eligibility)},
                           {"instances", g.instances},
                           {"kernel_count", g.kernel_count},
                           {"kernel_time_ns", g.kernel_time_ns},
                           {"tensor_core_kernel_count", g.tensor_core_kernel_count}});
  }
  return {
      {"schema", "ampbench.profile/1"},
      {"window", {{"start_ns", a.window_start_ns}, {"end_ns", a.window_end_ns}}},
      {"wall_ns", a.wall_ns},
      {"devices", a.devices},
      {"total", to_json(a.total)},
      {"idle",
       {{"count", a.idle.count}, {"total_ns", a.idle.total_ns}, {"largest_ns", a.idle.largest_ns}}},
      {"ranges", std::move(ranges)},
      {"outside_any_range", to_json(a.outside_any_range)},
      {"kernels_without_api_record", a.kernels_without_api_record},
      {"synchronization_time_ns", a.synchronization_time_ns},
      {"cupti_overhead_ns", a.cupti_overhead_ns},
      {"other_kernel_names", a.other_kernel_names},
      {"shares",
       {{"cast", share(a.cast_share)},
        {"tensor_core", share(a.tensor_core_share)},
        {"idle", share(a.idle_share)},
        {"launch_overhead", share(a.launch_overhead_share)}}},
      {"gemm",
       {{"gemm_ranges", a.gemm.gemm_ranges},
        {"eligible", a.gemm.eligible},
        {"misaligned", a.gemm.misaligned},
        {"unsupported_dtype", a.gemm.unsupported_dtype},
        {"eligible_but_not_tensor_core", a.gemm.eligible_but_not_tensor_core},
        {"eligible_but_not_tensor_core_time_ns", a.gemm.eligible_but_not_tensor_core_time_ns},
        {"by_name", std::move(gemm_ranges)}}},
      {"dropped_records", a.dropped_records},
      {"warnings", a.warnings}};
}

}  // namespace ampbench::profile
