// Every registered version against the double-precision reference on the GPU: the shapes the
// lesson promises in both layouts, x = 1000 + noise, every operand moved off its alignment, every
// backward on what every forward saved, the running statistics restored between launches, the
// grader against known-wrong passes, and past 2^31 elements (the `large` suite).
//
// Under compute-sanitizer (TUT_SANITIZER set) the shapes above 10^6 elements are left out.
#include <doctest/doctest.h>

#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {
using namespace ch05;

using Dims = std::vector<std::int64_t>;

template <class Inst>
tut::Case bn_case(const tut::Problem<Inst>& p, const Dims& dims, const char* layout, double shift = 0) {
  return tut::make_case(p.name, p.params, p.case_for, dims, {{"layout", layout}, {"shift", std::to_string(shift)}});
}

// The smallest valid shapes, C = 3, 7 and 33, H * W odd (7x7, 13x17, 17x19), C = 2048 with one
// value per image, and runs of whole packs (HW % 8 == 0); then 16x32x112x112 (the source's shape)
// and, with `big`, 64x64x112x112. Both layouts.
template <class Inst>
std::vector<tut::Case> shapes(const tut::Problem<Inst>& p, bool big) {
  std::vector<Dims> dims = {{1, 1, 1, 2}, {2, 1, 1, 1},    {5, 3, 7, 7},    {3, 7, 13, 17},
                            {2, 33, 13, 17}, {2, 2048, 1, 1}, {4, 33, 17, 19}, {3, 8, 4, 6}};
  if (!tut::under_sanitizer()) {
    dims.push_back({16, 32, 112, 112});
    if (big) dims.push_back({64, 64, 112, 112});
  }
  std::vector<tut::Case> out;
  for (const char* layout : {"NCHW", "NHWC"})
    for (const auto& d : dims) out.push_back(bn_case(p, d, layout));
  return out;
}

template <class Inst>
std::vector<tut::Case> small_shapes(const tut::Problem<Inst>& p) {
  std::vector<tut::Case> out;
  for (const char* layout : {"NCHW", "NHWC"})
    for (const Dims& d : {Dims{1, 1, 1, 2}, Dims{3, 7, 13, 17}, Dims{2, 33, 5, 5}, Dims{2, 8, 4, 4}})
      out.push_back(bn_case(p, d, layout));
  return out;
}

// Forward versions of ours times backward versions that read the forward's saved state: what
// check_chains grades on each case.
template <class Bwd, class Fwd>
int expected_pairs(const tut::Problem<Bwd>& bwd, const tut::Problem<Fwd>& fwd) {
  int own = 0, readers = 0;
  for (const auto& v : fwd.versions) own += v.kind == tut::Kind::own;
  for (const auto& v : bwd.versions)
    readers += std::find(v.reads.begin(), v.reads.end(), "saved_mean") != v.reads.end();
  return own * readers;
}

// The problem with its own versions only.
template <class Inst>
tut::Problem<Inst> own_only(const tut::Problem<Inst>& p) {
  tut::Problem<Inst> q = p;
  q.versions.clear();
  for (const auto& v : p.versions)
    if (v.kind == tut::Kind::own) q.versions.push_back(v);
  return q;
}

// The problem with the named versions only, in its own order; each name must be one of them.
template <class Inst>
tut::Problem<Inst> only_these(const tut::Problem<Inst>& p, const std::vector<std::string>& names) {
  tut::Problem<Inst> q = p;
  q.versions.clear();
  for (const auto& v : p.versions)
    if (std::find(names.begin(), names.end(), v.name) != names.end()) q.versions.push_back(v);
  REQUIRE(q.versions.size() == names.size());
  return q;
}
template <class Inst>
tut::Problem<Inst> only(const tut::Problem<Inst>& p, const std::string& name) {
  return only_these(p, {name});
}

// shapes() plus a rung's own cuts in both layouts, and (outside the sanitizers, which would take
// too long) the two suite shapes the newer rungs were made for.
template <class Inst>
std::vector<tut::Case> shapes_plus(const tut::Problem<Inst>& p, std::vector<Dims> dims) {
  auto out = shapes(p, false);
  if (!tut::under_sanitizer()) {
    dims.push_back({64, 1024, 7, 7});
    dims.push_back({8, 3, 224, 224});
  }
  for (const char* layout : {"NCHW", "NHWC"})
    for (const auto& d : dims) out.push_back(bn_case(p, d, layout));
  return out;
}

// v8's cuts beyond shapes(): whole mask bytes with C % 32 != 0 (C = 24), packs without whole bytes
// (C = 12), rows past what the registers hold, read again (2x8x100x100 NHWC, 2x2x200x200 NCHW),
// and the shapes it was made for (64x1024x7x7; 8x3x224x224, far past the registers).
template <class Inst>
std::vector<tut::Case> v8_shapes(const tut::Problem<Inst>& p) {
  return shapes_plus(p, {{4, 24, 5, 5}, {4, 12, 9, 9}, {2, 8, 100, 100}, {2, 2, 200, 200}});
}

// One rung alone: on its cases, and on the small shapes with every operand moved.
template <class Inst>
void check_rung(const tut::Problem<Inst>& p, const char* name, const std::vector<tut::Case>& cases) {
  const auto q = only(p, name);
  tut::check_cases(q, cases);
  tut::check_offsets(q, small_shapes(p));
}

// One rung on the four forward problems (float and half, with and without the add), on the cases
// `shapes(p)` gives for each.
template <class Shapes>
void check_forward_rung(const char* name, Shapes shapes) {
  const auto check = [&](const auto& p) { check_rung(p, name, shapes(p)); };
  check(bn_relu_f32());
  check(bn_add_relu_f32());
  check(bn_relu_f16());
  check(bn_add_relu_f16());
}

// One rung on the four backward problems, as check_forward_rung.
template <class Shapes>
void check_backward_rung(const char* name, Shapes shapes) {
  const auto check = [&](const auto& p) { check_rung(p, name, shapes(p)); };
  check(bn_relu_backward_f32());
  check(bn_add_relu_backward_f32());
  check(bn_relu_backward_f16());
  check(bn_add_relu_backward_f16());
}

template <class Inst>
void check_v8(const tut::Problem<Inst>& p, const char* name = "v8_cluster") {
  check_rung(p, name, v8_shapes(p));
}

// v9's walks beyond shapes(): the flat walk with Q a multiple of 3 (C = 48) and at its cap of
// partials (C = 64, 8192 / 64 blocks), rows with packs but not whole bytes (C = 68, 100), rows of
// single values (C = 65), NCHW runs of 49 and 40000; and the shapes it was made for.
template <class Inst>
std::vector<tut::Case> v9_shapes(const tut::Problem<Inst>& p) {
  return shapes_plus(p, {{4, 48, 5, 5}, {2, 64, 30, 30}, {3, 68, 5, 7}, {2, 100, 3, 3}, {2, 65, 3, 5},
                         {2, 8, 100, 100}, {2, 2, 200, 200}});
}

template <class Inst>
void check_v9(const tut::Problem<Inst>& p, const char* name = "v9_two_launches") {
  check_rung(p, name, v9_shapes(p));
}

// v12's cuts beyond shapes(): C = 64, its largest, and C = 65, past it (v5 runs); one element past
// the last 16-byte line (1x5x3x3 float: the copy engine takes 176 bytes, a thread the last 4);
// fewer units than pieces (2x16x3x1); a unit of lcm(48, 32) = 96 elements; C = 1 with 1024 row
// groups; and the shapes it was made for.
template <class Inst>
std::vector<tut::Case> v12_shapes(const tut::Problem<Inst>& p) {
  return shapes_plus(p, {{4, 64, 9, 11}, {3, 65, 5, 5}, {1, 5, 3, 3}, {2, 16, 3, 1}, {6, 48, 33, 35}, {2, 1, 300, 301}});
}

// v15's cuts beyond shapes(): C = 512, its largest, and 513, past it (v14 or v5 runs); rows of 8
// values of C = 100 (rows C a multiple of 32 every 8 rows); C = 1 in 15 blocks of 128 rows; at
// C = 33, the most rows 16 blocks hold (16 x 224) and one more (v14 or v5 runs); and, outside the
// sanitizers, the suite's shapes past it.
template <class Inst>
std::vector<tut::Case> v15_shapes(const tut::Problem<Inst>& p) {
  return shapes_plus(p, {{4, 512, 2, 2}, {2, 513, 1, 2}, {3, 100, 5, 7}, {2, 1, 30, 31}, {8, 33, 16, 28}, {1, 33, 3585, 1}});
}

// v16's cuts beyond shapes(): M = kChanValues (4096), its largest, in runs of 1024, of
// one value (4096 x 3 x 1 x 1: every mask word shared by three channels' blocks) and of 2048; M =
// 4097, past it (v15's path runs); M = 1001 in runs of 143; and, outside the sanitizers, the suite's
// shapes (64x1024x7x7: runs of 49).
template <class Inst>
std::vector<tut::Case> v16_shapes(const tut::Problem<Inst>& p) {
  return shapes_plus(p, {{4, 5, 32, 32}, {4096, 3, 1, 1}, {2, 7, 1, 2048}, {1, 3, 4097, 1}, {7, 9, 11, 13}});
}

// v17's cuts beyond shapes(): fewer elements than one chunk of the pass (1x3x5x1: only the tail),
// a unit of chunks cut short, NCHW runs that packs straddle (11x13), C = 12 in NHWC (a pack's
// channels wrap mid-row every third pack); and, outside the sanitizers, the shape it was made for.
template <class Inst>
std::vector<tut::Case> v17_shapes(const tut::Problem<Inst>& p) {
  std::vector<Dims> dims = {{1, 3, 5, 1}, {3, 5, 11, 13}, {4, 12, 33, 31}, {2, 64, 30, 30}};
  if (!tut::under_sanitizer()) dims.push_back({64, 64, 112, 112});
  return shapes_plus(p, dims);
}

// Backward problem `p` with its chains' saved state from `e` (a forward problem erased; it must
// outlive every use of the result) instead of the problem's default forward.
template <class Inst>
tut::Problem<Inst> chained_to(tut::Problem<Inst> p, const tut::ProblemEntry& e) {
  p.chain.forward = [pe = &e]() -> const tut::ProblemEntry& { return *pe; };
  return p;
}

// Every backward on what one forward version, `name`, saved. Checks the count of chains graded.
template <class T, bool kAdd>
void check_chains_from(const char* name, const std::vector<tut::Case>& cases) {
  const auto& p = backward<T, kAdd>();
  const auto f = only(forward<T, kAdd>(), name);
  const tut::ProblemEntry e = tut::erase(f);  // refers to f, which outlives every use of q below
  const auto q = chained_to(p, e);
  INFO(p.name, " on ", name, "'s saved state");
  CHECK(tut::check_chains(q, cases) == expected_pairs(p, f) * static_cast<int>(cases.size()));
}

// One backward version, `name`, on what every forward version saved. Checks the count of chains
// graded.
template <class T, bool kAdd>
void check_chains_into(const char* name, const std::vector<tut::Case>& cases) {
  const auto q = only(backward<T, kAdd>(), name);
  INFO(q.name, " ", name, " on every forward's saved state");
  CHECK(tut::check_chains(q, cases) == expected_pairs(q, forward<T, kAdd>()) * static_cast<int>(cases.size()));
}

// The chains through one version that has both a forward and a backward (v15, v17): its backward on
// every forward's saved state, and every backward on what its forward saved. Checks the count of
// chains graded.
template <class T, bool kAdd>
void check_chains_through(const char* name, const std::vector<tut::Case>& cases) {
  check_chains_into<T, kAdd>(name, cases);
  check_chains_from<T, kAdd>(name, cases);
}

// Every backward version of one problem on what every forward version of its forward problem saved,
// on the small shapes and, outside the sanitizers, 16x32x56x56 in both layouts.
template <class T, bool kAdd>
void check_every_chain() {
  auto cases = small_shapes(bn_relu_backward_f32());
  if (!tut::under_sanitizer()) {
    cases.push_back(bn_case(bn_relu_backward_f32(), {16, 32, 56, 56}, "NCHW"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {16, 32, 56, 56}, "NHWC"));
  }
  const auto& p = backward<T, kAdd>();
  CHECK(tut::check_chains(p, cases) == expected_pairs(p, forward<T, kAdd>()) * static_cast<int>(cases.size()));
}

// check_chains_from and check_chains_through in the four forms: float and half, with and without
// the add.
inline void check_chains_from_all(const char* name, const std::vector<tut::Case>& cases) {
  check_chains_from<float, false>(name, cases);
  check_chains_from<float, true>(name, cases);
  check_chains_from<__half, false>(name, cases);
  check_chains_from<__half, true>(name, cases);
}
inline void check_chains_through_all(const char* name, const std::vector<tut::Case>& cases) {
  check_chains_through<float, false>(name, cases);
  check_chains_through<float, true>(name, cases);
  check_chains_through<__half, false>(name, cases);
  check_chains_through<__half, true>(name, cases);
}

// The cases of the chains through v17 and v19: the small shapes, C = 12 with an odd H * W (NHWC), and
// C = 5 with an odd H * W (NCHW).
inline std::vector<tut::Case> split_pass_chain_cases() {
  auto cases = small_shapes(bn_relu_backward_f32());
  cases.push_back(bn_case(bn_relu_backward_f32(), {4, 12, 33, 31}, "NHWC"));
  cases.push_back(bn_case(bn_relu_backward_f32(), {3, 5, 11, 13}, "NCHW"));
  return cases;
}

// x's values `v` (n of them), written to the device in x's type; returns them as x holds them
// (rounded to half where x is half).
template <class Inst>
std::vector<double> upload_x(Inst& inst, const std::vector<float>& v) {
  tut::Operand& x = inst.operand("x");
  std::vector<unsigned char> bytes(x.bytes());
  std::vector<double> held(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (x.element_bytes() == sizeof(float)) {
      std::memcpy(bytes.data() + i * sizeof(float), &v[i], sizeof(float));
      held[i] = v[i];
    } else {
      const __half h = __float2half(v[i]);
      std::memcpy(bytes.data() + i * sizeof(__half), &h, sizeof(__half));
      held[i] = __half2float(h);
    }
  }
  TUT_CUDA(cudaMemcpy(x.device(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return held;
}

// x drawn again from `seed`: uniform in [-2, 2), in x's type (inputs are not refilled before a
// launch; the reference, drawn once, does not follow).
template <class Inst>
std::vector<double> redraw_x(Inst& inst, std::uint64_t seed, float first_row = 0.0f, std::int64_t C = 0) {
  const auto n = static_cast<std::size_t>(inst.operand("x").count());
  const tut::Random rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i < static_cast<std::size_t>(C) ? first_row : static_cast<float>(rng.unit(i) * 4.0 - 2.0);
  return upload_x(inst, v);
}

// Every output and state array's bytes after one launch of trial t (outputs poisoned and state
// reset first), by name.
template <class Inst>
std::map<std::string, std::vector<unsigned char>> bytes_after(const tut::Trial& t, Inst& inst) {
  t.poison(nullptr);
  t.before(nullptr);
  t.launch(nullptr);
  TUT_CUDA(cudaDeviceSynchronize());
  std::map<std::string, std::vector<unsigned char>> out;
  for (const tut::Role role : {tut::Role::output, tut::Role::state})
    for (const auto& name : inst.names(role)) {
      const tut::Operand& op = inst.operand(name);
      auto& b = out[name];
      b.resize(op.bytes());
      TUT_CUDA(cudaMemcpy(b.data(), op.device(), b.size(), cudaMemcpyDeviceToHost));
    }
  return out;
}

// Version `name` launch after launch on one scratch, x drawn again before each launch, against
// `model` on the same instance (its own scratch, kept too) or, where model is null, against `name`
// on a new scratch each time: the same bytes in every output and state array, after the first
// launch is checked against the reference. v13 merges in v12's order, so its bits must be v12's;
// v14 must give the bits of its own first launch. A flag left up by the launch before would let a
// block merge stale statistics (the last launch's x) and the bits would differ.
template <class Inst>
void check_bits(const tut::Problem<Inst>& p, const std::vector<Dims>& dims, const char* name, const char* model) {
  // A reference into p.versions: a trial keeps a reference to its version.
  const auto named = [&](const char* n) -> const tut::Version<Inst>& {
    for (const auto& v : p.versions)
      if (v.name == n) return v;
    FAIL("no version ", n);
    return p.versions.front();
  };
  const int runs = tut::under_sanitizer() ? 2 : 8;
  for (const auto& d : dims) {
    const auto c = bn_case(p, d, "NHWC");
    const auto inst = tut::instantiate(p, c, tut::test_options(p.name, c));
    const tut::Trial tn = tut::make_trial(named(name), *inst);
    std::optional<tut::Trial> tm;
    if (model) tm = tut::make_trial(named(model), *inst);
    INFO(p.name, " ", c.name);
    CHECK(tut::checked_run(tn).ok());
    for (int k = 0; k < runs; ++k) {
      redraw_x(*inst, 1000 + static_cast<std::uint64_t>(k));
      const auto want = bytes_after(model ? *tm : tut::make_trial(named(name), *inst), *inst);
      const auto got = bytes_after(tn, *inst);
      for (const auto& out : want) {  // (not a structured binding: INFO captures the name)
        INFO(out.first, ", launch ", k);
        CHECK(got.at(out.first) == out.second);
      }
    }
  }
}

// Each library version's verdict on case c, as a message.
template <class Inst>
void report_peers(const tut::Problem<Inst>& p, const tut::Case& c) {
  for (const auto& v : p.versions) {
    if (v.kind != tut::Kind::peer) continue;
    try {
      MESSAGE(p.name, " ", v.name, " ", c.name, ": ", tut::grade(p, v, c).summary());
    } catch (const tut::Unsupported& e) {
      MESSAGE(p.name, " ", v.name, " ", c.name, ": unsupported: ", std::string(e.what()));
    }
  }
}

tut::CheckResult grade_forward(void (*launch)(cudaStream_t, const FwdArgs<float>&, void*), const tut::Case& c) {
  const auto v = fwd_version<float, false>("wrong", "", launch, &fwd_v2_scratch_bytes<float>, {});
  return tut::grade(bn_relu_f32(), v, c);
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("bn_relu_f32: every version on every shape, both layouts" * tut::needs_gpu()) {
    tut::check_cases(bn_relu_f32(), shapes(bn_relu_f32(), true));
  }
  TEST_CASE("bn_relu_backward_f32: every version on every shape, both layouts" * tut::needs_gpu()) {
    tut::check_cases(bn_relu_backward_f32(), shapes(bn_relu_backward_f32(), true));
  }
  TEST_CASE("bn_add_relu_f32 and its backward: every version, both layouts" * tut::needs_gpu()) {
    tut::check_cases(bn_add_relu_f32(), shapes(bn_add_relu_f32(), false));
    tut::check_cases(bn_add_relu_backward_f32(), shapes(bn_add_relu_backward_f32(), false));
  }
  TEST_CASE("half: forward and backward, with and without the add, both layouts" * tut::needs_gpu()) {
    tut::check_cases(bn_relu_f16(), shapes(bn_relu_f16(), false));
    tut::check_cases(bn_relu_backward_f16(), shapes(bn_relu_backward_f16(), false));
    tut::check_cases(bn_add_relu_f16(), shapes(bn_add_relu_f16(), false));
    tut::check_cases(bn_add_relu_backward_f16(), shapes(bn_add_relu_backward_f16(), false));
  }
  TEST_CASE("inference: the folded pass, N * H * W = 1 included" * tut::needs_gpu()) {
    auto cases = shapes(bn_relu_inference_f32(), false);
    cases.push_back(bn_case(bn_relu_inference_f32(), {1, 64, 1, 1}, "NCHW"));
    tut::check_cases(bn_relu_inference_f32(), cases);
  }

  TEST_CASE("x = 1000 + noise: every float version keeps the variance (Welford, Chan, two passes)" * tut::needs_gpu()) {
    const Dims d = tut::under_sanitizer() ? Dims{3, 7, 13, 17} : Dims{16, 32, 112, 112};
    for (const char* layout : {"NCHW", "NHWC"}) {
      // Our versions must pass; the libraries' verdicts are reported, not asserted: on the H100,
      // cuDNN's fused backward put dx, dgamma and dbeta outside the tolerance here
      // (results/NVIDIA_H100_80GB_HBM3.cudnn_fused_shift1000.txt).
      tut::check_cases(own_only(bn_relu_f32()), {bn_case(bn_relu_f32(), d, layout, 1000.0)});
      tut::check_cases(own_only(bn_relu_backward_f32()), {bn_case(bn_relu_backward_f32(), d, layout, 1000.0)});
      report_peers(bn_relu_f32(), bn_case(bn_relu_f32(), d, layout, 1000.0));
      report_peers(bn_relu_backward_f32(), bn_case(bn_relu_backward_f32(), d, layout, 1000.0));
      // The one-pass sum of squares: right at mean 0, the variance lost at mean 1000.
      CHECK(grade_forward(&wrong::naive_statistics, bn_case(bn_relu_f32(), d, layout, 0.0)).ok());
      const auto naive = grade_forward(&wrong::naive_statistics, bn_case(bn_relu_f32(), d, layout, 1000.0));
      CHECK_FALSE(naive["saved_invstd"].ok());
      CHECK_FALSE(naive["running_var"].ok());
    }
  }

  TEST_CASE("every version stays correct with every operand moved 0-7 elements" * tut::needs_gpu()) {
    tut::check_offsets(bn_relu_f32(), small_shapes(bn_relu_f32()));
    tut::check_offsets(bn_relu_backward_f32(), small_shapes(bn_relu_backward_f32()));
    tut::check_offsets(bn_add_relu_f32(), small_shapes(bn_add_relu_f32()));
    tut::check_offsets(bn_add_relu_backward_f32(), small_shapes(bn_add_relu_backward_f32()));
    tut::check_offsets(bn_relu_f16(), small_shapes(bn_relu_f16()));
    tut::check_offsets(bn_add_relu_backward_f16(), small_shapes(bn_add_relu_backward_f16()));
    tut::check_offsets(bn_relu_inference_f32(), small_shapes(bn_relu_inference_f32()));
  }

  TEST_CASE("v8_cluster: every problem, every shape, both layouts, operands moved" * tut::needs_gpu()) {
    check_v8(bn_relu_f32());
    check_v8(bn_relu_backward_f32());
    check_v8(bn_add_relu_f32());
    check_v8(bn_add_relu_backward_f32());
    check_v8(bn_relu_f16());
    check_v8(bn_relu_backward_f16());
    check_v8(bn_add_relu_f16());
    check_v8(bn_add_relu_backward_f16());
  }

  TEST_CASE("v10_cluster_narrow: every forward, v8's shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_v8(bn_relu_f32(), "v10_cluster_narrow");
    check_v8(bn_add_relu_f32(), "v10_cluster_narrow");
    check_v8(bn_relu_f16(), "v10_cluster_narrow");
    check_v8(bn_add_relu_f16(), "v10_cluster_narrow");
  }

  TEST_CASE("v9_two_launches: every forward, every shape, both layouts, operands moved" * tut::needs_gpu()) {
    check_v9(bn_relu_f32());
    check_v9(bn_add_relu_f32());
    check_v9(bn_relu_f16());
    check_v9(bn_add_relu_f16());
  }

  TEST_CASE("v11_early_loads: every forward, v9's shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_v9(bn_relu_f32(), "v11_early_loads");
    check_v9(bn_add_relu_f32(), "v11_early_loads");
    check_v9(bn_relu_f16(), "v11_early_loads");
    check_v9(bn_add_relu_f16(), "v11_early_loads");
  }

  TEST_CASE("v12_resident: every forward, its shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v12_resident", [](const auto& p) { return v12_shapes(p); });
  }

  TEST_CASE("v13_arrivals: every forward, v12's shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v13_arrivals", [](const auto& p) { return v12_shapes(p); });
  }

  TEST_CASE("v13_arrivals: v12's bits in every output, launch after launch on one scratch, x drawn again each time" *
            tut::needs_gpu()) {
    // On 132 SMs: 131 blocks at C = 32, 132 at C = 64, 132 at C = 1 (1024 row groups, the first 132
    // with one block each); fewer blocks than SMs at 2x16x3x1 (3 units).
    const std::vector<Dims> dims = {{8, 32, 28, 28}, {4, 64, 9, 11}, {2, 1, 300, 301}, {2, 16, 3, 1}};
    check_bits(bn_relu_f32(), dims, "v13_arrivals", "v12_resident");
    check_bits(bn_add_relu_f32(), dims, "v13_arrivals", "v12_resident");
    check_bits(bn_relu_f16(), dims, "v13_arrivals", "v12_resident");
    check_bits(bn_add_relu_f16(), dims, "v13_arrivals", "v12_resident");
  }

  TEST_CASE("v14_shifted_sums: every forward, v12's shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v14_shifted_sums", [](const auto& p) { return v12_shapes(p); });
  }

  TEST_CASE("v14_shifted_sums: its first launch's bits, launch after launch on one scratch, x drawn again each time" *
            tut::needs_gpu()) {
    // v13's shapes, and C = 33 (two channels a warp in the sums) and C = 3 (341 row groups).
    const std::vector<Dims> dims = {{8, 32, 28, 28}, {4, 64, 9, 11}, {2, 1, 300, 301}, {2, 16, 3, 1}, {4, 33, 17, 19}, {8, 3, 30, 30}};
    check_bits(bn_relu_f32(), dims, "v14_shifted_sums", nullptr);
    check_bits(bn_add_relu_f32(), dims, "v14_shifted_sums", nullptr);
    check_bits(bn_relu_f16(), dims, "v14_shifted_sums", nullptr);
    check_bits(bn_add_relu_f16(), dims, "v14_shifted_sums", nullptr);
  }

  TEST_CASE("v14 and v15: K* far from the mean (x's first row at 5000, the rest in [-2, 2)): the saved statistics" *
            tut::needs_gpu()) {
    // The instance's reference is drawn once, so this x is judged here: the saved mean and inverse
    // std against the double-precision statistics of the values x holds, at the instance's tolerances.
    const auto check = [](const auto& p, const char* name) {
      const auto q = only(p, name);  // the trial keeps a reference to q's version
      for (const Dims& d : {Dims{8, 32, 28, 28}, Dims{4, 33, 17, 19}, Dims{2, 1, 300, 301}}) {
        const auto c = bn_case(p, d, "NHWC");
        const auto inst = tut::instantiate(p, c, tut::test_options(p.name, c));
        const tut::Trial t = tut::make_trial(q.versions.front(), *inst);
        const std::int64_t C = d[1];
        const std::vector<double> x = redraw_x(*inst, 7, 5000.0f, C);
        const auto out = bytes_after(t, *inst);
        INFO(p.name, " ", c.name);
        for (std::int64_t ch = 0; ch < C; ++ch) {
          double sum = 0, sq = 0;
          const auto M = static_cast<std::int64_t>(x.size()) / C;
          for (std::int64_t j = 0; j < M; ++j) sum += x[static_cast<std::size_t>(j * C + ch)];
          const double mean = sum / M;
          for (std::int64_t j = 0; j < M; ++j) sq += (x[static_cast<std::size_t>(j * C + ch)] - mean) * (x[static_cast<std::size_t>(j * C + ch)] - mean);
          const double var = sq / M, inv = 1 / std::sqrt(var + 1e-5);
          float got_mean, got_inv;
          std::memcpy(&got_mean, out.at("saved_mean").data() + ch * sizeof(float), sizeof(float));
          std::memcpy(&got_inv, out.at("saved_invstd").data() + ch * sizeof(float), sizeof(float));
          INFO("channel ", ch, ": mean ", got_mean, " want ", mean, ", invstd ", got_inv, " want ", inv);
          CHECK(std::fabs(got_mean - mean) <= kMeanTol * (std::fabs(mean) + std::sqrt(var)));
          CHECK(std::fabs(got_inv - inv) <= kInvstdTol * inv);
        }
      }
    };
    for (const char* name : {"v14_shifted_sums", "v15_one_cluster"}) {
      check(bn_relu_f32(), name);
      check(bn_add_relu_f16(), name);
    }
  }

  TEST_CASE("v15_one_cluster: every forward and backward, its shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v15_one_cluster", [](const auto& p) { return v15_shapes(p); });
    check_backward_rung("v15_one_cluster", [](const auto& p) { return v15_shapes(p); });
  }

  TEST_CASE("v15_one_cluster: chains, its backward on every forward's state and every backward on its forward's" *
            tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {4, 33, 17, 19}, "NHWC"));
    check_chains_through_all("v15_one_cluster", cases);
  }

  TEST_CASE("v15_one_cluster: its first launch's bits, launch after launch, x drawn again each time" * tut::needs_gpu()) {
    // C = 33 (14 blocks), C = 3, C = 1 (15 blocks), C = 512 (one row group a block).
    const std::vector<Dims> dims = {{4, 33, 17, 19}, {8, 3, 30, 30}, {2, 1, 30, 31}, {4, 512, 2, 2}};
    check_bits(bn_relu_f32(), dims, "v15_one_cluster", nullptr);
    check_bits(bn_add_relu_f16(), dims, "v15_one_cluster", nullptr);
    check_bits(bn_relu_backward_f32(), dims, "v15_one_cluster", nullptr);
    check_bits(bn_add_relu_backward_f16(), dims, "v15_one_cluster", nullptr);
  }

  TEST_CASE("v30_pushed_sums: every forward and backward, v15's shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v30_pushed_sums", [](const auto& p) { return v15_shapes(p); });
    check_backward_rung("v30_pushed_sums", [](const auto& p) { return v15_shapes(p); });
  }

  TEST_CASE("v30_pushed_sums: chains, its backward on every forward's state and every backward on its forward's" *
            tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {4, 33, 17, 19}, "NHWC"));
    check_chains_through_all("v30_pushed_sums", cases);
  }

  TEST_CASE("v30_pushed_sums: v15's bits in every output, launch after launch, x drawn again each time" * tut::needs_gpu()) {
    // v15's shapes for its bits, and C = 512 in 16 blocks (the most dynamic shared memory v30 asks).
    const std::vector<Dims> dims = {{4, 33, 17, 19}, {8, 3, 30, 30}, {2, 1, 30, 31}, {4, 512, 2, 2}, {16, 512, 4, 4}};
    check_bits(bn_relu_f32(), dims, "v30_pushed_sums", "v15_one_cluster");
    check_bits(bn_add_relu_f16(), dims, "v30_pushed_sums", "v15_one_cluster");
    check_bits(bn_relu_backward_f32(), dims, "v30_pushed_sums", "v15_one_cluster");
    check_bits(bn_add_relu_backward_f16(), dims, "v30_pushed_sums", "v15_one_cluster");
  }

  TEST_CASE("v16_channel_blocks: every forward, its shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v16_channel_blocks", [](const auto& p) { return v16_shapes(p); });
  }

  TEST_CASE("v16_channel_blocks: chains, every backward on what its forward saved" * tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {4, 33, 17, 19}, "NCHW"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {4096, 3, 1, 1}, "NCHW"));
    check_chains_from_all("v16_channel_blocks", cases);
  }

  // v24's segments beyond v16's shapes: runs of 33 (one value past a word), 49 (segments crossing
  // word boundaries at many offsets as the runs go by) and 64 (runs on word boundaries); H W = 13
  // (v16's writer); and, outside the sanitizers, 64x1024x7x7 (shapes_plus).
  TEST_CASE("v24_mask_runs: every forward, v16's shapes and runs of 33, 49 and 64, both layouts, operands moved" *
            tut::needs_gpu()) {
    check_forward_rung("v24_mask_runs", [](const auto& p) {
      return shapes_plus(p, {{4, 5, 32, 32}, {4096, 3, 1, 1}, {2, 7, 1, 2048}, {1, 3, 4097, 1}, {7, 9, 11, 13},
                             {3, 5, 33, 1}, {5, 7, 7, 7}, {2, 9, 8, 8}, {1, 3, 13, 1}});
    });
  }

  TEST_CASE("v24_mask_runs: chains, every backward on what its forward saved" * tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {4, 33, 17, 19}, "NCHW"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {5, 7, 7, 7}, "NCHW"));
    check_chains_from_all("v24_mask_runs", cases);
  }

  // v26's groups of 64 channels beyond shapes(): 2 rows, 105 rows (a part not a whole number of
  // warps' rows), C = 128 and 192 (two and three groups), C = 2048 with 9 rows, 7161 rows (32 parts
  // in float); and, outside the sanitizers, 15600 rows (past the registers in float: v11; 8 packs a
  // thread in half), 16600 rows (v11 in both) and 64x1024x7x7 (shapes_plus). In NCHW, and with an
  // operand moved, v11 runs.
  TEST_CASE("v26_channel_groups: every forward, its groups and where it runs v11, both layouts, operands moved" *
            tut::needs_gpu()) {
    check_forward_rung("v26_channel_groups", [](const auto& p) {
      std::vector<Dims> dims = {{2, 64, 1, 1}, {3, 64, 5, 7}, {4, 128, 9, 11}, {1, 2048, 3, 3}, {2, 192, 33, 17},
                                {7, 64, 31, 33}};
      if (!tut::under_sanitizer()) {
        dims.push_back({1, 64, 120, 130});
        dims.push_back({1, 64, 2, 8300});
      }
      return shapes_plus(p, dims);
    });
    // x = 1000 + noise in float, where the groups run: the merge of the parts' means and M2 keeps the
    // variance.
    for (const Dims& d : {Dims{4, 128, 9, 11}, Dims{7, 64, 31, 33}})
      tut::check_cases(only(bn_relu_f32(), "v26_channel_groups"), {bn_case(bn_relu_f32(), d, "NHWC", 1000.0)});
  }

  TEST_CASE("v26_channel_groups: chains, every backward on what its forward saved" * tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {3, 64, 5, 7}, "NHWC"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {4, 128, 9, 11}, "NHWC"));
    check_chains_from_all("v26_channel_groups", cases);
  }

  // v28's walk beyond v17's shapes (which hold 64x64x112x112: groups of 8 loads, their flush to
  // double, and the packs after the last group), all NHWC: 8x64x112x112, a group and the rest in
  // each type, under the sanitizers too; C = 64 with more rows than a round of the grid, C = 33
  // (33 columns, 7 rows of threads), C = 2048 (256 columns in half: one row of threads; 512 in
  // float: v19), C = 4096 (the fallback in both), C = 3 with lcm(3, V) elements a row of packs. x =
  // 1000 + noise in float; its bits launch after launch.
  TEST_CASE("v28_loads_ahead: every forward, v17's shapes and its columns, both layouts, operands moved; its bits, launch after launch" *
            tut::needs_gpu()) {
    const auto shapes = [](const auto& p) {
      auto cases = v17_shapes(p);
      for (const Dims& d : {Dims{8, 64, 112, 112}, Dims{8, 64, 56, 56}, Dims{3, 33, 17, 19}, Dims{2, 2048, 3, 5},
                            Dims{1, 4096, 2, 3}, Dims{5, 3, 7, 9}})
        cases.push_back(bn_case(p, d, "NHWC"));
      return cases;
    };
    check_forward_rung("v28_loads_ahead", shapes);
    for (const Dims& d : {Dims{8, 64, 112, 112}, Dims{3, 33, 17, 19}})
      tut::check_cases(only(bn_relu_f32(), "v28_loads_ahead"), {bn_case(bn_relu_f32(), d, "NHWC", 1000.0)});
    const std::vector<Dims> dims = {{4, 12, 33, 31}, {2, 64, 30, 30}, {1, 3, 5, 1}, {8, 64, 112, 112}};
    check_bits(bn_relu_f16(), dims, "v28_loads_ahead", nullptr);
    check_bits(bn_add_relu_f32(), dims, "v28_loads_ahead", nullptr);
  }

  TEST_CASE("v28_loads_ahead: chains, every backward on what its forward saved" * tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {8, 64, 56, 56}, "NHWC"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {3, 33, 17, 19}, "NHWC"));
    check_chains_from_all("v28_loads_ahead", cases);
  }

  // v29's held rounds (half NHWC, C dividing 64) beyond v17's shapes (which hold 64x64x112x112: 48
  // packs a thread, 12 kept): 8x64x56x56 and 128x64x56x56 (the suite's; 24 packs a thread, 12
  // kept), 16x32x112x112 (C = 32: 4 packs a row), C = 8, 4, 2 and 1 (a pack of 1, 2, 4 or 8 rows:
  // a channel at several positions of a row), an odd count with C = 4 (elements past the last
  // pack, and a mask word the packs do not fill), a tensor with fewer packs than threads, 3 x 64 x
  // 999 x 1000 (more packs a thread than kept, a partial last round; in float more than
  // kV29MostPacks a thread, so v28); and where it runs v28: C = 33, C = 128, NCHW, an operand moved
  // (check_forward_rung). In float a pack is half a mask byte, written by the even lane of a pair
  // (C = 1, 2 and 4: a pack a row, the pair two rows). Its bits, launch after launch, in both types.
  TEST_CASE("v29_held_rounds: every forward, its shapes and where it runs v28, both layouts, operands moved; its bits, launch after launch" *
            tut::needs_gpu()) {
    const auto shapes = [](const auto& p) {
      auto cases = v17_shapes(p);
      std::vector<Dims> dims = {{8, 64, 56, 56}, {3, 8, 17, 19},  {5, 4, 7, 9},   {2, 2, 33, 31}, {7, 1, 13, 11},
                                {1, 4, 3, 3},    {2, 16, 5, 5},   {3, 33, 17, 19}, {2, 128, 9, 11}};
      if (!tut::under_sanitizer())
        for (const Dims& d : {Dims{128, 64, 56, 56}, Dims{16, 32, 112, 112}, Dims{3, 64, 999, 1000}}) dims.push_back(d);
      for (const Dims& d : dims) cases.push_back(bn_case(p, d, "NHWC"));
      return cases;
    };
    check_forward_rung("v29_held_rounds", shapes);
    const std::vector<Dims> dims = {{5, 4, 7, 9}, {2, 64, 30, 30}, {8, 64, 56, 56}};
    check_bits(bn_relu_f16(), dims, "v29_held_rounds", nullptr);
    check_bits(bn_add_relu_f16(), dims, "v29_held_rounds", nullptr);
    check_bits(bn_relu_f32(), dims, "v29_held_rounds", nullptr);
    check_bits(bn_add_relu_f32(), dims, "v29_held_rounds", nullptr);
  }

  TEST_CASE("v29_held_rounds: chains, every backward on what its forward saved" * tut::needs_gpu()) {
    auto cases = small_shapes(bn_relu_backward_f32());
    cases.push_back(bn_case(bn_relu_backward_f32(), {8, 64, 56, 56}, "NHWC"));
    cases.push_back(bn_case(bn_relu_backward_f32(), {5, 4, 7, 9}, "NHWC"));
    check_chains_from_all("v29_held_rounds", cases);
  }

  TEST_CASE("v17_split_pass: every forward and backward, its shapes, both layouts, operands moved" * tut::needs_gpu()) {
    check_forward_rung("v17_split_pass", [](const auto& p) { return v17_shapes(p); });
    check_backward_rung("v17_split_pass", [](const auto& p) { return v17_shapes(p); });
  }

  TEST_CASE("v17_split_pass: chains, its backward on every forward's state and every backward on its forward's" *
            tut::needs_gpu()) {
    check_chains_through_all("v17_split_pass", split_pass_chain_cases());
  }

  // The chains apart from the rung's own test, so that a sanitizer can run v19's kernels alone
  // (-tc='v19_warp_columns*'): the chains launch every other version's kernels too.
  TEST_CASE("chains through v19_warp_columns: its backward on every forward's state and every backward on its forward's" *
            tut::needs_gpu()) {
    check_chains_through_all("v19_warp_columns", split_pass_chain_cases());
  }

  TEST_CASE("v19_warp_columns: every forward and backward, v17's shapes, both layouts, operands moved; its first launch's bits, launch after launch" *
            tut::needs_gpu()) {
    // Columns merged in shuffles where bx divides 32 (C = 1, 2, 8, 64: 32 / bx rows a warp), the
    // tree where it does not (C = 3, 5, 7, 12, 33) or a block is one row (C = 2048).
    check_forward_rung("v19_warp_columns", [](const auto& p) { return v17_shapes(p); });
    check_backward_rung("v19_warp_columns", [](const auto& p) { return v17_shapes(p); });
    std::vector<Dims> dims = {{4, 12, 33, 31}, {2, 64, 30, 30}, {1, 3, 5, 1}, {8, 2, 40, 40}};
    if (!tut::under_sanitizer()) dims.push_back({16, 32, 112, 112});
    check_bits(bn_relu_f32(), dims, "v19_warp_columns", nullptr);
    check_bits(bn_add_relu_f16(), dims, "v19_warp_columns", nullptr);
    check_bits(bn_relu_backward_f32(), dims, "v19_warp_columns", nullptr);
    check_bits(bn_add_relu_backward_f16(), dims, "v19_warp_columns", nullptr);
  }

  TEST_CASE("v20_async_pass: every forward and backward, v17's shapes and two where a warp takes several chunks, both layouts, operands moved; its bits, launch after launch" *
            tut::needs_gpu()) {
    // 8x64x56x56 and 6x3x300x300: more chunks than the pass has warps (4 blocks of 8 warps on each
    // of 132 SMs take 4224 chunks a round), with a lane's channels fixed (C = 64) and not (C = 3).
    const auto shapes = [](const auto& p) {
      auto cases = v17_shapes(p);
      for (const char* layout : {"NCHW", "NHWC"})
        for (const Dims& d : {Dims{8, 64, 56, 56}, Dims{6, 3, 300, 300}}) cases.push_back(bn_case(p, d, layout));
      return cases;
    };
    check_forward_rung("v20_async_pass", shapes);
    check_backward_rung("v20_async_pass", shapes);
    std::vector<Dims> dims = {{4, 12, 33, 31}, {2, 64, 30, 30}, {1, 3, 5, 1}, {8, 64, 56, 56}};
    check_bits(bn_relu_f16(), dims, "v20_async_pass", nullptr);
    check_bits(bn_add_relu_f32(), dims, "v20_async_pass", nullptr);
    check_bits(bn_relu_backward_f32(), dims, "v20_async_pass", nullptr);
    check_bits(bn_add_relu_backward_f16(), dims, "v20_async_pass", nullptr);
  }

  TEST_CASE("v21_resident: every backward, v12's shapes, both layouts, operands moved; chains from every forward; its first launch's bits, launch after launch" *
            tut::needs_gpu()) {
    // v12's cuts (C = 64 and 65, a 16-byte line's tail, fewer units than pieces, units of 96, C = 1),
    // and C = 3 with 341 row groups, C = 33 (two channels a warp in the sums).
    const auto shapes = [](const auto& p) {
      auto cases = v12_shapes(p);
      for (const Dims& d : {Dims{8, 3, 30, 30}, Dims{4, 33, 17, 19}}) cases.push_back(bn_case(p, d, "NHWC"));
      return cases;
    };
    check_backward_rung("v21_resident", shapes);
    const auto chain_cases = small_shapes(bn_relu_backward_f32());
    check_chains_into<float, false>("v21_resident", chain_cases);
    check_chains_into<__half, true>("v21_resident", chain_cases);
    const std::vector<Dims> dims = {{8, 32, 28, 28}, {4, 64, 9, 11}, {2, 1, 300, 301}, {2, 16, 3, 1}, {4, 33, 17, 19}, {8, 3, 30, 30}};
    check_bits(bn_relu_backward_f32(), dims, "v21_resident", nullptr);
    check_bits(bn_add_relu_backward_f16(), dims, "v21_resident", nullptr);
  }

  // v31's held rounds (NHWC, C dividing 64) beyond v17's shapes (which hold 64x64x112x112: 95 packs
  // a thread in half, 13 kept): 8x64x56x56 (every pack held), 8x64x120x120 (14 packs for some
  // threads in half, 27 in float: held and read-again packs in one thread), C = 8, 4, 2 and 1 (a
  // channel at several positions of a row), an odd count with C = 4 (elements past the last pack,
  // summed in the merge and written by one warp), and, outside the sanitizers, the suite's
  // 128x64x56x56 and 16x32x112x112 and 64x64x60x61 (a partial last round); and where it runs v20:
  // C = 33, C = 128, NCHW, an operand moved (check_backward_rung). Chains from every forward; its
  // bits, launch after launch.
  TEST_CASE("v31_held_rounds: every backward, its shapes and where it runs v20, both layouts, operands moved; chains from every forward; its bits, launch after launch" *
            tut::needs_gpu()) {
    const auto shapes = [](const auto& p) {
      auto cases = v17_shapes(p);
      std::vector<Dims> dims = {{8, 64, 56, 56}, {8, 64, 120, 120}, {3, 8, 17, 19}, {5, 4, 7, 9}, {2, 2, 33, 31},
                                {7, 1, 13, 11},  {1, 4, 3, 3},      {2, 16, 5, 5},  {3, 33, 17, 19}, {2, 128, 9, 11}};
      if (!tut::under_sanitizer())
        for (const Dims& d : {Dims{128, 64, 56, 56}, Dims{16, 32, 112, 112}, Dims{64, 64, 60, 61}}) dims.push_back(d);
      for (const Dims& d : dims) cases.push_back(bn_case(p, d, "NHWC"));
      return cases;
    };
    check_backward_rung("v31_held_rounds", shapes);
    auto chain_cases = small_shapes(bn_relu_backward_f32());
    chain_cases.push_back(bn_case(bn_relu_backward_f32(), {8, 64, 56, 56}, "NHWC"));
    chain_cases.push_back(bn_case(bn_relu_backward_f32(), {5, 4, 7, 9}, "NHWC"));
    check_chains_into<float, false>("v31_held_rounds", chain_cases);
    check_chains_into<__half, true>("v31_held_rounds", chain_cases);
    const std::vector<Dims> dims = {{5, 4, 7, 9}, {2, 64, 30, 30}, {8, 64, 120, 120}};
    check_bits(bn_relu_backward_f32(), dims, "v31_held_rounds", nullptr);
    check_bits(bn_add_relu_backward_f32(), dims, "v31_held_rounds", nullptr);
    check_bits(bn_relu_backward_f16(), dims, "v31_held_rounds", nullptr);
    check_bits(bn_add_relu_backward_f16(), dims, "v31_held_rounds", nullptr);
  }

  // Every backward version on what every forward version saved, one problem a test case (so that
  // the four can run in processes of their own; a name holds no comma, which doctest's filters read
  // as a separator).
  TEST_CASE("every backward version on what every forward version saved: bn_relu_backward_f32" * tut::needs_gpu()) {
    check_every_chain<float, false>();
  }
  TEST_CASE("every backward version on what every forward version saved: bn_add_relu_backward_f32" * tut::needs_gpu()) {
    check_every_chain<float, true>();
  }
  TEST_CASE("every backward version on what every forward version saved: bn_relu_backward_f16" * tut::needs_gpu()) {
    check_every_chain<__half, false>();
  }
  TEST_CASE("every backward version on what every forward version saved: bn_add_relu_backward_f16" * tut::needs_gpu()) {
    check_every_chain<__half, true>();
  }

  TEST_CASE("the running statistics: a second launch without the reset moves them, the reset restores them" *
            tut::needs_gpu()) {
    const auto& p = bn_relu_f32();
    for (const char* layout : {"NCHW", "NHWC"}) {
      const auto c = bn_case(p, {3, 7, 13, 17}, layout);
      for (const auto& v : p.versions) {
        INFO(v.name, " ", layout);
        const auto inst = tut::instantiate(p, c, tut::test_options(p.name, c));
        tut::Trial t;
        try {
          t = tut::make_trial(v, *inst);
        } catch (const tut::Unsupported&) {
          continue;
        }
        CHECK(tut::checked_run(t).ok());
        t.before(nullptr);
        t.launch(nullptr);
        t.launch(nullptr);  // twice: the running statistics move twice
        const auto twice = t.check();
        CHECK(twice["saved_mean"].ok());
        CHECK_FALSE(twice["running_mean"].ok());
        CHECK_FALSE(twice["running_var"].ok());
        // Three checked runs in a row: the reset restores the state, and the kernels' own counters
        // (versions 2 and 3 count finished blocks) are back at zero after every launch.
        for (int k = 0; k < 3; ++k) CHECK(tut::checked_run(t).ok());
      }
    }
  }

  TEST_CASE("the grader rejects known-wrong normalize passes" * tut::needs_gpu()) {
    const auto nchw = bn_case(bn_relu_f32(), {3, 7, 13, 17}, "NCHW"), nhwc = bn_case(bn_relu_f32(), {3, 7, 13, 17}, "NHWC");
    // The NCHW channel formula: right in NCHW, wrong in NHWC.
    CHECK(grade_forward(&wrong::flawed<wrong::Flaw::channel_as_nchw>, nchw).ok());
    const auto layout = grade_forward(&wrong::flawed<wrong::Flaw::channel_as_nchw>, nhwc);
    CHECK_FALSE(layout["y"].ok());
    // The mask from x > mean: y right, the mask not.
    for (const auto& c : {nchw, nhwc}) {
      const auto m = grade_forward(&wrong::flawed<wrong::Flaw::mask_from_x>, c);
      CHECK(m["y"].ok());
      CHECK_FALSE(m["mask"].ok());
    }
    // Whole warps only: 3 * 7 * 13 * 17 = 4641 elements, so the last word is never stored.
    const auto ww = grade_forward(&wrong::flawed<wrong::Flaw::whole_warps_only>, nchw);
    CHECK_FALSE(ww.ok());
    CHECK(grade_forward(&wrong::flawed<wrong::Flaw::whole_warps_only>, bn_case(bn_relu_f32(), {2, 8, 4, 4}, "NCHW")).ok());
    // Beta after the ReLU.
    CHECK_FALSE(grade_forward(&wrong::flawed<wrong::Flaw::beta_after_relu>, nhwc)["y"].ok());
  }
}

// More than 2^31 elements: 32-bit indexing would wrap. Run with `meson test -C build --suite large`.
// Versions 2, 3, 5 and 6 (v4 is v5 without its cache), both layouts; x, y and the mask take 18 GB.
TEST_SUITE("large") {
  TEST_CASE("past 2^31 elements: bn_relu_f32 v2, v3, v5 and v6" * tut::needs_gpu_memory(std::size_t{40} << 30)) {
    const auto p = only_these(bn_relu_f32(), {"v2_layout_aware", "v3_single_read", "v5_onchip_cache", "v6_balanced"});
    for (const char* layout : {"NCHW", "NHWC"}) tut::check_all_at(p, bn_case(p, {1, 2, 32768, 32769}, layout));
  }
  TEST_CASE("past 2^31 elements: bn_relu_f32 v17, v19 and v20, their pass's chunks and mask bytes past 2^31" *
            tut::needs_gpu_memory(std::size_t{40} << 30)) {
    const auto p = only_these(bn_relu_f32(), {"v17_split_pass", "v19_warp_columns", "v20_async_pass"});
    for (const char* layout : {"NCHW", "NHWC"}) tut::check_all_at(p, bn_case(p, {1, 2, 32768, 32769}, layout));
  }
  TEST_CASE("past 2^31 elements: bn_relu_backward_f32 v17, v19 and v20, their dx pass's chunks and mask words past 2^31" *
            tut::needs_gpu_memory(std::size_t{40} << 30)) {
    // The saved state from v17's forward: the chain's default forward (v0) indexes in 32 bits.
    const auto f = only(bn_relu_f32(), "v17_split_pass");
    const tut::ProblemEntry e = tut::erase(f);
    const auto p = chained_to(only_these(bn_relu_backward_f32(), {"v17_split_pass", "v19_warp_columns", "v20_async_pass"}), e);
    tut::check_all_at(p, bn_case(p, {1, 2, 32768, 32769}, "NHWC"));
  }
  TEST_CASE("past 2^31 elements: bn_relu_f32 v28, its walk's pointer past 2^31 elements (NHWC)" *
            tut::needs_gpu_memory(std::size_t{40} << 30)) {
    tut::check_all_at(only(bn_relu_f32(), "v28_loads_ahead"), bn_case(bn_relu_f32(), {1, 2, 32768, 32769}, "NHWC"));
  }
  TEST_CASE("past 2^31 elements: bn_relu_f32 v16, a block for each of 2^20 + 1 channels of 2 x 1024 values" *
            tut::needs_gpu_memory(std::size_t{40} << 30)) {
    tut::check_all_at(only(bn_relu_f32(), "v16_channel_blocks"), bn_case(bn_relu_f32(), {2, (1 << 20) + 1, 32, 32}, "NCHW"));
  }
}
