// The parent's side of the worker protocol: requests built from a family and a problem, replies read back.
#pragma once

#include "tiletune/compiler.hpp"
#include "tiletune/device.hpp"
#include "tiletune/family.hpp"
#include "tiletune/plan.hpp"
#include "tiletune/sweep.hpp"
#include "tiletune/worker_protocol.hpp"

namespace tiletune {

// Buffers, constants and the compiled reference for (family, problem). Compiles the reference through the
// cache; throws SweepError, one line, when it cannot be compiled or launched.
wire::SetupRequest setup_request(const KernelFamily& family, const ProblemKey& problem,
                                 const DeviceLimits& device, const CompileCache& cache,
                                 const MeasureSettings& settings);

// The worker looks the kernel up by launch.kernel_symbol (the lowered name apply_compile_result recorded, so
// that C++ kernels are found), or by the family's kernel name before it is known. Tensor maps and the cluster
// come from the launch as prune_before_compile evaluated it; throws SweepError for a launch that lacks a
// tensor map's values.
wire::MeasureRequest measure_request(const KernelFamily& family, const ProblemKey& problem,
                                     const Params& params, const LaunchGeometry& launch,
                                     const std::string& cubin_path, const MeasureSettings& settings);

wire::BaselineRequest baseline_request(const KernelFamily& family, const ProblemKey& problem,
                                       const LibraryBaseline& library, const MeasureSettings& settings);

// Sends a request and reads its reply. A worker that timed out or died gives ok == false with the reason;
// `timed_out` tells the two apart where the caller cares.
wire::Reply ask(Worker& worker, const nlohmann::json& message, double timeout_s, bool* timed_out = nullptr);

// Fills the measured fields of a record from a worker's reply to a measure request.
void apply_measurement(ResultRecord& record, const wire::Reply& reply, double work, const std::string& unit);

}  // namespace tiletune
