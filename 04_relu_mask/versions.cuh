// Chapter 04's problems and their ladders, listed once. The benchmark, the GPU tests, the exercise
// grader, the profiler and the sweep iterate these lists; a new version is one new entry.
//
//   relu_mask_f32, relu_mask_f16          forward: y = relu(x) and the mask
//   add_relu_mask_f32, add_relu_mask_f16  forward: y = relu(x + r) and the mask
//   relu_backward_f32, relu_backward_f16  backward: dx = dy where the forward kept x, else 0
//
// Every problem's floor is its bitmask strategy's bytes: each input read once, y (or dx) written
// once, and the mask at 4 bytes per 32 elements. Versions that move more (v0's byte mask and second
// read of x, the backward that reads y) show it as a lower fraction of copy.
#pragma once

#include "instances.cuh"
#include "kernels/bwd_v0_from_y.cuh"
#include "kernels/bwd_v1_from_byte_mask.cuh"
#include "kernels/bwd_v2_from_bitmask.cuh"
#include "kernels/bwd_v3_from_bitmask_vectorized.cuh"
#include "kernels/fwd_v0_two_kernels.cuh"
#include "kernels/fwd_v1_thread_per_byte.cuh"
#include "kernels/fwd_v2_warp_ballot.cuh"
#include "kernels/fwd_v3_ballot_vectorized.cuh"
#include "tut/elementwise_problem.cuh"

#if TUT_EXERCISES
#include "exercises/add_relu_ballot.cuh"
#endif

#include <cuda_fp16.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ch04 {

template <class T, bool kAdd>
using ForwardLaunch = void (*)(cudaStream_t, const ForwardArgs<T>&);
template <class T>
using BackwardLaunch = void (*)(cudaStream_t, const BackwardArgs<T>&);

// Which mask a forward version writes, beside y: the bitmask or v0's byte mask.
enum class MaskFormat { bits, bytes };

template <class T, bool kAdd>
tut::Version<ForwardInstance<T, kAdd>> forward_version(std::string name, std::string summary, MaskFormat format,
                                                       ForwardLaunch<T, kAdd> launch, std::vector<const void*> kernels,
                                                       tut::Kind kind = tut::Kind::own) {
  tut::Version<ForwardInstance<T, kAdd>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](ForwardInstance<T, kAdd>& inst, tut::Workspace&, cudaStream_t s) { launch(s, inst.args()); };
  v.writes = {"y", format == MaskFormat::bits ? "mask" : "byte_mask"};
  v.kernels = std::move(kernels);
  v.kind = kind;
  return v;
}

// A backward version reads dy and `record`: y, byte_mask or mask.
template <class T>
tut::Version<BackwardInstance<T>> backward_version(std::string name, std::string summary, std::string record,
                                                   BackwardLaunch<T> launch, std::vector<const void*> kernels) {
  tut::Version<BackwardInstance<T>> v;
  v.name = std::move(name);
  v.summary = std::move(summary);
  v.launch = [launch](BackwardInstance<T>& inst, tut::Workspace&, cudaStream_t s) { launch(s, inst.args()); };
  v.reads = {"dy", std::move(record)};
  v.kernels = std::move(kernels);
  return v;
}

// Bytes of the bitmask strategy: `streams` arrays of n elements (inputs and y or dx) and the mask.
template <class T>
tut::Floor bitmask_floor(std::int64_t n, int streams, int flops_per_element) {
  const auto un = static_cast<std::uint64_t>(n);
  return {un * streams * sizeof(T) + static_cast<std::uint64_t>(tut::bitmask::word_count(n)) * sizeof(Word),
          un * static_cast<std::uint64_t>(flops_per_element), {}};
}

template <class Inst>
void flat_problem(tut::Problem<Inst>& p) {
  p.case_for = [](const std::vector<std::int64_t>& shape, const tut::Params& params) {
    return tut::elementwise_case(shape, params);
  };
  tut::flat_cases(p);
  p.make = [](const tut::Case& c, const tut::InstanceOptions& o) { return std::make_unique<Inst>(c, o); };
}

template <class T, bool kAdd>
tut::Problem<ForwardInstance<T, kAdd>> forward_problem() {
  using Inst = ForwardInstance<T, kAdd>;
  tut::Problem<Inst> p;
  const std::string dt = tut::dtype_name<T>();
  p.name = std::string(kAdd ? "add_relu_mask_" : "relu_mask_") + dt;
  p.description = kAdd ? "y = relu(x + r) and its mask (bit set where x + r > 0 or NaN) on " + dt
                       : "y = relu(x) and its mask (bit set where x > 0 or NaN) on " + dt;
  p.dtype = dt;
  flat_problem(p);
  // x (and r) read, y written, plus the words; a compare and a select (and the add) per element.
  p.floor = [](const tut::Case& c) { return bitmask_floor<T>(c.numel(), kAdd ? 3 : 2, kAdd ? 2 : 1); };
  const auto v2_kernel = TUT_KERNEL(fwd_v2_warp_ballot_kernel<256, T, kAdd>);
  p.versions = {
      forward_version<T, kAdd>("v0_two_kernels", "relu kernel + byte-mask kernel (x read twice, 1 B of mask per element)",
                               MaskFormat::bytes, &fwd_v0_two_kernels<T, kAdd>, fwd_v0_kernels<T, kAdd>()),
      forward_version<T, kAdd>("v1_thread_per_byte", "fused; a thread per mask byte reads 8 consecutive elements",
                               MaskFormat::bits, &fwd_v1_thread_per_byte<T, kAdd>,
                               {TUT_KERNEL(fwd_v1_thread_per_byte_kernel<T, kAdd>)}),
      forward_version<T, kAdd>("v2_warp_ballot", "an element per lane, __ballot_sync of the whole warp, lane 0 stores",
                               MaskFormat::bits, &fwd_v2_warp_ballot<T, kAdd>, {v2_kernel}),
      forward_version<T, kAdd>("v3_ballot_vectorized", "16-byte packs, one ballot per pack position, coalesced words",
                               MaskFormat::bits, &fwd_v3_ballot_vectorized<T, kAdd>,
                               {TUT_KERNEL(fwd_v3_ballot_vectorized_kernel<256, T, kAdd>)}),
  };
#if TUT_EXERCISES
  if constexpr (kAdd && std::is_same_v<T, float>)
    p.versions.push_back(forward_version<float, true>("ex_add_relu_ballot", "exercise: your ballot AddReLU forward",
                                                      MaskFormat::bits, &exercise::add_relu_ballot,
                                                      {TUT_KERNEL(exercise::add_relu_ballot_kernel)}, tut::Kind::exercise));
#endif
  return p;
}

// Each forward problem, built once.
template <class T, bool kAdd>
const tut::Problem<ForwardInstance<T, kAdd>>& forward() {
  static const auto p = forward_problem<T, kAdd>();
  return p;
}

template <class T>
tut::Problem<BackwardInstance<T>> backward_problem() {
  using Inst = BackwardInstance<T>;
  tut::Problem<Inst> p;
  const std::string dt = tut::dtype_name<T>();
  p.name = "relu_backward_" + dt;
  p.description = "dx = dy where the forward kept x, else 0, on " + dt + " (floor: dy and the bitmask read)";
  p.dtype = dt;
  flat_problem(p);
  p.floor = [](const tut::Case& c) { return bitmask_floor<T>(c.numel(), 2, 1); };
  // The record comes from ReLU's forward: y and the byte mask from v0, the bitmask from v1.
  p.chain.forward = []() -> const tut::ProblemEntry& {
    static const tut::ProblemEntry e = tut::erase(forward<T, false>());
    return e;
  };
  p.chain.links = {{"y", "y"}, {"byte_mask", "byte_mask"}, {"mask", "mask"}};
  p.versions = {
      backward_version<T>("v0_from_y", "reads dy and y (threshold_backward): 3 streams of n elements", "y",
                          &bwd_v0_from_y<T>, {bwd_v0_kernel<T>()}),
      backward_version<T>("v1_from_byte_mask", "reads dy and fwd v0's byte mask", "byte_mask", &bwd_v1_from_byte_mask<T>,
                          {bwd_v1_kernel<T>()}),
      backward_version<T>("v2_from_bitmask", "reads dy and the words; an element per thread, waves grid", "mask",
                          &bwd_v2_from_bitmask<T>, {TUT_KERNEL(bwd_v2_from_bitmask_kernel<256, T>)}),
      backward_version<T>("v3_from_bitmask_vectorized", "16-byte packs of dy, kPer bits of a word, a tile per block",
                          "mask", &bwd_v3_from_bitmask_vectorized<T>,
                          {TUT_KERNEL(bwd_v3_from_bitmask_vectorized_kernel<256, T>)}),
  };
  return p;
}

template <class T>
const tut::Problem<BackwardInstance<T>>& backward() {
  static const auto p = backward_problem<T>();
  return p;
}

inline const auto& relu_mask_f32() { return forward<float, false>(); }
inline const auto& relu_mask_f16() { return forward<__half, false>(); }
inline const auto& add_relu_mask_f32() { return forward<float, true>(); }
inline const auto& add_relu_mask_f16() { return forward<__half, true>(); }
inline const auto& relu_backward_f32() { return backward<float>(); }
inline const auto& relu_backward_f16() { return backward<__half>(); }

}  // namespace ch04
