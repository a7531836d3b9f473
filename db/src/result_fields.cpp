#include "tiletune/result_fields.hpp"

namespace tiletune {

namespace {

using T = ResultField::Type;
using R = ResultRecord;

ResultField integer(const char* name, std::optional<int> R::*member, const char* t4_name = nullptr,
                    const char* t4_unit = "") {
  return {name, T::integer, member, nullptr, nullptr, 1, t4_name, t4_unit};
}

ResultField real(const char* name, std::optional<double> R::*member, const char* t4_name = nullptr,
                 const char* t4_unit = "", int since_schema = 1) {
  return {name, T::real, nullptr, member, nullptr, since_schema, t4_name, t4_unit};
}

ResultField text(const char* name, std::string R::*member) {
  return {name, T::text, nullptr, nullptr, member, 1, nullptr, ""};
}

}  // namespace

const std::vector<ResultField>& result_fields() {
  static const std::vector<ResultField> fields = {
      real("median_ms", &R::median_ms, "time", "ms"),
      real("min_ms", &R::min_ms, "min_time", "ms"),
      real("spread", &R::spread, "spread", "(p75 - p25) / median"),
      real("metric", &R::metric, "throughput", nullptr),
      text("metric_unit", &R::metric_unit),
      real("error", &R::error, "relative_l2_error", ""),
      integer("registers", &R::registers, "registers", "registers per thread"),
      integer("static_smem", &R::static_smem, "static_shared_memory", "bytes"),
      integer("dynamic_smem", &R::dynamic_smem, "dynamic_shared_memory", "bytes"),
      integer("local_bytes", &R::local_bytes, "local_memory", "bytes"),
      integer("spill_bytes", &R::spill_bytes, "spilled", "bytes"),
      integer("threads_per_block", &R::threads_per_block, "threads_per_block", "threads"),
      integer("active_blocks", &R::active_blocks),
      integer("active_warps", &R::active_warps),
      text("occupancy_limiter", &R::occupancy_limiter),
      real("occupancy", &R::occupancy, "occupancy", "active warps / maximum warps per SM"),
      real("sm_clock_mhz", &R::sm_clock_mhz, "sm_clock", "MHz"),
      real("compile_ms", &R::compile_ms, nullptr, "", 2),
      real("measure_ms", &R::measure_ms, nullptr, "", 2),
  };
  return fields;
}

}  // namespace tiletune
