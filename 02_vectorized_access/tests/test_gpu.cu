// Every registered version against the CPU reference: the vector kernels on aligned data, the
// launchers that claim any alignment with every operand moved 0-7 elements off alignment.
#include <doctest/doctest.h>

#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

namespace {

// Vectorized, aligned, but the n % 8 tail is forgotten: right only when n is a multiple of 8.
__global__ void fma_drops_tail_kernel(const ch02::Pack* a, const ch02::Pack* x, const ch02::Pack* y, ch02::Pack* z,
                                      std::int64_t n_pack) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n_pack) return;
  const ch02::Pack pa = a[i], px = x[i], py = y[i];
  ch02::Pack pz;
  for (int j = 0; j < ch02::kPack; ++j) pz.elem[j] = __hfma(pa.elem[j], px.elem[j], py.elem[j]);
  z[i] = pz;
}
void fma_drops_tail(cudaStream_t s, std::int64_t n, __half* z, const __half* a, const __half* x, const __half* y) {
  const std::int64_t n_pack = n / ch02::kPack;
  if (n_pack == 0) return;
  fma_drops_tail_kernel<<<static_cast<unsigned>((n_pack + 255) / 256), 256, 0, s>>>(
      reinterpret_cast<const ch02::Pack*>(a), reinterpret_cast<const ch02::Pack*>(x),
      reinterpret_cast<const ch02::Pack*>(y), reinterpret_cast<ch02::Pack*>(z), n_pack);
  TUT_CHECK_LAUNCH("fma_drops_tail_kernel");
}

tut::CheckResult grade_fma(ch02::FmaInstance::Launch launch, std::int64_t n) {
  const auto v = tut::elementwise_version<__half, __half, __half, __half>("wrong", "", launch, {});
  return tut::grade(ch02::fma_problem(), v, tut::flat_case(n));
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("copy_i32: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_sizes(ch02::copy_problem());
  }
  TEST_CASE("mul_f16: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_sizes(ch02::mul_problem());
  }
  TEST_CASE("fma_f16: every version matches the reference at awkward sizes" * tut::needs_gpu()) {
    tut::check_sizes(ch02::fma_problem());
  }
  TEST_CASE("copy_i32: the any-alignment versions with every operand moved 0-7 elements" * tut::needs_gpu()) {
    tut::check_offsets(ch02::copy_problem());
  }
  TEST_CASE("mul_f16: the any-alignment versions with every operand moved 0-7 elements" * tut::needs_gpu()) {
    tut::check_offsets(ch02::mul_problem());
  }
  TEST_CASE("fma_f16: the any-alignment versions with every operand moved 0-7 elements" * tut::needs_gpu()) {
    tut::check_offsets(ch02::fma_problem());
  }
  TEST_CASE("the grader rejects a vectorized a*x + y that drops the tail" * tut::needs_gpu()) {
    CHECK(grade_fma(fma_drops_tail, 4096).ok());
    const auto r = grade_fma(fma_drops_tail, 4099);
    CHECK_FALSE(r.ok());
    CHECK(r["z"].mismatches == 3);
    CHECK_FALSE(grade_fma(fma_drops_tail, 7).ok());
  }
}

// More than 2^31 elements (32-bit indices would wrap): the copy and the multiply, every version.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;
  TEST_CASE("copy_i32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_all_at(ch02::copy_problem(), tut::flat_case(kHuge));
  }
  TEST_CASE("mul_f16: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{24} << 30)) {
    tut::check_all_at(ch02::mul_problem(), tut::flat_case(kHuge));
  }
}
