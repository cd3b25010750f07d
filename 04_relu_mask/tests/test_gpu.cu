// Every registered version against the CPU reference on the GPU: at the awkward sizes, with every
// operand moved off its alignment, the backward on the masks each forward version wrote, the
// grader against known-wrong kernels, and past 2^31 elements.
#include <doctest/doctest.h>

#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <cstdlib>
#include <string>
#include <vector>

namespace {

// The sizes the issue asks for: empty, single, around one and two warps' words, an odd thousand,
// 2^20 + 1, and 2^28 + 5 (left out under compute-sanitizer, where every access is instrumented).
std::vector<std::int64_t> sizes() {
  std::vector<std::int64_t> s = {0, 1, 31, 32, 33, 63, 64, 65, 1000, (1 << 20) + 1};
  if (!tut::under_sanitizer()) s.push_back((std::int64_t{1} << 28) + 5);
  return s;
}

// Each forward version with its operands moved: inputs x, r and outputs y, mask, byte_mask, each at
// its own offset (the mask by whole words: it is indexed by element, so its alignment never
// changes which bits go where).
template <class Inst>
void check_forward_offsets(const tut::Problem<Inst>& p) {
  for (const auto& v : p.versions) {
    for (std::int64_t n : {33, 1000, 4099}) {
      for (int off = 0; off < 8; ++off) {
        for (bool apart : {false, true}) {
          const std::vector<int> in = {off, apart ? (off + 5) % 8 : off};
          const std::vector<int> out = {apart ? (off + 3) % 8 : off, apart ? (off + 1) % 8 : off,
                                        apart ? (off + 6) % 8 : off};
          const auto r = tut::grade(p, v, tut::flat_case(n), tut::test_options(p.name, n, in, out));
          CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " n=", n, " x+", in[0], " r+", in[1], " y+", out[0], " mask+",
                        out[1], " bytes+", out[2], ": ", r.summary());
        }
      }
    }
  }
}

// Each backward version with dy, y, byte_mask, mask and dx each at its own offset.
template <class Inst>
void check_backward_offsets(const tut::Problem<Inst>& p) {
  for (const auto& v : p.versions) {
    for (std::int64_t n : {33, 1000, 4099}) {
      for (int off = 0; off < 8; ++off) {
        for (bool apart : {false, true}) {
          const std::vector<int> in = {off, apart ? (off + 5) % 8 : off, apart ? (off + 2) % 8 : off,
                                       apart ? (off + 7) % 8 : off};
          const std::vector<int> out = {apart ? (off + 3) % 8 : off};
          const auto r = tut::grade(p, v, tut::flat_case(n), tut::test_options(p.name, n, in, out));
          CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " n=", n, " dy+", in[0], " y+", in[1], " bytes+", in[2],
                        " mask+", in[3], " dx+", out[0], ": ", r.summary());
        }
      }
    }
  }
}

// Each forward version of `fwd`, then each backward version of `bwd` that reads what it wrote (y,
// and its byte mask or its bitmask), on the same inputs; dx against the reference.
template <class T, bool kAdd>
void check_chain(const tut::Problem<ch04::ForwardInstance<T, kAdd>>& fwd, const tut::Problem<ch04::BackwardInstance<T>>& bwd,
                 std::int64_t n) {
  const tut::InstanceOptions opt = tut::test_options(fwd.name + "->backward", n);
  for (const auto& fv : fwd.versions) {
    if (fv.kind == tut::Kind::exercise) continue;  // graded on its own
    const auto f = fwd.make(tut::flat_case(n), opt);
    const tut::CheckResult fr = tut::run_once(fv, *f);
    REQUIRE_MESSAGE(fr.ok(), fwd.name, " ", fv.name, " n=", n, ": ", fr.summary());
    for (const auto& bv : bwd.versions) {
      const bool reads_bytes = bv.name == "v1_from_byte_mask", reads_y = bv.name == "v0_from_y";
      if (!reads_y && reads_bytes != (f->format() == ch04::MaskFormat::bytes)) continue;
      ch04::BackwardInstance<T> b(n, opt, kAdd);
      TUT_CUDA(cudaMemcpy(b.record_y(), f->y(), static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice));
      if (f->format() == ch04::MaskFormat::bytes)
        TUT_CUDA(cudaMemcpy(b.record_byte_mask(), f->byte_mask(), static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice));
      else
        TUT_CUDA(cudaMemcpy(b.record_mask(), f->mask(),
                            static_cast<std::size_t>(tut::bitmask::word_count(n)) * sizeof(ch04::Word),
                            cudaMemcpyDeviceToDevice));
      const tut::CheckResult br = tut::run_once(bv, b);
      CHECK_MESSAGE(br.ok(), fwd.name, " ", fv.name, " -> ", bwd.name, " ", bv.name, " n=", n, ": ", br.summary());
    }
  }
}

tut::CheckResult grade_forward(ch04::ForwardLaunch<float, false> launch, std::int64_t n) {
  const auto v = ch04::forward_version<float, false>("wrong", "", ch04::MaskFormat::bits, launch, {});
  return tut::grade(ch04::relu_mask_f32(), v, tut::flat_case(n), tut::test_options("relu_mask_f32", n));
}
tut::CheckResult grade_backward(ch04::BackwardLaunch<float> launch, std::int64_t n) {
  const auto v = ch04::backward_version<float>("wrong", "", launch, {});
  return tut::grade(ch04::relu_backward_f32(), v, tut::flat_case(n), tut::test_options("relu_backward_f32", n));
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("relu_mask_f32: every version matches the reference, y and mask bit for bit" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_mask_f32(), sizes());
  }
  TEST_CASE("relu_mask_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_mask_f16(), sizes());
  }
  TEST_CASE("add_relu_mask_f32: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::add_relu_mask_f32(), sizes());
  }
  TEST_CASE("add_relu_mask_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::add_relu_mask_f16(), sizes());
  }
  TEST_CASE("relu_backward_f32: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_backward_f32(), sizes());
  }
  TEST_CASE("relu_backward_f16: every version matches the reference" * tut::needs_gpu()) {
    tut::check_sizes(ch04::relu_backward_f16(), sizes());
  }

  TEST_CASE("forward versions stay correct with every operand moved 0-7 elements" * tut::needs_gpu()) {
    check_forward_offsets(ch04::relu_mask_f32());
    check_forward_offsets(ch04::relu_mask_f16());
    check_forward_offsets(ch04::add_relu_mask_f32());
    check_forward_offsets(ch04::add_relu_mask_f16());
  }

  TEST_CASE("backward versions stay correct with every operand moved 0-7 elements" * tut::needs_gpu()) {
    check_backward_offsets(ch04::relu_backward_f32());
    check_backward_offsets(ch04::relu_backward_f16());
  }

  TEST_CASE("the backward on the masks each forward version wrote" * tut::needs_gpu()) {
    for (std::int64_t n : {1, 33, 1000, (1 << 20) + 1}) {
      check_chain(ch04::relu_mask_f32(), ch04::relu_backward_f32(), n);
      check_chain(ch04::relu_mask_f16(), ch04::relu_backward_f16(), n);
      check_chain(ch04::add_relu_mask_f32(), ch04::relu_backward_f32(), n);
      check_chain(ch04::add_relu_mask_f16(), ch04::relu_backward_f16(), n);
    }
  }

  TEST_CASE("the grader rejects known-wrong solutions" * tut::needs_gpu()) {
    // The source's __activemask() ballot, in blocks that are not whole warps: the words are wrong.
    const auto am = grade_forward(ch04::wrong::activemask_ballot_block48, 1000);
    CHECK_FALSE(am.ok());
    CHECK(am["y"].ok());
    CHECK_FALSE(am["mask"].ok());
    // Garbage padding bits: right at n = 1024, wrong in exactly the last word at n = 1000.
    CHECK(grade_forward(ch04::wrong::padding_bits_set, 1024).ok());
    const auto pad = grade_forward(ch04::wrong::padding_bits_set, 1000);
    CHECK_FALSE(pad.ok());
    CHECK(pad["y"].ok());
    CHECK(pad["mask"].mismatches == 1);
    CHECK(pad.summary().find("[31]") != std::string::npos);
    // The source's x > 0: the inputs hold NaN and -0, so y and the mask both differ.
    const auto src = grade_forward(ch04::wrong::source_predicate, 4099);
    CHECK_FALSE(src["y"].ok());
    CHECK_FALSE(src["mask"].ok());
    // Whole warps only: right at multiples of 32, wrong at 33 and 1000.
    CHECK(grade_forward(ch04::wrong::drops_partial_warp, 1024).ok());
    CHECK_FALSE(grade_forward(ch04::wrong::drops_partial_warp, 33).ok());
    CHECK_FALSE(grade_forward(ch04::wrong::drops_partial_warp, 1000).ok());
    // The bits in the wrong order.
    CHECK_FALSE(grade_backward(ch04::wrong::reads_bits_msb_first, 1000).ok());
  }

  TEST_CASE("a forward version that declares the byte mask is checked on it, not on the words" * tut::needs_gpu()) {
    // v0 leaves the word array poisoned; its check must pass, and must fail if it wrote nothing.
    const auto& v0 = ch04::relu_mask_f32().versions.at(0);
    REQUIRE(v0.name == "v0_two_kernels");
    const auto r = tut::grade(ch04::relu_mask_f32(), v0, tut::flat_case(1000), tut::test_options("relu_mask_f32", 1000));
    CHECK(r.ok());
    CHECK(r.outputs.size() == 2);
    CHECK(r["byte_mask"].checked == 1000);
    const auto nothing = ch04::forward_version<float, false>(
        "writes_nothing", "", ch04::MaskFormat::bytes, [](cudaStream_t, const ch04::ForwardArgs<float>&) {}, {});
    CHECK_FALSE(tut::grade(ch04::relu_mask_f32(), nothing, tut::flat_case(1000), tut::test_options("relu_mask_f32", 1000))
                    ["byte_mask"].ok());
  }
}

// More than 2^31 elements: 32-bit indexing would wrap here, and 2^31 + 9 leaves a partial last
// word. Run with `meson test -C build --suite large`. Forward versions are compared in two groups
// (byte mask; bitmask) so each later version can be compared with the first one's bytes.
TEST_SUITE("large") {
  const std::int64_t kHuge = (std::int64_t{1} << 31) + 9;

  TEST_CASE("relu_mask_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{40} << 30)) {
    auto bytes = ch04::relu_mask_f32(), bits = ch04::relu_mask_f32();
    bytes.versions.erase(bytes.versions.begin() + 1, bytes.versions.end());
    bits.versions.erase(bits.versions.begin());
    tut::check_all_at(bytes, tut::flat_case(kHuge));
    tut::check_all_at(bits, tut::flat_case(kHuge));
  }

  TEST_CASE("relu_backward_f32: every version past 2^31 elements" * tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(ch04::relu_backward_f32(), tut::flat_case(kHuge));
  }
}
