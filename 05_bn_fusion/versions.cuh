// Chapter 05's problems and their ladders, listed once. The benchmark, the GPU tests, the exercise
// grader, the race module and the tools iterate these lists; a new version is one new entry.
//
//   bn_relu_f32, bn_add_relu_f32                    training forward: statistics, running
//   bn_relu_f16, bn_add_relu_f16                    statistics, y = relu(BN(x) [+ r]), the mask
//   bn_relu_backward_f32, bn_add_relu_backward_f32  training backward: dx, dgamma, dbeta [, dr]
//   bn_relu_backward_f16, bn_add_relu_backward_f16  from the saved statistics and the mask
//   bn_relu_inference_f32                           y = relu(x * scale + shift), folded
//
// Every case is N x C x H x W with --param layout=NCHW|NHWC (and eps, momentum, shift). The floor
// is the single-read count: x (and r) read once, y written once, the mask at 1/8 byte per element,
// the per-channel vectors; the "two_pass" model beside it reads x a second time (the backward: dy,
// x and the mask). Per float element: forward 8.125 and 12.125, backward 12.125 and 20.25, and the
// Add form 4 more in each.
#pragma once

#include "instances.cuh"
#include "kernels/bwd_v0_unfused.cuh"
#include "kernels/bwd_v1_fused.cuh"
#include "kernels/bwd_v2_layout_aware.cuh"
#include "kernels/bwd_v3_single_read.cuh"
#include "kernels/bwd_v4_own_packs.cuh"
#include "kernels/bwd_v5_onchip_cache.cuh"
#include "kernels/bwd_v6_balanced.cuh"
#include "kernels/bwd_v8_cluster.cuh"
#include "kernels/bwd_v15_one_cluster.cuh"
#include "kernels/bwd_v17_split_pass.cuh"
#include "kernels/bwd_v19_warp_columns.cuh"
#include "kernels/bwd_v20_async_pass.cuh"
#include "kernels/bwd_v21_resident.cuh"
#include "kernels/bwd_v30_pushed_sums.cuh"
#include "kernels/bwd_v31_held_rounds.cuh"
#include "kernels/fwd_v0_unfused.cuh"
#include "kernels/fwd_v1_welford_fused.cuh"
#include "kernels/fwd_v2_layout_aware.cuh"
#include "kernels/fwd_v3_single_read.cuh"
#include "kernels/fwd_v4_own_packs.cuh"
#include "kernels/fwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v6_balanced.cuh"
#include "kernels/fwd_v7_mask_bytes.cuh"
#include "kernels/fwd_v8_cluster.cuh"
#include "kernels/fwd_v9_two_launches.cuh"
#include "kernels/fwd_v10_cluster_narrow.cuh"
#include "kernels/fwd_v11_early_loads.cuh"
#include "kernels/fwd_v12_resident.cuh"
#include "kernels/fwd_v13_arrivals.cuh"
#include "kernels/fwd_v14_shifted_sums.cuh"
#include "kernels/fwd_v15_one_cluster.cuh"
#include "kernels/fwd_v16_channel_blocks.cuh"
#include "kernels/fwd_v17_split_pass.cuh"
#include "kernels/fwd_v19_warp_columns.cuh"
#include "kernels/fwd_v20_async_pass.cuh"
#include "kernels/fwd_v24_mask_runs.cuh"
#include "kernels/fwd_v26_channel_groups.cuh"
#include "kernels/fwd_v28_loads_ahead.cuh"
#include "kernels/fwd_v29_held_rounds.cuh"
#include "kernels/fwd_v30_pushed_sums.cuh"
#include "kernels/inference.cuh"
#include "peers/cudnn_peers.cuh"
#include "tut/problem.hpp"

#if TUT_EXERCISES
#include "exercises/bn_relu_apply.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ch05 {

template <class T>
using FwdLaunch = void (*)(cudaStream_t, const FwdArgs<T>&, void*);
template <class T>
using BwdLaunch = void (*)(cudaStream_t, const BwdArgs<T>&, void*);
using ScratchOf = std::size_t (*)(const Shape4&);

template <class T, bool kAdd>
tut::Version<ForwardInstance<T, kAdd>> fwd_version(std::string name, std::string summary, FwdLaunch<T> launch,
                                                   ScratchOf scratch, std::vector<const void*> kernels,
                                                   tut::Kind kind = tut::Kind::own) {
  tut::Version<ForwardInstance<T, kAdd>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](ForwardInstance<T, kAdd>& i, tut::Workspace& w, cudaStream_t s) { launch(s, i.args(), w.data()); };
  v.scratch_bytes = [scratch](const ForwardInstance<T, kAdd>& i) { return scratch(i.shape()); };
  v.kernels = std::move(kernels);
  v.kind = kind;
  v.writes = {"y", "mask", "saved_mean", "saved_invstd", "running_mean", "running_var"};
  return v;
}

template <class T, bool kAdd>
tut::Version<BackwardInstance<T, kAdd>> bwd_version(std::string name, std::string summary, std::string record,
                                                    BwdLaunch<T> launch, ScratchOf scratch,
                                                    std::vector<const void*> kernels) {
  tut::Version<BackwardInstance<T, kAdd>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](BackwardInstance<T, kAdd>& i, tut::Workspace& w, cudaStream_t s) { launch(s, i.args(), w.data()); };
  v.scratch_bytes = [scratch](const BackwardInstance<T, kAdd>& i) { return scratch(i.shape()); };
  v.kernels = std::move(kernels);
  v.reads = {"dy", "x", "gamma", "saved_mean", "saved_invstd", std::move(record)};
  return v;
}

#if TUT_EXERCISES
// The exercise's version: v2's statistics, then the student's pass.
inline void exercise_version(cudaStream_t st, const FwdArgs<float>& a, void* ws) {
  constexpr int V = kPack<float>;
  const Scratch sc(a.s.C, fwd_v2_partial_bytes(a.s, V), 0);
  if (stats_packs_ok<float>(a.s, a.x)) fwd_v2_stats<V, float>(st, a, sc, ws);
  else fwd_v2_stats<1, float>(st, a, sc, ws);
  exercise::bn_relu_apply(st, a, sc.params_at(ws));
}
#endif

// ---- Cases ---------------------------------------------------------------------------------------

inline std::vector<tut::ParamSpec> bn_params(const char* layout) {
  return {{"layout", std::string(layout), "memory order: NCHW, or NHWC (channels last)", {"NCHW", "NHWC"}},
          {"eps", 1e-5, "added to the variance", {}},
          {"momentum", 0.1, "the weight of this batch in the running statistics", {}},
          {"shift", 0.0, "x is drawn uniform in [shift - 3, shift + 3)", {}}};
}

inline tut::Params default_params(const std::vector<tut::ParamSpec>& specs) {
  tut::Params p;
  for (const auto& s : specs) p.set(s.key, s.default_value);
  return p;
}

template <class Inst>
void bn_cases(tut::Problem<Inst>& p, const char* layout, bool training) {
  p.params = bn_params(layout);
  p.case_for = [training](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    const std::string why = bn_case_error(shape, params.get<double>("eps"), params.get<double>("momentum"), training);
    if (!why.empty()) throw std::invalid_argument(why);
    return tut::Case{tut::case_name(shape, params), shape, params};
  };
  const auto at = [&](std::vector<std::int64_t> shape, const char* l) {
    tut::Params params = default_params(p.params);
    params.set("layout", std::string(l));
    return p.case_for(shape, params);
  };
  p.default_case = at({64, 64, 112, 112}, layout);
  const std::vector<std::vector<std::int64_t>> shapes = {{16, 32, 112, 112}, {64, 64, 112, 112}, {128, 256, 28, 28},
                                                         {128, 64, 56, 56},  {64, 1024, 7, 7},   {8, 3, 224, 224},
                                                         {4, 33, 17, 19}};
  for (const char* l : {"NCHW", "NHWC"})
    for (const auto& shape : shapes) p.suite.push_back(at(shape, l));
  p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<Inst>(c, o); };
}

inline std::uint64_t words_bytes(std::int64_t n) { return 4 * static_cast<std::uint64_t>(tut::bitmask::word_count(n)); }

// ---- Forward -------------------------------------------------------------------------------------

template <class T, bool kAdd>
tut::Problem<ForwardInstance<T, kAdd>> forward_problem() {
  using Inst = ForwardInstance<T, kAdd>;
  tut::Problem<Inst> p;
  const std::string dt = tut::dtype_name<T>();
  constexpr bool half = std::is_same_v<T, __half>;
  p.name = std::string(kAdd ? "bn_add_relu_" : "bn_relu_") + dt;
  p.description = std::string("training BN (batch statistics, running statistics, saved mean and invstd), then ") +
                  (kAdd ? "y = relu(BN(x) + r)" : "y = relu(BN(x))") + " and its mask, on " + dt;
  p.dtype = dt;
  bn_cases(p, half ? "NHWC" : "NCHW", true);
  // x (and r) read, y written, the mask, 8 floats per channel (gamma, beta, the running statistics
  // read and written, the saved mean and invstd); the two-pass model reads x again.
  p.floor = [](const tut::Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel()), C = static_cast<std::uint64_t>(c.shape.at(1));
    const std::uint64_t b = sizeof(T), bytes = n * b * (kAdd ? 3 : 2) + words_bytes(c.numel()) + 32 * C;
    return tut::Floor{bytes, n * (kAdd ? 7 : 6), {{"two_pass", bytes + n * b}}};
  };
  if constexpr (!half) {
    p.versions.push_back(fwd_version<T, kAdd>("v0_unfused", "two-pass statistics, normalize, then ReLU + mask: 4 kernels",
                                              &fwd_v0_unfused<T, kAdd>, &fwd_v0_scratch_bytes<T>, fwd_v0_kernels<T, kAdd>()));
    p.versions.push_back(fwd_version<T, kAdd>("v1_welford_fused",
                                              "Welford + Chan per channel block, then one fused pass with the ballot",
                                              &fwd_v1_welford_fused<T, kAdd>, &fwd_v1_scratch_bytes<T>,
                                              fwd_v1_kernels<T, kAdd>()));
  }
  p.versions.push_back(fwd_version<T, kAdd>("v2_layout_aware",
                                            "split channels (NCHW) or column rows (NHWC), last-block merge; 16-byte packs",
                                            &fwd_v2_layout_aware<T, kAdd>, &fwd_v2_scratch_bytes<T>,
                                            fwd_v2_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v3_single_read",
                                            "one cooperative kernel, grid.sync, normalize back to front: x from L2",
                                            &fwd_v3_single_read<T, kAdd>, &fwd_v3_scratch_bytes<T>,
                                            fwd_v3_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v4_own_packs",
                                            "v3, the pass walking each thread's own packs back to front, 4 in flight",
                                            &fwd_v4_own_packs<T, kAdd>, &fwd_v4_scratch_bytes<T>,
                                            fwd_v4_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v5_onchip_cache",
                                            "v4, each thread's first packs kept in shared memory for the pass",
                                            &fwd_v5_onchip_cache<T, kAdd>, &fwd_v5_scratch_bytes<T>,
                                            fwd_v5_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v6_balanced",
                                            "v5, the pass's uncached packs handed out from a queue at run time",
                                            &fwd_v6_balanced<T, kAdd>, &fwd_v6_scratch_bytes<T>, fwd_v6_kernels<T, kAdd>()));
  if constexpr (half)
    p.versions.push_back(fwd_version<T, kAdd>("v7_mask_bytes",
                                              "v5, each pack of 8 halves written as one byte of the mask: no ballots",
                                              &fwd_v7_mask_bytes<T, kAdd>, &fwd_v7_scratch_bytes<T>,
                                              fwd_v7_kernels<T, kAdd>()));
  {
    auto v = fwd_version<T, kAdd>("v8_cluster",
                                  "a cluster per channel group, x in registers, statistics merged in shared memory",
                                  &fwd_v8_cluster<T, kAdd>, &fwd_v8_scratch_bytes<T>, fwd_v8_kernels<T, kAdd>());
    v.setup = [](ForwardInstance<T, kAdd>&, tut::Workspace&) { require_clusters("fwd_v8_cluster"); };
    p.versions.push_back(std::move(v));
  }
  p.versions.push_back(fwd_version<T, kAdd>("v9_two_launches",
                                            "statistics kernel, then the pass started early (dependent launch), x from L2",
                                            &fwd_v9_two_launches<T, kAdd>, &fwd_v9_scratch_bytes<T>,
                                            fwd_v9_kernels<T, kAdd>()));
  {
    auto v = fwd_version<T, kAdd>("v10_cluster_narrow",
                                  "v8 with 8 packs per thread at most, 4 blocks per SM: narrower groups, more clusters",
                                  &fwd_v10_cluster_narrow<T, kAdd>, &fwd_v8_scratch_bytes<T>, fwd_v10_kernels<T, kAdd>());
    v.setup = [](ForwardInstance<T, kAdd>&, tut::Workspace&) { require_clusters("fwd_v10_cluster_narrow"); };
    p.versions.push_back(std::move(v));
  }
  p.versions.push_back(fwd_version<T, kAdd>("v11_early_loads",
                                            "v9, the pass's loads issued before its wait, x staged by cp.async, merges batched",
                                            &fwd_v11_early_loads<T, kAdd>, &fwd_v11_scratch_bytes<T>,
                                            fwd_v11_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v12_resident",
                                            "x held in shared memory (bulk copies), one grid barrier, every block merges",
                                            &fwd_v12_resident<T, kAdd>, &fwd_v12_scratch_bytes<T>,
                                            fwd_v12_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v13_arrivals",
                                            "v12 without the grid barrier: partials merged as their flags come up; half in 8-byte packs",
                                            &fwd_v13_arrivals<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v13_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v14_shifted_sums",
                                            "v13 with every merge a sum: deviations from one value per channel, in double",
                                            &fwd_v14_shifted_sums<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v14_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v15_one_cluster",
                                            "a small tensor in one cluster's registers: sums merged on chip, one launch",
                                            &fwd_v15_one_cluster<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v15_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v16_channel_blocks",
                                            "NCHW, few values a channel: a block per channel, its values in registers, one launch",
                                            &fwd_v16_channel_blocks<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v16_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v17_split_pass",
                                            "v4's statistics, then the pass as a plain grid back to front, its x loaded before it waits",
                                            &fwd_v17_split_pass<T, kAdd>, &fwd_v4_scratch_bytes<T>,
                                            fwd_v17_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v19_warp_columns",
                                            "v17 with each block's columns merged in shuffles and one barrier, not a tree of barriers",
                                            &fwd_v19_warp_columns<T, kAdd>, &fwd_v4_scratch_bytes<T>,
                                            fwd_v19_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v20_async_pass",
                                            "v19's statistics; a resident pass, 128 bytes a thread in flight by cp.async",
                                            &fwd_v20_async_pass<T, kAdd>, &fwd_v4_scratch_bytes<T>,
                                            fwd_v20_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v24_mask_runs",
                                            "v16 whose mask is written by runs: a warp's segments from three ballots, not a word merge per value",
                                            &fwd_v24_mask_runs<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v24_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v26_channel_groups",
                                            "NHWC, C % 64 == 0, few rows: groups of 64 channels in registers, one grid barrier",
                                            &fwd_v26_channel_groups<T, kAdd>, &fwd_v26_scratch_bytes<T>,
                                            fwd_v26_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v28_loads_ahead",
                                            "v27's walk with 8 loads in flight before its sums (2 blocks an SM), v20's pass in half, v17's in float",
                                            &fwd_v28_loads_ahead<T, kAdd>, &fwd_v28_scratch_bytes<T>,
                                            fwd_v28_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v29_held_rounds",
                                            "NHWC: one kernel a block an SM, each thread's first packs kept in shared memory for the pass, rounds side by side",
                                            &fwd_v29_held_rounds<T, kAdd>, &fwd_v29_scratch_bytes<T>,
                                            fwd_v29_kernels<T, kAdd>()));
  p.versions.push_back(fwd_version<T, kAdd>("v30_pushed_sums",
                                            "v15 with each block's sums pushed into every block's shared memory before the cluster barrier",
                                            &fwd_v30_pushed_sums<T, kAdd>, &fwd_v13_scratch_bytes<T>,
                                            fwd_v30_kernels<T, kAdd>()));
  add_cudnn_forward_peers<T, kAdd>(p);
#if TUT_EXERCISES
  if constexpr (!kAdd && !half)
    p.versions.push_back(fwd_version<T, kAdd>("ex_bn_relu_apply", "exercise: your fused normalize + ReLU + mask pass",
                                              &exercise_version, &fwd_v2_scratch_bytes<T>,
                                              {TUT_KERNEL(exercise::bn_relu_apply_kernel)}, tut::Kind::exercise));
#endif
  return p;
}

template <class T, bool kAdd>
const tut::Problem<ForwardInstance<T, kAdd>>& forward() {
  static const auto p = forward_problem<T, kAdd>();
  return p;
}

// ---- Backward ------------------------------------------------------------------------------------

template <class T, bool kAdd>
tut::Problem<BackwardInstance<T, kAdd>> backward_problem() {
  using Inst = BackwardInstance<T, kAdd>;
  tut::Problem<Inst> p;
  const std::string dt = tut::dtype_name<T>();
  constexpr bool half = std::is_same_v<T, __half>;
  p.name = std::string(kAdd ? "bn_add_relu_backward_" : "bn_relu_backward_") + dt;
  p.description = std::string("training backward of ") + (kAdd ? "relu(BN(x) + r): dx, dgamma, dbeta and dr" : "relu(BN(x)): dx, dgamma and dbeta") +
                  " from the saved statistics and mask, on " + dt;
  p.dtype = dt;
  bn_cases(p, half ? "NHWC" : "NCHW", true);
  // dy, x and the mask read, dx (and dr) written, 5 floats per channel (saved mean and invstd,
  // gamma; dgamma, dbeta); the two-pass model reads dy, x and the mask again.
  p.floor = [](const tut::Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel()), C = static_cast<std::uint64_t>(c.shape.at(1));
    const std::uint64_t b = sizeof(T), bytes = n * b * (kAdd ? 4 : 3) + words_bytes(c.numel()) + 20 * C;
    return tut::Floor{bytes, n * 7, {{"two_pass", bytes + 2 * n * b + words_bytes(c.numel())}}};
  };
  p.chain.forward = []() -> const tut::ProblemEntry& {
    static const tut::ProblemEntry e = tut::erase(forward<T, kAdd>());
    return e;
  };
  p.chain.links = {{"saved_mean", "saved_mean"}, {"saved_invstd", "saved_invstd"}, {"mask", "mask"}, {"y", "y"}};
  if constexpr (!half) {
    p.versions.push_back(bwd_version<T, kAdd>("v0_unfused", "ReLU backward from y to memory, then BN backward in two passes",
                                              "y", &bwd_v0_unfused<T, kAdd>, &bwd_v0_scratch_bytes<T, kAdd>,
                                              bwd_v0_kernels<T>()));
    p.versions.push_back(bwd_version<T, kAdd>("v1_fused", "the mask's gradient fused into the sums and into the dx pass",
                                              "mask", &bwd_v1_fused<T, kAdd>, &bwd_v1_scratch_bytes<T>,
                                              bwd_v1_kernels<T, kAdd>()));
  }
  p.versions.push_back(bwd_version<T, kAdd>("v2_layout_aware", "split channels or column rows, last-block merge; 16-byte packs",
                                            "mask", &bwd_v2_layout_aware<T, kAdd>, &bwd_v2_scratch_bytes<T>,
                                            bwd_v2_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v3_single_read", "one cooperative kernel, dx back to front from L2", "mask",
                                            &bwd_v3_single_read<T, kAdd>, &bwd_v3_scratch_bytes<T>,
                                            bwd_v3_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v4_own_packs", "v3, the dx pass walking each thread's own packs, 4 in flight",
                                            "mask", &bwd_v4_own_packs<T, kAdd>, &bwd_v4_scratch_bytes<T>,
                                            bwd_v4_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v5_onchip_cache", "v4, g and x of each thread's first packs kept in shared memory",
                                            "mask", &bwd_v5_onchip_cache<T, kAdd>, &bwd_v5_scratch_bytes<T>,
                                            bwd_v5_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v6_balanced", "v5, the dx pass's uncached packs handed out from a queue at run time",
                                            "mask", &bwd_v6_balanced<T, kAdd>, &bwd_v6_scratch_bytes<T>,
                                            bwd_v6_kernels<T, kAdd>()));
  {
    auto v = bwd_version<T, kAdd>("v8_cluster", "a cluster per channel group, g and x in registers, sums merged in shared memory",
                                  "mask", &bwd_v8_cluster<T, kAdd>, &bwd_v8_scratch_bytes<T>, bwd_v8_kernels<T, kAdd>());
    v.setup = [](BackwardInstance<T, kAdd>&, tut::Workspace&) { require_clusters("bwd_v8_cluster"); };
    p.versions.push_back(std::move(v));
  }
  p.versions.push_back(bwd_version<T, kAdd>("v15_one_cluster", "a small tensor in one cluster's registers, as the forward v15",
                                            "mask", &bwd_v15_one_cluster<T, kAdd>, &bwd_v5_scratch_bytes<T>,
                                            bwd_v15_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v17_split_pass", "v4's sums, then the dx pass as a plain grid back to front, as the forward v17",
                                            "mask", &bwd_v17_split_pass<T, kAdd>, &bwd_v4_scratch_bytes<T>,
                                            bwd_v17_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v19_warp_columns",
                                            "v17 with each block's columns of sums merged in shuffles and one barrier",
                                            "mask", &bwd_v19_warp_columns<T, kAdd>, &bwd_v4_scratch_bytes<T>,
                                            bwd_v19_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v20_async_pass",
                                            "v19's sums; a resident dx pass, 4 chunks a warp in flight by cp.async",
                                            "mask", &bwd_v20_async_pass<T, kAdd>, &bwd_v4_scratch_bytes<T>,
                                            bwd_v20_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v21_resident",
                                            "dy, x and the mask held in shared memory, the blocks' sums as tagged words, as the forward v14",
                                            "mask", &bwd_v21_resident<T, kAdd>, &bwd_v21_scratch_bytes<T>,
                                            bwd_v21_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v30_pushed_sums", "v15 with each block's sums pushed before the cluster barrier, as the forward v30",
                                            "mask", &bwd_v30_pushed_sums<T, kAdd>, &bwd_v5_scratch_bytes<T>,
                                            bwd_v30_kernels<T, kAdd>()));
  p.versions.push_back(bwd_version<T, kAdd>("v31_held_rounds",
                                            "NHWC: one kernel a block an SM, each thread's first packs of g and x kept in shared memory for the dx pass, as the forward v29",
                                            "mask", &bwd_v31_held_rounds<T, kAdd>, &bwd_v31_scratch_bytes<T>,
                                            bwd_v31_kernels<T, kAdd>()));
  add_cudnn_backward_peers<T, kAdd>(p);
  return p;
}

template <class T, bool kAdd>
const tut::Problem<BackwardInstance<T, kAdd>>& backward() {
  static const auto p = backward_problem<T, kAdd>();
  return p;
}

// ---- Inference -----------------------------------------------------------------------------------

template <class T>
tut::Problem<InferenceInstance<T>> inference_problem() {
  using Inst = InferenceInstance<T>;
  tut::Problem<Inst> p;
  const std::string dt = tut::dtype_name<T>();
  p.name = "bn_relu_inference_" + dt;
  p.description = "inference BN (running statistics folded into one scale and shift per channel), then ReLU, on " + dt;
  p.dtype = dt;
  bn_cases(p, "NCHW", false);
  p.floor = [](const tut::Case& c) {
    const auto n = static_cast<std::uint64_t>(c.numel()), C = static_cast<std::uint64_t>(c.shape.at(1));
    return tut::Floor{n * 2 * sizeof(T) + 16 * C, n * 2, {}};
  };
  const auto version = [](std::string name, std::string summary, void (*launch)(cudaStream_t, const InferArgs<T>&, void*),
                          ScratchOf scratch, std::vector<const void*> kernels) {
    tut::Version<Inst> v;
    v.name = std::move(name);
    v.summary = std::move(summary);
    v.launch = [launch](Inst& i, tut::Workspace& w, cudaStream_t s) { launch(s, i.args(), w.data()); };
    v.scratch_bytes = [scratch](const Inst& i) { return scratch(i.shape()); };
    v.kernels = std::move(kernels);
    return v;
  };
  p.versions.push_back(version("v0_per_element", "scale and shift recomputed for every element (sqrt, divide)",
                               &infer_v0_per_element<T>, &infer_v1_scratch_bytes<T>,
                               {TUT_KERNEL(infer_v0_per_element_kernel<T>)}));
  p.versions.push_back(version("v1_folded", "scale and shift once per channel, then 16-byte packs",
                               &infer_v1_folded<T>, &infer_v1_scratch_bytes<T>, infer_v1_kernels<T>()));
  return p;
}

template <class T>
const tut::Problem<InferenceInstance<T>>& inference() {
  static const auto p = inference_problem<T>();
  return p;
}

inline const auto& bn_relu_f32() { return forward<float, false>(); }
inline const auto& bn_add_relu_f32() { return forward<float, true>(); }
inline const auto& bn_relu_f16() { return forward<__half, false>(); }
inline const auto& bn_add_relu_f16() { return forward<__half, true>(); }
inline const auto& bn_relu_backward_f32() { return backward<float, false>(); }
inline const auto& bn_add_relu_backward_f32() { return backward<float, true>(); }
inline const auto& bn_relu_backward_f16() { return backward<__half, false>(); }
inline const auto& bn_add_relu_backward_f16() { return backward<__half, true>(); }
inline const auto& bn_relu_inference_f32() { return inference<float>(); }

}  // namespace ch05
