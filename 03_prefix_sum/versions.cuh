// Chapter 03's problems and their ladders, listed once. The benchmark, the GPU tests, the exercise
// grader, the profiler and the sweep iterate these lists; a new version is one new entry.
//
//   Part A, block-wise scans: segscan_i32, segscan_f32    v0_global ... v5_coarsened_vector
//   Part B, device-wide:      scan_i32, scan_f32 (inclusive), exclusive_scan_i32, exclusive_scan_f32
//                                                         v6_reduce_then_scan, v7_decoupled_lookback,
//                                                         and CUB's DeviceScan as the peer
#pragma once

#include "instance.cuh"
#include "kernels/cub_scan.cuh"
#include "kernels/v0_global.cuh"
#include "kernels/v1_shared.cuh"
#include "kernels/v2_double_buffer.cuh"
#include "kernels/v3_warp_shuffle.cuh"
#include "kernels/v4_coarsened.cuh"
#include "kernels/v5_coarsened_vector.cuh"
#include "kernels/v6_reduce_then_scan.cuh"
#include "kernels/v7_decoupled_lookback.cuh"
#include "tut/elementwise_problem.cuh"

#if TUT_EXERCISES
#include "exercises/block_scan_shuffle.cuh"
#endif

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ch03 {

using SegmentedLaunch = void (*)(cudaStream_t, std::int64_t, std::int64_t, int*, const int*);

// The inputs: int32 in [-1000, 1000]; floats are whole numbers in [-8, 8], so every partial sum up
// to 2^24 is exact and the float scans are compared exactly too (reference.hpp).
template <class T>
tut::InputSpec input_spec() {
  if constexpr (std::is_integral_v<T>) return tut::InputSpec::uniform(-1000, 1000);
  else return tut::InputSpec::whole_numbers(-8, 8);
}

// A block-wise case: n elements in segments of `segment`, named "n=<n> segment=<segment>".
inline tut::Case segmented_case(std::int64_t n, std::int64_t segment) {
  check_segmented(n, segment);
  const auto params = tut::Params{}.set("segment", segment);
  return {tut::case_name({n}, params), {n}, params};
}

template <class T>
tut::Problem<ScanInstance<T>> base_problem(std::string name, std::string description, bool segmented,
                                           bool exclusive) {
  tut::Problem<ScanInstance<T>> p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.dtype = tut::dtype_name<T>();
  if (segmented)
    p.params = {{"segment", kDefaultSegment, "elements per segment, each scanned alone (1 to 1024)", {}}};
  p.case_for = [segmented](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    const tut::Case flat = tut::elementwise_case(shape, params);  // one dimension, 1 <= n <= 2^36
    if (segmented) check_segmented(flat.numel(), params.get<std::int64_t>("segment"));
    return flat;
  };
  tut::flat_cases(p, segmented ? tut::Params{}.set("segment", kDefaultSegment) : tut::Params{});
  p.floor = [](const tut::Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel());
    return tut::Floor{2 * n * sizeof(T), n, {}};  // read x once, write y once; one addition each
  };
  p.make = [segmented, exclusive](const tut::Case& c, const tut::InstanceOptions& o) {
    // Special values (NaN, ±inf) in a device-wide scan make every later sum NaN or inf, which would
    // hide the rest; the block-wise problems take them (each segment starts clean).
    const bool specials = segmented && !std::is_integral_v<T>;
    return std::make_unique<ScanInstance<T>>(c, o, segmented, exclusive, input_spec<T>().with_specials(specials));
  };
  return p;
}

template <class T>
tut::Version<ScanInstance<T>> segmented_version(std::string name, std::string summary,
                                                void (*launch)(cudaStream_t, std::int64_t, std::int64_t, T*, const T*),
                                                std::vector<const void*> kernels, tut::Kind kind = tut::Kind::own) {
  tut::Version<ScanInstance<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](ScanInstance<T>& i, tut::Workspace&, cudaStream_t s) { launch(s, i.n(), i.segment(), i.y(), i.x()); };
  v.kernels = std::move(kernels);
  v.kind = kind;
  return v;
}

template <class T>
using DeviceLaunch = void (*)(cudaStream_t, std::int64_t, bool, T*, const T*, void*, std::size_t);

template <class T>
tut::Version<ScanInstance<T>> device_version(std::string name, std::string summary, DeviceLaunch<T> launch,
                                             std::function<std::size_t(const ScanInstance<T>&)> scratch,
                                             std::vector<const void*> kernels, tut::Kind kind = tut::Kind::own,
                                             std::string library = {}) {
  tut::Version<ScanInstance<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](ScanInstance<T>& i, tut::Workspace& s, cudaStream_t st) {
    launch(st, i.n(), i.exclusive(), i.y(), i.x(), s.data(), s.bytes());
  };
  v.scratch_bytes = std::move(scratch);
  v.kernels = std::move(kernels);
  v.kind = kind;
  v.library = std::move(library);
  return v;
}

// Part A. Each segment of `segment` elements (1024 unless a case says otherwise) is scanned alone.
// v1-v3 launch a kernel compiled for the segment when there is one (kCompiledSegments), else their
// run-time form; the registers column shows the default segment's kernel.
template <class T>
const tut::Problem<ScanInstance<T>>& segscan_problem() {
  static const auto problem = [] {
    const std::string dt = tut::dtype_name<T>();
    auto p = base_problem<T>("segscan_" + dt, "block-wise inclusive scan of " + dt + ", segments of 1024", true, false);
    p.versions = {
        segmented_version<T>("v0_global", "Hillis-Steele in global memory, two barriers per step", &v0_global<T>,
                             {TUT_KERNEL(v0_global_kernel<T>)}),
        segmented_version<T>("v1_shared", "the same steps in shared memory", &v1_shared<T>,
                             {TUT_KERNEL(v1_shared_kernel<kDefaultSegment, T>)}),
        segmented_version<T>("v2_double_buffer", "two shared buffers, one barrier per step", &v2_double_buffer<T>,
                             {TUT_KERNEL(v2_double_buffer_kernel<kDefaultSegment, T>)}),
        segmented_version<T>("v3_warp_shuffle", "__shfl_up_sync warp scans, then a scan of warp totals",
                             &v3_warp_shuffle<T>, {TUT_KERNEL(v3_warp_shuffle_kernel<kDefaultSegment, T>)}),
        segmented_version<T>("v4_coarsened", "4 elements per thread scanned in registers, one block scan",
                             &v4_coarsened<T>, {TUT_KERNEL(coarsened_segment_kernel<kCoarsenItems, false, T>)}),
        segmented_version<T>("v5_coarsened_vector", "v4 with one 16-byte load and store per thread",
                             &v5_coarsened_vector<T>, {TUT_KERNEL(coarsened_segment_kernel<kCoarsenItems, true, T>)}),
#if TUT_EXERCISES
        segmented_version<T>("ex_block_scan_shuffle", "exercise: your warp-shuffle block scan",
                             &exercise::block_scan_shuffle<T>, {TUT_KERNEL(exercise::block_scan_shuffle_kernel<T>)},
                             tut::Kind::exercise),
#endif
    };
    return p;
  }();
  return problem;
}

// Part B. One scan over the whole array, inclusive or exclusive.
template <class T>
tut::Problem<ScanInstance<T>> device_problem(bool exclusive) {
  const std::string dt = tut::dtype_name<T>();
  auto p = base_problem<T>(std::string(exclusive ? "exclusive_scan_" : "scan_") + dt,
                           std::string(exclusive ? "exclusive" : "inclusive") + " prefix sum of " + dt +
                               " over the whole array",
                           false, exclusive);
  // Exclusive and inclusive kernels are separate instantiations; list the ones this problem runs.
  p.versions = {
      device_version<T>("v6_reduce_then_scan", "tile totals, one block scans them, tiles scanned again (3n moved)",
                        &v6_reduce_then_scan<T>,
                        [](const ScanInstance<T>& i) { return v6_scratch_bytes(i.n(), sizeof(T)); },
                        exclusive ? std::vector<const void*>{TUT_KERNEL(tile_reduce_kernel<true, T>),
                                                             TUT_KERNEL(scan_partials_kernel<T>),
                                                             TUT_KERNEL(tile_scan_kernel<true, true, T>)}
                                  : std::vector<const void*>{TUT_KERNEL(tile_reduce_kernel<true, T>),
                                                             TUT_KERNEL(scan_partials_kernel<T>),
                                                             TUT_KERNEL(tile_scan_kernel<true, false, T>)}),
      device_version<T>("v7_decoupled_lookback", "one pass: ticketed tiles, warp-wide look-back, packed flags",
                        &v7_decoupled_lookback<T>, [](const ScanInstance<T>& i) { return v7_scratch_bytes(i.n()); },
                        {exclusive ? TUT_KERNEL(decoupled_lookback_kernel<V7Config, true, true, T>)
                                   : TUT_KERNEL(decoupled_lookback_kernel<V7Config, true, false, T>)}),
      device_version<T>(exclusive ? "cub_ExclusiveSum" : "cub_InclusiveSum",
                        exclusive ? "cub::DeviceScan::ExclusiveSum" : "cub::DeviceScan::InclusiveSum", &cub_scan<T>,
                        [exclusive](const ScanInstance<T>& i) { return cub_scan_scratch_bytes<T>(i.n(), exclusive); },
                        {}, tut::Kind::peer, "CUB"),
  };
  return p;
}

template <class T>
const tut::Problem<ScanInstance<T>>& scan_problem() {
  static const auto problem = device_problem<T>(false);
  return problem;
}

template <class T>
const tut::Problem<ScanInstance<T>>& exclusive_scan_problem() {
  static const auto problem = device_problem<T>(true);
  return problem;
}

}  // namespace ch03
