// Every registered version against the CPU reference on the GPU: every window size, stride and
// padding the lesson names, both layouts, every index format, dilation and ceil_mode, tiny and odd
// shapes; operands moved off their alignment; the backward on the indices every forward version
// wrote; the deterministic backwards' bits from run to run; the grader against known-wrong kernels; and, in the
// `large` suite, past 2^31 elements.
#include <doctest/doctest.h>

#include "tests/gpu_cases.hpp"
#include "tests/wrong_solutions.cuh"
#include "tut/gpu_test.hpp"
#include "tut/grading.hpp"
#include "versions.cuh"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace {
using ch06::List;
using ch06::Spec;
using namespace ch06::test_cases;

// The forward versions that take a layout, as a problem of their own: check_chains and
// check_all_at run every version of the problem they are given, and a version that refuses the
// case would stop them (they do not expect tut::Unsupported).
const tut::Problem<ch06::FwdInst<float>>& forward_problem_taking(const std::string& layout) {
  static const auto keep = [](const std::string& l) {
    auto p = ch06::forward_f32_problem();
    std::vector<tut::Version<ch06::FwdInst<float>>> vs;
    const auto probe = ch06::make_pool_case({{1, 2, 6, 7, 8}, {3}, {2}, {1}, {1}, 0, l}, false);
    const auto inst = p.make(probe, tut::InstanceOptions{});
    for (const auto& v : p.versions) {
      bool takes = v.kind == tut::Kind::own;
      if (takes && v.setup) {
        tut::Workspace ws;
        try {
          v.setup(*inst, ws);
        } catch (const tut::Unsupported&) {
          takes = false;
        }
      }
      if (takes) vs.push_back(v);
    }
    p.versions = vs;
    return p;
  };
  static const auto ncdhw = keep("NCDHW"), ndhwc = keep("NDHWC");
  return layout == "NDHWC" ? ndhwc : ncdhw;
}
const tut::ProblemEntry& forward_taking(const std::string& layout) {
  static const tut::ProblemEntry e_ncdhw = tut::erase(forward_problem_taking("NCDHW")),
                                 e_ndhwc = tut::erase(forward_problem_taking("NDHWC"));
  return layout == "NDHWC" ? e_ndhwc : e_ncdhw;
}

template <class Inst>
const tut::Version<Inst>& version_named(const tut::Problem<Inst>& p, const std::string& name) {
  for (const auto& v : p.versions)
    if (v.name == name) return v;
  throw std::out_of_range("no version " + name);
}

// A problem with only the named versions (the sanitizer runs of the newest rungs).
template <class Inst>
tut::Problem<Inst> only(tut::Problem<Inst> p, const std::set<std::string>& names) {
  std::vector<tut::Version<Inst>> vs;
  for (const auto& v : p.versions)
    if (names.count(v.name)) vs.push_back(v);
  p.versions = vs;
  return p;
}

tut::CheckResult grade_wrong(ch06::FwdLaunch<float> launch, const tut::Case& c) {
  const auto v = ch06::forward_version<float>("wrong", "", launch, &ch06::takes_all, {});
  return tut::grade(ch06::maxpool3d_f32(), v, c);
}

// The cases of a staged backward (v15, v18): every kernel 2 to 8 and padding 0 to k / 2 in both
// index formats on the shape sweep(k) (a part-tile in each axis of the version's tiling), then tiny
// volumes, a window the size of the input and a D past two chunks of planes.
std::vector<tut::Case> staged_cases(std::vector<std::int64_t> (*sweep)(std::int64_t), bool one_output_case) {
  std::vector<tut::Case> cases;
  int n = 0;
  for (std::int64_t k = 2; k <= 8; ++k)
    for (std::int64_t p = 0; 2 * p <= k; ++p)
      for (const char* idx : {"int64", "compact"}) {
        ++n;
        if (tut::under_sanitizer() && n % 5 != 0) continue;
        cases.push_back(ch06::make_pool_case({sweep(k), {k}, {1}, {p}, {1}, 0, "NCDHW", idx}, true));
      }
  std::vector<Spec> small = {{{1, 1, 1, 1, 1}, {2}, {1}, {1}},      // one cell, 2 x 2 x 2 outputs
                             {{1, 1, 3, 3, 3}, {3}, {1}, {0}},      // one window
                             {{2, 3, 2, 5, 1}, {2}, {1}, {1}},      // W = 1
                             {{1, 1, 8, 8, 8}, {8}, {1}, {4}},      // a window the size of the input
                             {{3, 2, 70, 3, 4}, {3}, {1}, {1}}};    // D past two chunks
  if (one_output_case) small.insert(small.begin() + 1, Spec{{1, 1, 1, 1, 1}, {3}, {1}, {1}});  // one cell, one output
  for (const char* idx : {"int64", "compact"})
    for (Spec s : small) {
      s.layout = "NCDHW";
      s.indices = idx;
      cases.push_back(ch06::make_pool_case(s, true));
    }
  return cases;
}

// What a staged backward refuses (stride 2, a window that is not cubic, dilation, NDHWC, kernel 9),
// it says before the launch, and grading it there throws Unsupported.
void check_staged_refusals(const char* version, std::string (*refuses)(const ch06::Window&)) {
  const auto& bwd = ch06::maxpool3d_backward_f32();
  for (Spec s : std::vector<Spec>{{{1, 2, 9, 10, 11}, {3}, {2}, {1}},                  // stride 2
                                  {{1, 2, 9, 10, 11}, {3, 3, 2}, {1}, {1}},             // not cubic
                                  {{1, 2, 9, 10, 11}, {3}, {1}, {1}, {2}},              // dilation 2
                                  {{1, 2, 9, 10, 11}, {3}, {1}, {1}, {1}, 0, "NDHWC"},  // NDHWC
                                  {{1, 2, 12, 12, 12}, {9}, {1}, {4}}}) {               // kernel 9
    if (s.indices == "none") s.indices = "int64";
    const auto c = ch06::make_pool_case(s, true);
    INFO(c.name);
    CHECK_FALSE(refuses(ch06::window_of_case(c)).empty());
    CHECK_THROWS_AS(tut::grade(bwd, version_named(bwd, version), c), tut::Unsupported);
  }
}

using Bwd = ch06::BwdInst<float>;

// `values` copied to operand `name` of `inst`.
template <class V>
void upload(const Bwd& inst, const char* name, const std::vector<V>& values) {
  TUT_CUDA(cudaMemcpy(inst.operand(name).device(), values.data(), values.size() * sizeof(V), cudaMemcpyHostToDevice));
}

// Each output's saved cell, given as its offset in the output's window, written to the case's index
// operand in its format: the flat index within the plane for int64, else the offset itself.
void upload_cells(const Bwd& inst, const std::vector<int>& cell) {
  const ch06::Window& w = inst.window();
  if (w.indices == ch06::IndexFormat::int64) {
    std::vector<std::int64_t> ix(cell.size());
    for (std::size_t o = 0; o < cell.size(); ++o) {
      const std::int64_t r = static_cast<std::int64_t>(o) % w.out_plane();
      ix[o] = w.flat_index(static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW)), static_cast<int>(r / w.oW % w.oH),
                           static_cast<int>(r % w.oW), cell[o]);
    }
    upload(inst, "index", ix);
  } else if (w.compact8()) {
    upload(inst, "offset8", std::vector<std::uint8_t>(cell.begin(), cell.end()));
  } else {
    upload(inst, "offset16", std::vector<std::int16_t>(cell.begin(), cell.end()));
  }
}

// Backward version `name` launched once on `inst` (its outputs poisoned, its resets run), then dx's
// bytes as the device holds them.
std::vector<unsigned char> dx_after(const tut::Problem<Bwd>& bwd, const std::string& name, Bwd& inst) {
  const auto t = tut::make_trial(version_named(bwd, name), inst);
  t.poison(nullptr);
  t.before(nullptr);
  t.launch(nullptr);
  std::vector<unsigned char> out(static_cast<std::size_t>(inst.window().in_numel()) * sizeof(float));
  TUT_CUDA(cudaMemcpy(out.data(), inst.operand("dx").device(), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

// A forward rung against the reference on `specs` in every index format, in float and in half; then
// every backward on the indices its float form wrote, int64 and compact, on `chain`'s window (the
// chains test's probe, kernel 3 stride 2, is one the newest rungs refuse).
void check_forward_rung(const std::string& name, const std::vector<Spec>& specs, Spec chain) {
  std::vector<tut::Case> cases;
  for (const char* idx : kFormats)
    for (Spec s : specs) {
      s.indices = idx;
      cases.push_back(ch06::make_pool_case(s, false));
    }
  tut::check_cases(only(ch06::forward_f32_problem(), {name}), cases);
  tut::check_cases(only(ch06::forward_f16_problem(), {name}), cases);
  const auto fwd = only(ch06::forward_f32_problem(), {name});
  const tut::ProblemEntry entry = tut::erase(fwd);
  std::vector<tut::Case> chains;
  for (const char* idx : {"int64", "compact"}) {
    chain.indices = idx;
    chains.push_back(ch06::make_pool_case(chain, true));
  }
  CHECK(tut::check_chains(ch06::maxpool3d_backward_f32(), chains, &entry) > 0);
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("maxpool3d_f32: every version on kernels 1-8, strides 1, 2, k, k+1, padding 0, 1, k/2" *
            tut::needs_gpu()) {
    tut::check_cases(ch06::maxpool3d_f32(), window_cases());
  }
  TEST_CASE("maxpool3d_f32: non-cubic windows, dilation, ceil_mode, tiny and whole-volume windows, each format" *
            tut::needs_gpu()) {
    tut::check_cases(ch06::maxpool3d_f32(), special_cases());
  }
  TEST_CASE("maxpool3d_f16: every version on the same cases" * tut::needs_gpu()) {
    tut::check_cases(ch06::maxpool3d_f16(), window_cases());
    tut::check_cases(ch06::maxpool3d_f16(), special_cases());
  }
  TEST_CASE("maxpool3d_backward_f32: both versions, both index formats, both layouts" * tut::needs_gpu()) {
    tut::check_cases(ch06::maxpool3d_backward_f32(), backward_cases());
  }

  TEST_CASE("newest rungs (fwd v6's sliding passes, v7's row pieces, v9, v10 and v11, bwd v9, v13 to v18) and auto on moderate cases, every format and layout" *
            tut::needs_gpu()) {
    std::vector<tut::Case> fwd, bwd;
    for (const char* layout : {"NCDHW", "NDHWC"})
      for (const char* idx : kFormats) {
        for (Spec s : std::vector<Spec>{{{64, 32, 4, 4, 4}, {4}, {4}, {0}},                 // one run of 64
                                        {{3, 5, 10, 8, 12}, {3, 8, 12}, {2, 8, 12}, {1, 0, 0}},  // runs of planes, padded
                                        {{2, 16, 16, 16, 16}, {8}, {8}, {0}},              // 8 rows of 8 per window
                                        {{2, 3, 9, 10, 37}, {3}, {1}, {1}},                // stride 1, van Herk's k = 3
                                        {{1, 4, 12, 11, 29}, {5}, {1}, {2}},               // k = 5, rows of odd length
                                        {{1, 2, 12, 13, 45}, {8}, {1}, {0}},               // k = 8, unpadded
                                        {{2, 2, 6, 8, 20}, {2}, {2}, {0}},                 // C = 2: v7's row pieces
                                        {{1, 2, 7, 9, 12}, {4}, {4}, {2}},                 // the same, padded by whole pieces
                                        {{2, 3, 9, 9, 9}, {2}, {2}, {0}, {1}, 1},          // ceil: every row's last window half outside
                                        {{1, 4, 7, 10, 13}, {3}, {2}, {1}, {1}, 1},        // outside on both sides, ceil
                                        {{3, 2, 5, 6, 7}, {3}, {1}, {1}},                  // overlapping, outside on both sides
                                        {{2, 2, 6, 9, 11}, {4}, {3}, {2}},                 // kernel 4, padding 2
                                        {{5, 3, 4, 6, 8}, {2, 6, 8}, {2, 6, 8}, {1, 0, 0}},  // runs of planes, padded in D
                                        {{4, 3, 9, 3, 5}, {1, 3, 5}, {1, 3, 5}, {0}},      // runs of 15 floats: pieces of 1
                                        {{2, 3, 4, 64, 64}, {4, 64, 64}, {4, 64, 64}, {0}}}) {  // runs of 16384: many batches

          s.layout = layout;
          s.indices = idx;
          fwd.push_back(ch06::make_pool_case(s, false));
        }
        if (std::string(idx) == "none") continue;
        for (Spec s : std::vector<Spec>{{{2, 8, 16, 16, 32}, {8}, {8}, {0}},      // chunks in one output, 4 row splits
                                        {{2, 8, 8, 14, 14}, {2}, {2}, {0}},       // 2-element chunks
                                        {{2, 16, 8, 14, 14}, {3}, {2}, {1}},      // overlap: v14 in NDHWC
                                        {{2, 4, 11, 13, 70}, {3}, {1}, {1}},      // stride 1: v15, tails of its tiles
                                        {{1, 3, 12, 19, 35}, {8}, {1}, {4}}}) {   // kernel 8 stride 1: v15's ring of 8
          s.layout = layout;
          s.indices = idx;
          bwd.push_back(ch06::make_pool_case(s, true));
        }
      }
    tut::check_cases(only(ch06::forward_f32_problem(), {"v6_separable", "v7_channels_last", "v9_run_reduce", "v10_max_first", "v11_columns_max", "auto"}), fwd);
    tut::check_cases(only(ch06::backward_f32_problem(), {"v9_ordered_tile", "v13_prefetch_rows", "v14_channel_gather", "v15_separable_stages", "v16_zeros_then_value", "v17_bulk_store", "v18_column_walk", "auto"}), bwd);
  }

  TEST_CASE("fwd v10 against the reference: one-run windows of 8 to 16384 cells, padded in D, pieces of 1, 2 and 4 values, each format, float and half" *
            tut::needs_gpu()) {
    std::vector<tut::Case> cases;
    for (const char* idx : kFormats)
      for (Spec s : std::vector<Spec>{{{64, 32, 4, 4, 4}, {4}, {4}, {0}},                      // 64 cells: 4 lanes a run
                                      {{16, 16, 8, 8, 8}, {8}, {8}, {0}},                      // 512: 32 lanes, one batch
                                      {{2, 3, 4, 64, 64}, {4, 64, 64}, {4, 64, 64}, {0}},     // 16384: 32 batches a lane
                                      {{3, 5, 10, 8, 12}, {3, 8, 12}, {2, 8, 12}, {1, 0, 0}},  // padded in D: shorter runs
                                      {{5, 3, 4, 6, 8}, {2, 6, 8}, {2, 6, 8}, {1, 0, 0}},
                                      {{4, 3, 6, 5, 6}, {2, 5, 6}, {2, 5, 6}, {1, 0, 0}},      // W = 6: pieces of 2
                                      {{4, 3, 9, 3, 5}, {1, 3, 5}, {1, 3, 5}, {0}},            // W = 5: pieces of 1
                                      {{7, 3, 5, 2, 4}, {1, 2, 4}, {1, 2, 4}, {0}}}) {         // 8 cells: one lane a run
        s.indices = idx;
        cases.push_back(ch06::make_pool_case(s, false));
      }
    tut::check_cases(only(ch06::forward_f32_problem(), {"v10_max_first"}), cases);
    tut::check_cases(only(ch06::forward_f16_problem(), {"v10_max_first"}), cases);
  }

  TEST_CASE("fwd v11 against the reference: NDHWC windows of 1 to 512 cells over rows of 1 to 32 threads, padded, ceil_mode, dilated, packs of 4, 2 and 1 values, each format, float and half" *
            tut::needs_gpu()) {
    // The whole numbers in [-8, 8] with NaN, +-0 and +-inf put zeros and NaNs in many windows, so
    // the value-only scan's second pass with the cells runs on most blocks of rows.
    std::vector<tut::Case> cases;
    for (const char* idx : kFormats)
      for (Spec s : std::vector<Spec>{{{2, 16, 8, 8, 8}, {8}, {8}, {0}},             // 512 cells: 32 rows, packs of 4
                                      {{1, 32, 12, 12, 12}, {8}, {1}, {4}},         // 512, overlapping, padded: int16 compact
                                      {{3, 6, 9, 9, 9}, {4}, {4}, {2}},             // 64, padded, C = 6: packs of 2
                                      {{4, 8, 16, 16, 16}, {2}, {2}, {0}},          // 8 cells: 2 rows
                                      {{2, 3, 7, 9, 11}, {3}, {2}, {1}, {1}, 1},    // ceil_mode, C = 3: packs of 1
                                      {{2, 8, 9, 10, 11}, {3}, {1}, {1}, {2}},      // dilation 2
                                      {{1, 4, 1, 1, 1}, {1}, {1}, {0}}}) {          // one cell: one row
        s.layout = "NDHWC";
        s.indices = idx;
        cases.push_back(ch06::make_pool_case(s, false));
      }
    tut::check_cases(only(ch06::forward_f32_problem(), {"v11_columns_max"}), cases);
    tut::check_cases(only(ch06::forward_f16_problem(), {"v11_columns_max"}), cases);
  }

  // The inputs above hold one NaN, the canonical one, and zeros drawn as +0 mostly: a rung that took
  // the first NaN instead of the last, or the maximum's zero instead of the first one's sign, could
  // still pass them. Here each window of 512 (rows of 32 threads), 64 and 27 cells holds NaNs of
  // three payloads, both signs, and zeros of both signs; v11 without an index must return the
  // reference's element bit for bit: the last NaN, else the first of the equal maxima.
  TEST_CASE("fwd v11 without an index: of several NaNs the last one's payload, of equal zeros the first one's sign, float and half" *
            tut::needs_gpu()) {
    const auto run = [](auto zero, std::vector<std::uint16_t> nan_bits16, std::vector<std::uint32_t> nan_bits32) {
      using T = decltype(zero);
      for (Spec s : std::vector<Spec>{{{3, 16, 8, 8, 8}, {8}, {8}, {0}},       // 512 cells: 32 rows, packs of 4 (8)
                                      {{2, 6, 12, 12, 12}, {4}, {4}, {0}},     // 64 cells, C = 6: packs of 2
                                      {{2, 3, 9, 9, 9}, {3}, {3}, {1}}}) {     // 27, padded, C = 3: packs of 1
        s.layout = "NDHWC";
        s.indices = "none";
        const ch06::Window w = ch06::window_of_case(ch06::make_pool_case(s, false));
        const tut::Random rng(20261130);
        std::vector<T> x(static_cast<std::size_t>(w.in_numel()));
        for (std::size_t i = 0; i < x.size(); ++i) {
          const std::uint64_t u = rng.bits(i);
          // Per batch image n: NaN odds from 1 in 6 to 1 in 600, and image 1 without a positive value.
          const std::int64_t n = static_cast<std::int64_t>(i) / (w.in_numel() / w.N);
          const std::uint64_t odds = n == 0 ? 6 : 600, kinds = n == 1 ? 4 : 6;
          const float palette[] = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 2.0f};
          if (u % odds == 0) {
            const std::size_t k = (u >> 20) % 3;
            if constexpr (std::is_same_v<T, float>) {
              std::memcpy(&x[i], &nan_bits32[k], sizeof(float));
            } else {
              __half_raw r;
              r.x = nan_bits16[k];
              x[i] = __half(r);
            }
          } else {
            x[i] = tut::from_float<T>(palette[(u >> 8) % kinds]);
          }
        }
        tut::DeviceBuffer<T> dx(x), dy(static_cast<std::size_t>(w.out_numel()));
        ch06::ForwardArgs<T> a;
        a.w = w;
        a.x = dx.data();
        a.y = dy.data();
        dy.poison();
        ch06::fwd_v11_columns_max<T>(nullptr, a);
        TUT_CUDA(cudaDeviceSynchronize());
        const std::vector<T> y = dy.to_host();
        int wrong = 0, nan_windows = 0, zero_windows = 0;
        for (std::int64_t o = 0; o < w.out_numel(); ++o) {
          const ch06::OutPos q = ch06::out_pos(w, o);
          const ch06::Best b = ch06::window_max(w, q.n, q.c, q.od, q.oh, q.ow, [&](std::int64_t e) {
            return ch06::as_float(x[static_cast<std::size_t>(e)]);
          });
          const T want = x[static_cast<std::size_t>(ch06::in_element(w, q.n, q.c, w.flat_index(q.od, q.oh, q.ow, b.cell)))];
          nan_windows += std::isnan(b.value);
          zero_windows += b.value == 0.0f;
          wrong += std::memcmp(&want, &y[static_cast<std::size_t>(o)], sizeof(T)) != 0;
        }
        INFO((sizeof(T) == 4 ? "float" : "half"), " kernel ", w.k[0], ": ", nan_windows, " windows won by a NaN, ",
             zero_windows, " by a zero");
        CHECK(wrong == 0);
        CHECK(nan_windows > 0);
        CHECK(zero_windows > 0);
      }
    };
    run(0.0f, {}, {0x7fc00001u, 0xffc00002u, 0x7fc00003u});
    run(__half{}, {0x7e01u, 0xfe02u, 0x7e03u}, {});
  }

  // v13 and v15 take the same cases: packs of outputs side by side along W.
  const std::vector<Spec> kPackSpecs = {{{2, 3, 5, 7, 32}, {2}, {2}, {0}},                     // rows of 16-byte packs
                                        {{2, 3, 6, 9, 24}, {3, 3, 2}, {2, 2, 2}, {1, 1, 0}},   // padded in D and H
                                        {{1, 2, 5, 6, 16}, {2, 2, 1}, {1, 1, 1}, {0}},         // kernel 1 along W, overlap in D, H
                                        {{1, 2, 4, 4, 64}, {1, 1, 4}, {1, 1, 4}, {0}},         // kernel 4 along W (half only)
                                        {{2, 2, 7, 9, 16}, {2}, {2}, {0}, {1}, 1},             // ceil_mode in D and H
                                        {{2, 3, 5, 6, 21}, {2}, {2}, {0}, {1}, 1},             // odd W: cell by cell, last window cut
                                        {{1, 2, 9, 5, 16}, {5, 1, 2}, {5, 1, 2}, {2, 0, 0}},   // 5 rows: batches of 4 cut, padding in D
                                        {{1, 1, 1, 1, 2}, {1, 1, 2}, {1, 1, 2}, {0}}};         // one output

  TEST_CASE("newest rungs: fwd v13 against the reference: packs of 2, 4 and 8 outputs, rows read whole or cell by cell, padding and ceil_mode in D and H, non-cubic windows, each format, float and half" *
            tut::needs_gpu()) {
    check_forward_rung("v13_output_packs", kPackSpecs, {{2, 3, 6, 8, 32}, {2}, {2}, {0}});
  }

  TEST_CASE("newest rungs: fwd v15 against the reference: v13's cases, each format, float and half" * tut::needs_gpu()) {
    check_forward_rung("v15_packs_max_first", kPackSpecs, {{2, 3, 6, 8, 32}, {2}, {2}, {0}});
  }

  TEST_CASE("newest rungs: fwd v14 against the reference: pieces of 1 to 8 a row, rows of outputs cut by tiles, padding and ceil_mode, gaps and overlap, each format, float and half" *
            tut::needs_gpu()) {
    check_forward_rung("v14_row_lanes",
                       {{{2, 3, 16, 16, 64}, {8}, {8}, {0}},                   // the suite's windows: 2 pieces, 8 outputs, 2 row sets
                        {{2, 2, 9, 9, 36}, {4}, {4}, {0}, {1}, 1},             // rows of 9 outputs (two tiles), ceil_mode
                        {{1, 2, 12, 10, 40}, {8}, {8}, {4}},                   // a piece of padding along W, 4 along D and H
                        {{1, 2, 4, 4, 64}, {2, 2, 16}, {2, 2, 16}, {0}},       // 4 pieces a row
                        {{1, 1, 2, 3, 64}, {1, 2, 32}, {1, 1, 32}, {0}},       // 8 pieces, overlap along H
                        {{2, 2, 9, 11, 48}, {3, 5, 8}, {2, 3, 12}, {1, 2, 0}},  // 15 rows, gaps along W
                        {{1, 2, 10, 9, 40}, {8}, {4}, {0}},                    // overlap along W: pieces read twice
                        {{1, 1, 8, 8, 8}, {8}, {8}, {0}}},                     // one output
                       {{2, 3, 16, 16, 32}, {8}, {8}, {0}});
  }

  TEST_CASE("versions stay correct with every operand moved 0-7 elements off its alignment" * tut::needs_gpu()) {
    std::vector<tut::Case> cases = {ch06::make_pool_case({{2, 8, 5, 7, 9}, {3}, {2}, {1}, {1}, 0, "NDHWC", "int64"}, false),
                                    ch06::make_pool_case({{2, 3, 7, 8, 9}, {2}, {2}, {0}, {1}, 0, "NCDHW", "compact"}, false),
                                    ch06::make_pool_case({{2, 3, 4, 6, 16}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, false),  // v13's rows of 16 bytes
                                    ch06::make_pool_case({{2, 3, 8, 8, 16}, {8}, {8}, {0}, {1}, 0, "NCDHW", "compact"}, false)};  // v14's pieces
    if (tut::under_sanitizer()) cases.resize(1);
    tut::check_offsets(ch06::maxpool3d_f32(), cases);
    tut::check_offsets(ch06::maxpool3d_f16(), cases);
    tut::check_offsets(ch06::maxpool3d_backward_f32(),
                       {ch06::make_pool_case({{2, 8, 5, 7, 9}, {3}, {1}, {1}, {1}, 0, "NDHWC", "compact"}, true),
                        ch06::make_pool_case({{2, 3, 8, 10, 12}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, true),
                        ch06::make_pool_case({{2, 8, 4, 6, 8}, {2}, {2}, {0}, {1}, 0, "NDHWC", "compact"}, true)});
  }

  TEST_CASE("every backward version on the indices every forward version wrote, both formats and layouts" *
            tut::needs_gpu()) {
    for (const char* layout : {"NCDHW", "NDHWC"}) {
      const tut::ProblemEntry& fwd = forward_taking(layout);
      int own = 0;
      for (const auto& v : fwd.versions) own += v.kind == tut::Kind::own;
      CHECK(own >= (std::string(layout) == "NCDHW" ? 8 : 4));
      std::vector<tut::Case> cases;
      // Overlapping windows (v3 refuses them), windows with gaps between them and padding, and
      // kernel 8 stride 1 (v4's masks of (D, H) slots; v15 in NCDHW), kernel 3 stride 1 (v15).
      for (const char* idx : {"int64", "compact"})
        for (Spec s : std::vector<Spec>{{{2, 3, 9, 10, 11}, {3}, {2}, {1}},
                                        {{1, 4, 9, 10, 11}, {2}, {3}, {1}},
                                        {{1, 2, 12, 12, 12}, {8}, {1}, {4}},
                                        {{1, 3, 7, 9, 10}, {3}, {1}, {1}}}) {
          s.layout = layout;
          s.indices = idx;
          cases.push_back(ch06::make_pool_case(s, true));
        }
      if (tut::under_sanitizer()) cases.resize(2);
      const int pairs = tut::check_chains(ch06::maxpool3d_backward_f32(), cases, &fwd);
      int expected = 0;  // every own forward version with every backward version that takes the case
      for (const auto& c : cases) {
        const auto w = ch06::window_of_case(c);
        for (const auto& v : ch06::maxpool3d_backward_f32().versions) {
          const bool refused = (v.name == "v3_segment_writer" && !ch06::bwd_v3_refuses<float>(w).empty()) ||
                               (v.name == "v4_tile_mask" && !ch06::bwd_v4_refuses<float>(w).empty()) ||
                               (v.name == "v5_chunk_writer" && !ch06::bwd_v5_refuses<float>(w).empty()) ||
                               (v.name == "v6_staged_tile" && !ch06::bwd_v6_refuses<float>(w).empty()) ||
                               (v.name == "v7_zero_then_store" && !ch06::bwd_v7_refuses<float>(w).empty()) ||
                               (v.name == "v8_slab_writer" && !ch06::bwd_v8_refuses<float>(w).empty()) ||
                               (v.name == "v9_ordered_tile" && !ch06::bwd_v9_refuses<float>(w).empty()) ||
                               (v.name == "v10_row_writer" && !ch06::bwd_v10_refuses<float>(w).empty()) ||
                               (v.name == "v11_window_gather" && !ch06::bwd_v11_refuses<float>(w).empty()) ||
                               (v.name == "v12_class_scatter" && !ch06::bwd_v12_refuses<float>(w).empty()) ||
                               (v.name == "v13_prefetch_rows" && !ch06::bwd_v13_refuses<float>(w).empty()) ||
                               (v.name == "v14_channel_gather" && !ch06::bwd_v14_refuses<float>(w).empty()) ||
                               (v.name == "v15_separable_stages" && !ch06::bwd_v15_refuses<float>(w).empty()) ||
                               (v.name == "v16_zeros_then_value" && !ch06::bwd_v16_refuses<float>(w).empty()) ||
                               (v.name == "v17_bulk_store" && !ch06::bwd_v17_refuses<float>(w).empty()) ||
                               (v.name == "v18_column_walk" && !ch06::bwd_v18_refuses<float>(w).empty()) ||
                               (v.name == "v19_fixed_point_tile" && !ch06::bwd_v19_refuses<float>(w).empty()) ||
                               (v.name == "v20_plane_fill" && !ch06::bwd_v20_refuses<float>(w).empty()) ||
                               (v.name == "v21_fixed_point_global" && !ch06::bwd_v21_refuses<float>(w).empty()) ||
                               (v.name == "v22_l2_plane_groups" && !ch06::bwd_v22_refuses<float>(w).empty()) ||
                               (v.name == "v23_lane_runs" && !ch06::bwd_v23_refuses<float>(w).empty()) ||
                               (v.name == "v24_flat_terms" && !ch06::bwd_v24_refuses<float>(w).empty()) ||
                               (v.name == "v25_clean_counters" && !ch06::bwd_v25_refuses<float>(w).empty()) ||
                               (v.name == "v26_marked_sectors" && !ch06::bwd_v26_refuses<float>(w).empty()) ||
                               (v.name == "v27_early_loads" && !ch06::bwd_v27_refuses<float>(w).empty()) ||
                               (v.name == "v29_lean_scale" && !ch06::bwd_v29_refuses<float>(w).empty());
          expected += refused ? 0 : own;
        }
      }
      CHECK(pairs == expected);
    }
  }

  TEST_CASE("the deterministic backwards give the same bits on every run; the scatter's need not" * tut::needs_gpu()) {
    // Overlapping windows, so that many outputs name the same input (up to 8 for kernel 3 stride 2,
    // 27 for kernel 3 stride 1, 512 for kernel 8 stride 1) and the scatter's atomics collide; dy is
    // overwritten with non-integer values, whose sums depend on the order of the additions. v1, v2,
    // v4, v6, v9 and v11 add in the same order (od, then oh, then ow ascending): the same bits, run after run;
    // v12 adds in its classes' order: the same bits run after run, not v1's.
    const auto& bwd = ch06::maxpool3d_backward_f32();
    const std::vector<ch06::Spec> setups = {
        {{4, 16, 12, 20, 20}, {3}, {1}, {1}, {1}, 0, "NCDHW", "int64"},
        {{2, 24, 10, 12, 14}, {3}, {1}, {1}, {1}, 0, "NDHWC", "compact"},
        {{2, 16, 14, 20, 22}, {3}, {2}, {1}, {1}, 0, "NCDHW", "compact"},
        {{1, 4, 16, 18, 20}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
        {{2, 16, 14, 20, 22}, {3}, {2}, {1}, {1}, 0, "NDHWC", "int64"},
        {{2, 8, 10, 12, 70}, {3}, {1}, {1}, {1}, 0, "NCDHW", "compact"},
    };
    const int runs = tut::under_sanitizer() ? 2 : 20;
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      INFO(c.name);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      std::vector<float> dy(static_cast<std::size_t>(w.out_numel()));
      tut::Random rng(7);
      for (std::size_t i = 0; i < dy.size(); ++i)
        dy[i] = static_cast<float>(rng.unit(i) * 2.0 - 1.0) * 1.0e-3f * static_cast<float>(1 + i % 1000);
      const auto dx_bytes = static_cast<std::size_t>(w.in_numel()) * sizeof(float);
      auto run = [&](const std::string& name) { return dx_after(bwd, name, *inst); };
      const auto as_floats = [&](const std::vector<unsigned char>& bytes) {
        std::vector<float> v(static_cast<std::size_t>(w.in_numel()));
        std::memcpy(v.data(), bytes.data(), dx_bytes);
        return v;
      };
      // How far two orders of the same float additions may fall apart at each element: each sum of n
      // terms lies within (n - 1) u S of the exact one (S the sum of the terms' magnitudes, u = 2^-24),
      // whatever the order or grouping, and a sum rounded once within u S. n and S come from v1 on
      // dy = 1 (a count, exact in float) and on |dy|.
      std::vector<float> ones(dy.size(), 1.0f), mags(dy.size());
      for (std::size_t i = 0; i < dy.size(); ++i) mags[i] = std::fabs(dy[i]);
      upload(*inst, "dy", ones);
      const auto terms = as_floats(run("v1_gather"));
      upload(*inst, "dy", mags);
      const auto magnitude = as_floats(run("v1_gather"));
      upload(*inst, "dy", dy);
      const auto apart_at_most = [&](std::size_t i) {
        return 2.0 * std::max(1.0, static_cast<double>(terms[i]) - 1.0) * std::ldexp(1.0, -24) * 1.001 *
               static_cast<double>(magnitude[i]);
      };
      std::map<std::string, std::vector<unsigned char>> first;
      const bool ordered = ch06::bwd_v9_refuses<float>(w).empty();  // not kernel 8 stride 1 (512 ranks)
      std::vector<const char*> names = {"v1_gather", "v2_marked_gather", "v4_tile_mask", "v6_staged_tile", "auto"};
      if (ordered) names.push_back("v9_ordered_tile");
      const bool window_gather = ch06::bwd_v11_refuses<float>(w).empty();  // at most 3 outputs per axis
      if (window_gather) names.push_back("v11_window_gather");
      if (ch06::bwd_v12_refuses<float>(w).empty()) names.push_back("v12_class_scatter");  // run to run only
      const bool channel_gather = ch06::bwd_v14_refuses<float>(w).empty();  // NDHWC, <= 2 outputs per axis
      if (channel_gather) names.push_back("v14_channel_gather");
      const bool separable = ch06::bwd_v15_refuses<float>(w).empty();  // stride 1, NCDHW
      if (separable) names.push_back("v15_separable_stages");
      const bool walk = ch06::bwd_v18_refuses<float>(w).empty();  // stride 1, NCDHW, cubic
      if (walk) names.push_back("v18_column_walk");
      if (ch06::bwd_v19_refuses<float>(w).empty()) names.push_back("v19_fixed_point_tile");  // NCDHW
      if (ch06::bwd_v21_refuses<float>(w).empty()) names.push_back("v21_fixed_point_global");
      if (ch06::bwd_v22_refuses<float>(w).empty()) names.push_back("v22_l2_plane_groups");
      if (ch06::bwd_v23_refuses<float>(w).empty()) names.push_back("v23_lane_runs");
      if (ch06::bwd_v24_refuses<float>(w).empty()) names.push_back("v24_flat_terms");
      if (ch06::bwd_v25_refuses<float>(w).empty()) names.push_back("v25_clean_counters");
      if (ch06::bwd_v26_refuses<float>(w).empty()) names.push_back("v26_marked_sectors");
      if (ch06::bwd_v27_refuses<float>(w).empty()) names.push_back("v27_early_loads");
      if (ch06::bwd_v29_refuses<float>(w).empty()) names.push_back("v29_lean_scale");
      for (const char* name : names) {
        first[name] = run(name);
        int differs = 0;
        for (int r = 0; r < runs; ++r) differs += run(name) != first[name];
        INFO(name);
        CHECK(differs == 0);
      }
      CHECK(first["v2_marked_gather"] == first["v1_gather"]);  // the same order of additions
      CHECK(first["v4_tile_mask"] == first["v1_gather"]);
      CHECK(first["v6_staged_tile"] == first["v1_gather"]);
      // auto takes v9 or v6 on overlapping windows, v18, v29 or v15 on stride-1 NCDHW ones: their
      // association (sums of partial sums, or v29's exact sums rounded once) is not v1's, so auto's
      // bits are compared with the bits of the version its rule names, and their values with v1's
      // within rounding.
      const ch06::BwdPick pick = ch06::bwd_pick(w);
      const bool stages = pick == ch06::BwdPick::v15_separable_stages || pick == ch06::BwdPick::v18_column_walk ||
                          pick == ch06::BwdPick::v29_lean_scale;
      CHECK(first["auto"] == first[stages ? ch06::bwd_pick_name(pick) : "v1_gather"]);
      if (ordered) CHECK(first["v9_ordered_tile"] == first["v1_gather"]);  // ranks in order: (od, oh, ow) ascending
      if (window_gather) CHECK(first["v11_window_gather"] == first["v1_gather"]);  // v1's loop, unrolled
      if (channel_gather) CHECK(first["v14_channel_gather"] == first["v1_gather"]);  // v1's order, 4 channels a thread
      const auto scatter_first = run("v0_scatter_atomic");
      int scatter_differs = 0;
      for (int r = 0; r < runs; ++r) scatter_differs += run("v0_scatter_atomic") != scatter_first;
      MESSAGE(c.name, ": the atomic scatter's dx differed from its first run's bits in ", scatter_differs, " of ", runs,
              " runs");
      // All of them agree up to the order of the additions; and some element has several terms (a
      // case where every element had one would make the comparison of bits meaningless).
      const auto g = as_floats(first["v1_gather"]), sc = as_floats(scatter_first);
      int far = 0, rounded_apart = 0;
      for (std::size_t i = 0; i < g.size(); ++i) {
        far += !(std::fabs(static_cast<double>(g[i]) - sc[i]) <= apart_at_most(i));
        rounded_apart += g[i] != sc[i];
      }
      CHECK(far == 0);
      CHECK(rounded_apart > 0);  // the order matters on this case: the test above can fail
      for (const char* stage_version : {"v15_separable_stages", "v18_column_walk", "v19_fixed_point_tile", "v21_fixed_point_global",
                                       "v22_l2_plane_groups", "v23_lane_runs", "v24_flat_terms", "v25_clean_counters",
                                       "v26_marked_sectors", "v27_early_loads", "v29_lean_scale"}) {
        if (!first.count(stage_version)) continue;
        const auto st = as_floats(first[stage_version]);
        int st_far = 0, st_apart = 0;
        for (std::size_t i = 0; i < g.size(); ++i) {
          st_far += !(std::fabs(static_cast<double>(g[i]) - st[i]) <= apart_at_most(i));
          st_apart += g[i] != st[i];
        }
        INFO(stage_version);
        CHECK(st_far == 0);
        MESSAGE(c.name, ": ", std::string(stage_version), " and v1 differ in the last bits at ", st_apart, " elements");
      }
      MESSAGE(c.name, ": the scatter's first run and v1 differ in the last bits at ", rounded_apart, " elements");
      for (const char* exact : {"v22_l2_plane_groups", "v23_lane_runs", "v24_flat_terms", "v25_clean_counters",
                                "v26_marked_sectors", "v27_early_loads", "v29_lean_scale"})  // exact sums, rounded once
        if (first.count(exact)) CHECK(first[exact] == first["v21_fixed_point_global"]);
    }
  }

  TEST_CASE("bwd v15 against the reference: every kernel 2 to 8, padding 0 to k / 2, tails of its tiles in D, H and W, tiny volumes" *
            tut::needs_gpu()) {
    // v15's tiles: kernels 2-5 TH 4 x TW 64 x LD 32 (int64) and 8 x 32 x 16 (compact), kernels
    // 6-8 16 x 32 x 32 (int64) and 16 x 16 x 32 (compact). The shapes leave a part-tile in each axis.
    const auto sweep = [](std::int64_t k) -> std::vector<std::int64_t> {
      const std::int64_t big = k <= 5 ? 0 : 1;
      return {1, 2, 33 + 4 * big, 13 + 4 * big + k, 67 - 30 * big};
    };
    tut::check_cases(only(ch06::backward_f32_problem(), {"v15_separable_stages", "auto"}), staged_cases(sweep, true));
    check_staged_refusals("v15_separable_stages", [](const ch06::Window& w) { return ch06::bwd_v15_refuses<float>(w); });
  }

  TEST_CASE("bwd v15 on indices that do not separate: random in-window cells and sparse corruption, exact" *
            tut::needs_gpu()) {
    // Indices no forward writes: terms of one stage's sum that name different cells, so v15's
    // planes fall back to the exact gather. dy whole numbers: exact in any order of the additions.
    const auto& bwd = ch06::maxpool3d_backward_f32();
    std::vector<Spec> setups = {{{2, 3, 13, 29, 70}, {3}, {1}, {1}, {1}, 0, "NCDHW", "int64"},
                                {{2, 3, 13, 29, 70}, {3}, {1}, {1}, {1}, 0, "NCDHW", "compact"},
                                {{1, 2, 19, 37, 45}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
                                {{1, 2, 19, 37, 45}, {8}, {1}, {3}, {1}, 0, "NCDHW", "compact"},
                                {{2, 2, 11, 12, 40}, {5}, {1}, {2}, {1}, 0, "NCDHW", "compact"}};
    if (tut::under_sanitizer()) setups.resize(2);
    for (const auto& setup : setups)
      for (const bool sparse : {false, true}) {
        const auto c = ch06::make_pool_case(setup, true);
        INFO(c.name, sparse ? " sparse corruption" : " random in-window cells");
        const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
        const auto& w = inst->window();
        const int K = w.k[0];
        const std::int64_t outs = w.out_numel(), plane = w.in_plane();
        tut::Random rng(sparse ? 11 : 13);
        // x random (no ties), the forward's winner per output; then, per output, a random cell of its
        // window inside the input (every output, or 1 in 500).
        std::vector<int> cell(static_cast<std::size_t>(outs));
        std::vector<float> dy(static_cast<std::size_t>(outs));
        std::vector<double> ref(static_cast<std::size_t>(w.in_numel()), 0.0);
        for (std::int64_t o = 0; o < outs; ++o) {
          const std::int64_t nc = o / w.out_plane(), r = o % w.out_plane();
          const int od = static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW));
          const int oh = static_cast<int>(r / w.oW % w.oH), ow = static_cast<int>(r % w.oW);
          std::vector<int> inside;
          int best = -1;
          double bv = -1.0;
          for (int cc = 0; cc < K * K * K; ++cc) {
            const int jd = cc / (K * K), jh = cc / K % K, jw = cc % K;
            const int d = od - w.p[0] + jd, h = oh - w.p[1] + jh, x = ow - w.p[2] + jw;
            if (d < 0 || d >= w.D || h < 0 || h >= w.H || x < 0 || x >= w.W) continue;
            inside.push_back(cc);
            const double v = rng.unit(static_cast<std::uint64_t>((nc * w.D + d) * w.H + h) * w.W + x);
            if (v > bv) bv = v, best = cc;
          }
          REQUIRE(!inside.empty());
          const std::uint64_t draw = rng.bits(static_cast<std::uint64_t>(o) + (std::uint64_t{1} << 40));
          const bool replace = !sparse || draw % 500 == 0;
          const int cc = replace ? inside[static_cast<std::size_t>((draw >> 16) % inside.size())] : best;
          cell[static_cast<std::size_t>(o)] = cc;
          dy[static_cast<std::size_t>(o)] = static_cast<float>(static_cast<int>(draw >> 40) % 17 - 8);
          const std::int64_t flat = w.flat_index(od, oh, ow, cc);
          ref[static_cast<std::size_t>(nc * plane + flat)] += dy[static_cast<std::size_t>(o)];
        }
        // Stage D's groups (n, c, d*, oh, ow) whose terms name different (h*, w*): planes that fall back.
        std::map<std::tuple<std::int64_t, int, std::int64_t>, int> named;
        int conflicts = 0;
        for (std::int64_t o = 0; o < outs; ++o) {
          const std::int64_t nc = o / w.out_plane(), r = o % w.out_plane();
          const int od = static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW));
          const int cc = cell[static_cast<std::size_t>(o)];
          const int ds = od - w.p[0] + cc / (K * K), hw = cc % (K * K);
          const auto key = std::make_tuple(nc, ds, r % (static_cast<std::int64_t>(w.oH) * w.oW));
          const auto it = named.find(key);
          if (it == named.end()) named[key] = hw;
          else conflicts += it->second != hw;
        }
        MESSAGE(c.name, sparse ? " sparse" : " random", ": ", conflicts, " outputs disagree with their stage-D group");
        CHECK(conflicts > 0);  // the fallback runs
        // Upload, in the case's format.
        upload(*inst, "dy", dy);
        upload_cells(*inst, cell);
        for (const char* name : {"v15_separable_stages", "v1_gather"}) {
          const auto bytes = dx_after(bwd, name, *inst);
          std::vector<float> dx(ref.size());
          std::memcpy(dx.data(), bytes.data(), bytes.size());
          int wrong = 0;
          for (std::size_t e = 0; e < dx.size(); ++e) wrong += static_cast<double>(dx[e]) != ref[e];
          INFO(name);
          CHECK(wrong == 0);
        }
      }
  }

  // A writer for windows that do not overlap, on each setup: the same bits on every run, v10's and
  // v1's bits, and v10's bits with 1 index in 7 replaced by a random one (int64: any cell of the
  // plane; compact: any offset of its type), each corruption changing dx. The setups: chunks in one
  // output (kernel 8 and 4), chunks over 2 outputs (kernel 2), gaps and padding (kernel 2 stride 3),
  // 2- and 1-element chunks (W = 18, W = 13: tails of rows), then the writer's `extra` ones; all in
  // the int64 format, then all in the compact one.
  template <class Refuses>
  void check_disjoint_writer(const std::vector<Spec>& extra, const char* version, Refuses refuses) {
    const auto& bwd = ch06::maxpool3d_backward_f32();
    std::vector<Spec> specs = {{{2, 8, 16, 32, 64}, {8}, {8}, {0}},  {{3, 7, 12, 20, 36}, {4}, {4}, {0}},
                               {{2, 6, 10, 14, 40}, {2}, {2}, {0}},  {{1, 5, 15, 20, 33}, {2}, {3}, {1}},
                               {{2, 3, 9, 12, 18}, {3}, {3}, {1}},   {{2, 3, 11, 9, 13}, {2, 3, 4}, {2, 3, 4}, {1, 1, 2}}};
    specs.insert(specs.end(), extra.begin(), extra.end());
    std::vector<Spec> setups;
    for (const char* idx : {"int64", "compact"})
      for (Spec s : specs) {
        s.indices = idx;
        setups.push_back(s);
      }
    if (tut::under_sanitizer()) setups.resize(3);
    const int runs = tut::under_sanitizer() ? 2 : 10;
    int differs_from_forward = 0;
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      INFO(c.name);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      REQUIRE(refuses(w).empty());
      std::vector<float> dy(static_cast<std::size_t>(w.out_numel()));
      tut::Random rng(29);
      for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(rng.unit(i) * 2.0 - 1.0);
      upload(*inst, "dy", dy);
      auto run = [&](const char* name) { return dx_after(bwd, name, *inst); };
      const auto first = run(version);
      int differs = 0;
      for (int r = 0; r < runs; ++r) differs += run(version) != first;
      CHECK(differs == 0);
      CHECK(first == run("v10_row_writer"));
      CHECK(first == run("v1_gather"));
      // Corrupt 1 index in 7, in the case's format.
      const std::int64_t outs = w.out_numel(), plane = w.in_plane();
      const auto corrupt = [&](auto& ix, auto value_of) {
        TUT_CUDA(cudaMemcpy(ix.data(), inst->operand(value_of.name).device(), ix.size() * sizeof(ix[0]), cudaMemcpyDeviceToHost));
        for (std::int64_t o = 0; o < outs; ++o) {
          const std::uint64_t draw = rng.bits(static_cast<std::uint64_t>(o) + (std::uint64_t{1} << 40));
          if (draw % 7 == 0) ix[static_cast<std::size_t>(o)] = value_of(draw >> 8);
        }
        TUT_CUDA(cudaMemcpy(inst->operand(value_of.name).device(), ix.data(), ix.size() * sizeof(ix[0]), cudaMemcpyHostToDevice));
      };
      struct Int64 { const char* name = "index"; std::int64_t plane; std::int64_t operator()(std::uint64_t d) const { return static_cast<std::int64_t>(d % static_cast<std::uint64_t>(plane)); } };
      struct Off8 { const char* name = "offset8"; std::uint8_t operator()(std::uint64_t d) const { return static_cast<std::uint8_t>(d); } };
      struct Off16 { const char* name = "offset16"; std::int16_t operator()(std::uint64_t d) const { return static_cast<std::int16_t>(d % 32768); } };
      if (w.indices == ch06::IndexFormat::int64) {
        std::vector<std::int64_t> ix(static_cast<std::size_t>(outs));
        Int64 f;
        f.plane = plane;
        corrupt(ix, f);
      } else if (w.compact8()) {
        std::vector<std::uint8_t> ix(static_cast<std::size_t>(outs));
        corrupt(ix, Off8{});
      } else {
        std::vector<std::int16_t> ix(static_cast<std::size_t>(outs));
        corrupt(ix, Off16{});
      }
      const auto bad = run(version);
      CHECK(bad == run("v10_row_writer"));
      differs_from_forward += bad != first;
    }
    CHECK(differs_from_forward == static_cast<int>(setups.size()));  // every corruption changed dx
  }

  TEST_CASE("bwd v16 on disjoint windows: v10's bits and v1's, the same bits every run, and v10's bits on corrupt indices" *
            tut::needs_gpu()) {
    // Zeros first, then the named cell's dy, by the same thread: the value must win every time, on
    // check_disjoint_writer's setups; on corrupt indices v16 must store what v10 stores.
    check_disjoint_writer({}, "v16_zeros_then_value", [](const ch06::Window& w) { return ch06::bwd_v16_refuses<float>(w); });
  }

  TEST_CASE("newest rungs: bwd v20 on disjoint windows: v10's bits and v1's, the same bits every run, and v10's bits on corrupt indices" *
            tut::needs_gpu()) {
    // A block's zeros and the values its other threads store after the barrier: a value lost to a
    // zero, or a zero left where a value belongs, changes the bits. The cases: a whole plane per span
    // (kernel 8 and 4), planes of several spans (H = 600, W = 9: 455 rows a span; kernel 1 on W =
    // 100), spans whose ends are not 16-byte aligned (W = 18, 13, 9), gaps and padding, ceil mode,
    // both formats; then 1 index in 7 replaced by a random one: v20 must store what v10 stores.
    check_disjoint_writer({{{1, 2, 4, 600, 9}, {2}, {2}, {0}}, {{2, 3, 6, 90, 100}, {1}, {1}, {0}},
                           {{2, 3, 10, 10, 9}, {3}, {3}, {1}, {1}, 1}},
                          "v20_plane_fill", [](const ch06::Window& w) { return ch06::bwd_v20_refuses<float>(w); });
  }

  TEST_CASE("bwd v17 on disjoint windows: v10's bits and v1's, the same bits every run, and v10's bits on corrupt indices" *
            tut::needs_gpu()) {
    // Spans built in shared memory and copied in bulk, their stages reused every 4 units: a cell
    // left over from an earlier unit, or a copy read before its cells were set, changes the bits.
    // The cases: whole planes per unit (kernel 8 and 4), several units per plane (kernel 1, W =
    // 100: 5 output rows per unit), gaps and padding (kernel 2 stride 3), spans whose ends are not
    // 16-byte aligned (W = 18, 13, 9: stored by threads), ceil mode, both formats. Then 1 index in 7
    // replaced by a random one (int64: any cell of the plane; compact: any offset of its type): v17
    // must store what v10 stores.
    check_disjoint_writer({{{2, 3, 6, 90, 100}, {1}, {1}, {0}}, {{2, 3, 10, 10, 9}, {3}, {3}, {1}, {1}, 1}}, "v17_bulk_store",
                          [](const ch06::Window& w) { return ch06::bwd_v17_refuses<float>(w); });
  }

  TEST_CASE("the grader rejects known-wrong solutions" * tut::needs_gpu()) {
    // The source's version 2 was right on its own cases, padding 0 in floor mode ...
    const auto no_pad = ch06::make_pool_case({{1, 2, 5, 6, 7}, {3}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, false);
    CHECK(grade_wrong(&ch06::wrong::source_v2_no_bounds<3>, no_pad).ok());
    // ... and is wrong with padding 1, in the values and in the indices ...
    const auto pad = ch06::make_pool_case({{1, 2, 5, 6, 7}, {3}, {2}, {1}, {1}, 0, "NCDHW", "int64"}, false);
    const auto r = grade_wrong(&ch06::wrong::source_v2_no_bounds<3>, pad);
    CHECK_FALSE(r["y"].ok());
    CHECK_FALSE(r["index"].ok());
    // ... and with ceil_mode, where the last window reaches past the input.
    const auto ceil = ch06::make_pool_case({{1, 2, 8, 8, 8}, {3}, {2}, {0}, {1}, 1, "NCDHW", "none"}, false);
    CHECK_FALSE(grade_wrong(&ch06::wrong::source_v2_no_bounds<3>, ceil).ok());
    // Ties resolved to the last maximum: the values pass, the indices do not.
    const auto ties = ch06::make_pool_case({{2, 3, 9, 10, 11}, {3}, {2}, {1}, {1}, 0, "NCDHW", "int64"}, false);
    const auto t = grade_wrong(&ch06::wrong::last_of_ties, ties);
    CHECK(t["y"].ok());
    CHECK_FALSE(t["index"].ok());
    // fmaxf drops NaN instead of propagating it.
    const auto plain = ch06::make_pool_case({{2, 3, 9, 10, 11}, {3}, {2}, {1}, {1}, 0, "NCDHW", "none"}, false);
    CHECK_FALSE(grade_wrong(&ch06::wrong::fmax_drops_nan, plain).ok());
  }

  TEST_CASE("a version that refuses a case says so instead of failing it" * tut::needs_gpu()) {
    const auto& p = ch06::maxpool3d_f32();
    const auto c = ch06::make_pool_case({{1, 2, 6, 7, 8}, {3}, {2}, {1}, {1}, 0, "NDHWC", "none"}, false);
    CHECK_THROWS_AS(tut::grade(p, version_named(p, "v1_unrolled"), c), tut::Unsupported);  // NCDHW only
    const auto d = ch06::make_pool_case({{1, 2, 6, 7, 8}, {3}, {1}, {1}, {2}, 0, "NCDHW", "none"}, false);
    CHECK_THROWS_AS(tut::grade(p, version_named(p, "v2_interior_border"), d), tut::Unsupported);  // dilation 1
    const auto& dispatcher = version_named(p, "auto");
    CHECK(tut::grade(p, dispatcher, d).ok());  // auto takes it
  }

  TEST_CASE("the exercise's cases: a correct unrolled kernel passes them, the source's v2 fails" * tut::needs_gpu()) {
#if TUT_EXERCISES
    constexpr std::int64_t K = exercise::kKernel;
#else
    constexpr std::int64_t K = 5;
#endif
    const auto cases = exercise_cases(K);
    const auto& p = ch06::maxpool3d_f32();
    const auto& v1 = version_named(p, "v1_unrolled");
    for (const auto& c : cases) {
      const auto r = tut::grade(p, v1, c);
      CHECK_MESSAGE(r.ok(), c.name, ": ", r.summary());
    }
    // The source's v2 for this window size, on a small case with padding 1.
    const auto pad1 = ch06::make_pool_case({{1, 2, K + 1, K + 2, K + 3}, {K}, {2}, {1}, {1}, 0, "NCDHW", "int64"}, false);
    CHECK_FALSE(grade_wrong(&ch06::wrong::source_v2_no_bounds<K>, pad1).ok());
#if TUT_EXERCISES
    std::vector<tut::Version<ch06::FwdInst<float>>> mine;
    for (const auto& v : p.versions)
      if (v.kind == tut::Kind::exercise) mine.push_back(v);
    REQUIRE(mine.size() == 1);
    for (const auto& c : cases) {
      const auto r = tut::grade(p, mine[0], c);
      CHECK_MESSAGE(r.ok(), "your unrolled_padded on ", c.name, ": ", r.summary());
    }
#endif
  }
}

// More than 2^31 elements: 32-bit element indexing would wrap here. Run with
// `meson test -C build --suite large`. The first case's planes fit 32-bit offsets and its output
// does not pass 2^31 (the next three read the same input as windows that are one run, for v9 and
// v10, as rows of 16-byte pieces, for v14, and as v15's packs, which then take a 1x1x1 window
// whose output passes 2^31); the fifth's output does (a 1x1x1 window copies the input), so the
// 64-bit decoding paths run. The sixth is the backward of the first: its dx has the 2^31 + 33 Mi elements,
// and its windows do not overlap, so every backward that takes it writes the same bytes.
TEST_SUITE("large") {
  TEST_CASE("maxpool3d_f32: every version on a 2^31 + 33 Mi-element input" *
            tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(forward_problem_taking("NCDHW"),
                      ch06::make_pool_case({{2, 16, 256, 512, 520}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, false));
  }
  TEST_CASE("maxpool3d_f32: windows that are one run of their plane (8 rows of 520), on a 2^31 + 33 Mi-element input" *
            tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(only(ch06::forward_f32_problem(), {"v0_naive", "v9_run_reduce", "v10_max_first", "auto"}),
                      ch06::make_pool_case({{2, 16, 256, 512, 520}, {1, 8, 520}, {1, 8, 520}, {0}, {1}, 0, "NCDHW", "int64"}, false));
  }
  TEST_CASE("maxpool3d_f32: v14's pieces (kernel 2 x 8 x 8, rows of 65 outputs), on a 2^31 + 33 Mi-element input" *
            tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(only(ch06::forward_f32_problem(), {"v14_row_lanes", "auto"}),
                      ch06::make_pool_case({{2, 16, 256, 512, 520}, {2, 8, 8}, {2, 8, 8}, {0}, {1}, 0, "NCDHW", "int64"}, false));
  }
  TEST_CASE("maxpool3d_f32: v15's packs (kernel 2 with an int64 index; kernel 1 along W, an output past 2^31), on a 2^31 + 33 Mi-element input" *
            tut::needs_gpu_memory(std::size_t{64} << 30)) {
    const auto v15 = only(ch06::forward_f32_problem(), {"v15_packs_max_first"});
    tut::check_all_at(v15, ch06::make_pool_case({{2, 16, 256, 512, 520}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, false));
    tut::check_all_at(v15, ch06::make_pool_case({{1, 5, 1, 20000, 22000}, {1}, {1}, {0}, {1}, 0, "NCDHW", "none"}, false));
  }
  TEST_CASE("maxpool3d_f32: an output of more than 2^31 elements, both layouts" *
            tut::needs_gpu_memory(std::size_t{64} << 30)) {
    for (const char* layout : {"NCDHW", "NDHWC"})
      tut::check_all_at(forward_problem_taking(layout),
                        ch06::make_pool_case({{1, 5, 1, 20000, 22000}, {1}, {1}, {0}, {1}, 0, layout, "compact"}, false));
  }
  TEST_CASE("maxpool3d_backward_f32: every version on a dx of 2^31 + 33 Mi elements" *
            tut::needs_gpu_memory(std::size_t{48} << 30)) {
    tut::check_all_at(ch06::maxpool3d_backward_f32(),
                      ch06::make_pool_case({{2, 16, 256, 512, 520}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, true));
  }
}

// bwd v18 (the column walk): the reference on every kernel it takes, exact on indices no forward
// writes, and the same bits on every run.
TEST_SUITE("gpu") {
  TEST_CASE("newest rungs: bwd v18 against the reference (kernels 2 to 8, padding 0 to k / 2, tails, both formats), exact on indices that do not separate, the same bits every run" *
            tut::needs_gpu()) {
    const auto& bwd = ch06::maxpool3d_backward_f32();
    // Its tiles: kernels 2-5 TH 8 x TW 32, kernels 6-8 16 x 32; 32 planes per block. The shapes
    // leave a part-tile in each axis; the one with D = 70 walks three chunks.
    const auto sweep = [](std::int64_t k) -> std::vector<std::int64_t> {
      const std::int64_t big = k <= 5 ? 0 : 1;
      return {1, 2, 35 + 4 * big, 11 + 6 * big + k, 69 - 30 * big};
    };
    tut::check_cases(only(ch06::backward_f32_problem(), {"v18_column_walk"}), staged_cases(sweep, false));
    check_staged_refusals("v18_column_walk", [](const ch06::Window& w) { return ch06::bwd_v18_refuses<float>(w); });

    // Indices no forward writes (a random cell of each output's window inside the input, for every
    // output or 1 in 300) with whole-number dy, exact in any order: v18 must give v1's bytes. Then
    // the forward's own indices with non-integer dy: the same bits on every run.
    std::vector<Spec> setups = {{{1, 2, 19, 37, 45}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
                                {{1, 2, 19, 37, 45}, {8}, {1}, {3}, {1}, 0, "NCDHW", "compact"},
                                {{2, 3, 13, 29, 70}, {3}, {1}, {1}, {1}, 0, "NCDHW", "compact"},
                                {{2, 2, 11, 12, 40}, {5}, {1}, {2}, {1}, 0, "NCDHW", "int64"}};
    if (tut::under_sanitizer()) setups.resize(2);
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      const int K = w.k[0];
      const std::int64_t outs = w.out_numel();
      const auto dx_bytes = static_cast<std::size_t>(w.in_numel()) * sizeof(float);
      auto run = [&](const char* name) { return dx_after(bwd, name, *inst); };
      {  // the same bits every run, on the forward's indices
        INFO(c.name, " non-integer dy");
        std::vector<float> dy(static_cast<std::size_t>(outs));
        tut::Random rng(17);
        for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(rng.unit(i) * 2.0 - 1.0);
        upload(*inst, "dy", dy);
        const auto first = run("v18_column_walk");
        for (int r = 0; r < (tut::under_sanitizer() ? 1 : 5); ++r) CHECK(run("v18_column_walk") == first);
      }
      for (const bool sparse : {false, true}) {
        INFO(c.name, sparse ? " sparse corruption" : " random in-window cells");
        tut::Random rng(sparse ? 23 : 19);
        std::vector<float> dy(static_cast<std::size_t>(outs));
        std::vector<int> cell(static_cast<std::size_t>(outs));
        int replaced = 0;
        for (std::int64_t o = 0; o < outs; ++o) {
          const std::int64_t r = o % w.out_plane();
          const int od = static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW));
          const int oh = static_cast<int>(r / w.oW % w.oH), ow = static_cast<int>(r % w.oW);
          std::vector<int> inside;
          for (int cc = 0; cc < K * K * K; ++cc) {
            const int d = od - w.p[0] + cc / (K * K), h = oh - w.p[1] + cc / K % K, x = ow - w.p[2] + cc % K;
            if (d >= 0 && d < w.D && h >= 0 && h < w.H && x >= 0 && x < w.W) inside.push_back(cc);
          }
          REQUIRE(!inside.empty());
          const std::uint64_t draw = rng.bits(static_cast<std::uint64_t>(o));
          // the first inside cell unless replaced: planes that separate, and some that do not
          const bool replace = !sparse || draw % 300 == 0;
          replaced += replace;
          const int cc = inside[replace ? static_cast<std::size_t>((draw >> 16) % inside.size()) : 0];
          cell[static_cast<std::size_t>(o)] = cc;
          dy[static_cast<std::size_t>(o)] = static_cast<float>(static_cast<int>(draw >> 40) % 17 - 8);
        }
        CHECK(replaced > 0);
        upload(*inst, "dy", dy);
        upload_cells(*inst, cell);
        const auto gather = run("v1_gather");
        const auto mine = run("v18_column_walk");
        std::size_t apart = 0;
        for (std::size_t e = 0; e < dx_bytes; e += 4) apart += std::memcmp(&gather[e], &mine[e], 4) != 0;
        CHECK(apart == 0);
        CHECK(run("v18_column_walk") == mine);
      }
    }
  }
}

// bwd v19 (the fixed-point tile): the reference everywhere it takes a case; on non-integer dy each
// cell its exact sum rounded once; v1's bits where a block's dy are too wide for 63 bits or not
// finite; the same bits on every run.
namespace {

// The exact sum of `terms` rounded once to float (to nearest, ties to even), computed in 128-bit
// integers in units of the terms' lowest set bit; nullopt when their span does not fit.
std::optional<float> exact_rounded(const std::vector<float>& terms) {
  int unit = INT_MAX, top = INT_MIN;
  for (const float t : terms) {
    if (t == 0.0f) continue;
    int e = 0;
    const float f = std::frexp(std::fabs(t), &e);  // |t| = f * 2^e, f in [0.5, 1)
    const auto m = static_cast<std::uint32_t>(std::ldexp(f, 24));
    unit = std::min(unit, e - 24 + __builtin_ctz(m));
    top = std::max(top, e);
  }
  if (unit == INT_MAX) return 0.0f;
  if (top - unit + 12 > 126) return std::nullopt;
  __int128 sum = 0;
  for (const float t : terms) {
    if (t == 0.0f) continue;
    int e = 0;
    const float f = std::frexp(t, &e);
    auto m = static_cast<std::int64_t>(std::ldexp(f, 24));  // signed, |m| < 2^24
    int low = e - 24;
    while (m % 2 == 0) m /= 2, ++low;  // m odd: t = m * 2^low, low >= unit
    sum += static_cast<__int128>(m) * (static_cast<__int128>(1) << (low - unit));
  }
  const bool neg = sum < 0;
  unsigned __int128 mag = neg ? -static_cast<unsigned __int128>(sum) : static_cast<unsigned __int128>(sum);
  if (mag == 0) return 0.0f;
  int bits = 0;
  for (unsigned __int128 v = mag; v; v >>= 1) ++bits;
  int shift = std::max(0, bits - 24);
  if (shift > 0) {
    const unsigned __int128 q = mag >> shift, rem = mag - (q << shift), half = static_cast<unsigned __int128>(1) << (shift - 1);
    mag = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
  }
  const float r = std::ldexp(static_cast<float>(static_cast<std::uint64_t>(mag)), unit + shift);
  return neg ? -r : r;
}

// Each output's cell: the forward's choice on a random input with no ties (the first of the
// largest), as an offset in its window.
std::vector<int> forward_cells(const ch06::Window& w, std::uint64_t seed) {
  tut::Random rng(seed);
  std::vector<int> cell(static_cast<std::size_t>(w.out_numel()));
  for (std::int64_t o = 0; o < w.out_numel(); ++o) {
    const std::int64_t nc = o / w.out_plane(), r = o % w.out_plane();
    const int od = static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW));
    const int oh = static_cast<int>(r / w.oW % w.oH), ow = static_cast<int>(r % w.oW);
    int best = -1;
    double bv = -1.0;
    for (int cc = 0; cc < w.cells(); ++cc) {
      const int jd = cc / (w.k[1] * w.k[2]), jh = cc / w.k[2] % w.k[1], jw = cc % w.k[2];
      const int d = od * w.s[0] - w.p[0] + jd, h = oh * w.s[1] - w.p[1] + jh, x = ow * w.s[2] - w.p[2] + jw;
      if (d < 0 || d >= w.D || h < 0 || h >= w.H || x < 0 || x >= w.W) continue;
      const double v = rng.unit(static_cast<std::uint64_t>((nc * w.D + d) * w.H + h) * w.W + x);
      if (v > bv) bv = v, best = cc;
    }
    cell[static_cast<std::size_t>(o)] = best;
  }
  return cell;
}

}  // namespace

namespace {

// The fixed-point versions, v19 (a block's tile) and v21 (global counters), on the same checks: the
// reference on every case the version takes, its refusals, each cell's exact sum rounded once on
// non-integer dy, v1's bits where dy do not fit 63 bits (a tile for v19, a plane for v21) while the
// rest stays exact, and the same bits every run.
void check_fixed_point(const char* name, std::string (*refuses)(const ch06::Window&)) {
  const auto& bwd = ch06::maxpool3d_backward_f32();
  // v19's tiles: 64 cells along W, 16 along H, 8 along D on these shapes; each leaves a part-tile.
  const auto sweep = [](std::int64_t k) -> std::vector<std::int64_t> { return {1, 2, 11 + k, 13 + k, 70}; };
  const auto mine_only = only(ch06::backward_f32_problem(), {name});
  tut::check_cases(mine_only, staged_cases(sweep, true));
  std::vector<tut::Case> more;
  for (Spec s : std::vector<Spec>{{{2, 3, 17, 30, 33}, {3}, {2}, {1}},            // the stem's window
                                  {{1, 2, 12, 21, 75}, {2, 3, 4}, {1, 2, 1}, {1, 1, 2}},  // not cubic
                                  {{1, 2, 20, 22, 24}, {8}, {3}, {4}},            // kernel 8 stride 3
                                  {{2, 2, 40, 9, 5}, {3}, {1}, {1}},              // W = 5: deep tiles
                                  {{1, 1, 16, 16, 16}, {12}, {1}, {6}}})          // 1728 terms per cell
    for (const char* idx : {"int64", "compact"}) {
      s.indices = idx;
      more.push_back(ch06::make_pool_case(s, true));
    }
  if (tut::under_sanitizer()) more.resize(4);
  tut::check_cases(mine_only, more);
  for (Spec s : std::vector<Spec>{{{1, 2, 9, 10, 11}, {3}, {1}, {1}, {2}},               // dilation 2
                                  {{1, 2, 9, 10, 11}, {3}, {1}, {1}, {1}, 0, "NDHWC"},   // NDHWC
                                  {{1, 1, 14, 14, 14}, {13}, {1}, {6}}}) {               // 2197 terms per cell
    s.indices = "int64";
    const auto c = ch06::make_pool_case(s, true);
    INFO(c.name);
    CHECK_FALSE(refuses(ch06::window_of_case(c)).empty());
    CHECK_THROWS_AS(tut::grade(bwd, version_named(bwd, name), c), tut::Unsupported);
  }

  std::vector<Spec> setups = {{{1, 2, 19, 21, 70}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
                              {{1, 2, 19, 21, 70}, {8}, {1}, {4}, {1}, 0, "NCDHW", "compact"},
                              {{2, 3, 13, 29, 70}, {3}, {1}, {1}, {1}, 0, "NCDHW", "int64"},
                              {{2, 3, 17, 30, 33}, {3}, {2}, {1}, {1}, 0, "NCDHW", "compact"}};
  if (tut::under_sanitizer()) setups.resize(2);
  for (const auto& setup : setups) {
    const auto c = ch06::make_pool_case(setup, true);
    const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
    const auto& w = inst->window();
    const std::int64_t outs = w.out_numel(), cells_in = w.in_numel();
    const auto cell = forward_cells(w, 29);
    upload_cells(*inst, cell);
    auto run = [&](const char* version) {
      const auto bytes = dx_after(bwd, version, *inst);
      std::vector<float> v(static_cast<std::size_t>(cells_in));
      std::memcpy(v.data(), bytes.data(), bytes.size());
      return v;
    };
    const auto same_bits = [](float x, float y) { return std::memcmp(&x, &y, sizeof(float)) == 0; };
    // Each input element's terms, in the order of the outputs.
    const auto terms_of = [&](const std::vector<float>& dy) {
      std::vector<std::vector<float>> terms(static_cast<std::size_t>(cells_in));
      for (std::int64_t o = 0; o < outs; ++o) {
        const std::int64_t nc = o / w.out_plane(), r = o % w.out_plane();
        const std::int64_t flat = w.flat_index(static_cast<int>(r / (static_cast<std::int64_t>(w.oH) * w.oW)),
                                               static_cast<int>(r / w.oW % w.oH), static_cast<int>(r % w.oW),
                                               cell[static_cast<std::size_t>(o)]);
        terms[static_cast<std::size_t>(nc * w.in_plane() + flat)].push_back(dy[static_cast<std::size_t>(o)]);
      }
      return terms;
    };
    tut::Random rng(31);
    std::vector<float> dy(static_cast<std::size_t>(outs));
    for (std::size_t i = 0; i < dy.size(); ++i) {  // non-integer, |dy| in [1/16, 1]: no block falls back
      const double u = rng.unit(i);
      dy[i] = static_cast<float>((u < 0.5 ? -1.0 : 1.0) * (0.0625 + 0.9375 * rng.unit(i + (std::uint64_t{1} << 40))));
    }
    {
      INFO(c.name, " non-integer dy");
      upload(*inst, "dy", dy);
      const auto mine = run(name), gather = run("v1_gather");
      const auto terms = terms_of(dy);
      int wrong = 0, v1_apart = 0;
      for (std::size_t e = 0; e < mine.size(); ++e) {
        const auto want = exact_rounded(terms[e]);
        REQUIRE(want.has_value());
        wrong += !same_bits(mine[e], *want);
        v1_apart += !same_bits(gather[e], *want);
      }
      CHECK(wrong == 0);
      MESSAGE(c.name, ": v1's float sums differ from the exactly rounded ones at ", v1_apart, " elements");
      CHECK(v1_apart > 0);  // float sums are not exact here: the check above can fail
      for (int r = 0; r < (tut::under_sanitizer() ? 1 : 5); ++r) CHECK(run(name) == mine);
    }
    {
      INFO(c.name, " dy with tiny values, a NaN and an infinity, all in the first plane");
      std::vector<float> wide = dy;
      const auto plane = static_cast<std::size_t>(w.out_plane());
      for (std::size_t i = 0; i < plane; i += 211) wide[i] = 1.0e-30f;  // too wide for 63 bits
      wide[plane / 3] = std::numeric_limits<float>::quiet_NaN();
      wide[2 * plane / 3] = std::numeric_limits<float>::infinity();
      upload(*inst, "dy", wide);
      const auto mine = run(name), gather = run("v1_gather");
      const auto terms = terms_of(wide);
      int wrong = 0, fell_back = 0, kept_exact = 0, nan_mine = 0, nan_gather = 0;
      for (std::size_t e = 0; e < mine.size(); ++e) {
        nan_mine += std::isnan(mine[e]);
        nan_gather += std::isnan(gather[e]);
        const auto want = exact_rounded(terms[e]);
        const bool as_v1 = same_bits(mine[e], gather[e]) || (std::isnan(mine[e]) && std::isnan(gather[e]));
        const bool exact = want.has_value() && same_bits(mine[e], *want);
        wrong += !as_v1 && !exact;
        fell_back += as_v1 && want.has_value() && !same_bits(gather[e], *want);
        kept_exact += exact && !as_v1;
      }
      CHECK(wrong == 0);
      CHECK(nan_mine == nan_gather);
      CHECK(nan_gather > 0);
      CHECK(fell_back > 0);   // some tile or plane took v1's gather, seen where v1's sums are not exact
      CHECK(kept_exact > 0);  // and the others kept their exact sums, seen where v1's are not
      for (int r = 0; r < (tut::under_sanitizer() ? 1 : 3); ++r) {
        const auto again = run(name);
        CHECK(std::memcmp(again.data(), mine.data(), mine.size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("newest rungs: bwd v19 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits where it falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v19_fixed_point_tile", &ch06::bwd_v19_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v21 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v21_fixed_point_global", &ch06::bwd_v21_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v22 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v22_l2_plane_groups", &ch06::bwd_v22_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v23 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v23_lane_runs", &ch06::bwd_v23_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v24 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v24_flat_terms", &ch06::bwd_v24_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v25 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v25_clean_counters", &ch06::bwd_v25_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v26 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v26_marked_sectors", &ch06::bwd_v26_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v27 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v27_early_loads", &ch06::bwd_v27_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v29 against the reference (kernels 2 to 8, strides 1 to 3, padding, tails, both formats), exactly rounded sums, v1's bits on a plane that falls back, the same bits every run" *
            tut::needs_gpu()) {
    check_fixed_point("v29_lean_scale", &ch06::bwd_v29_refuses<float>);
  }
  TEST_CASE("newest rungs: bwd v25, v26, v27 and v29 leave their counters and marks zero: one scratch, launch after launch on new indices and dy (a plane that falls back, all-zero dy), each dx v24's bits" *
            tut::needs_gpu()) {
    // Their kernel 1 does not zero the counters: each launch must leave the scratch as it found it.
    // The scratch is kept here across launches, as a trial keeps its workspace; after each launch
    // its counters and marks are read back and must be all zero, and dx must be what v24 gives on
    // a fresh scratch.
    const auto& bwd = ch06::maxpool3d_backward_f32();
    std::vector<Spec> setups = {{{1, 3, 19, 21, 70}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},    // even planes
                                {{2, 3, 13, 29, 33}, {3}, {1}, {1}, {1}, 0, "NCDHW", "compact"},  // odd planes
                                {{1, 2, 16, 16, 16}, {5}, {2}, {2}, {1}, 0, "NCDHW", "int64"}};   // planes of 4k cells
    if (tut::under_sanitizer()) setups.resize(2);
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      const auto dx_bytes = static_cast<std::size_t>(w.in_numel()) * sizeof(float);
      const auto check = [&](const char* name, bool marks, auto launch) {
        const auto m = ch06::glob_scratch(w, w.N * w.C, ch06::kGlobMaxParts, marks);
        tut::DeviceBuffer<unsigned char> scratch(m.bytes);
        TUT_CUDA(cudaMemset(scratch.data(), 0, scratch.bytes()));
        for (int round = 0; round < (tut::under_sanitizer() ? 2 : 5); ++round) {
          INFO(c.name, " ", name, " launch ", round);
          upload_cells(*inst, forward_cells(w, 50 + round));
          tut::Random rng(60 + round);
          std::vector<float> dy(static_cast<std::size_t>(w.out_numel()));
          for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = round == 3 ? 0.0f : static_cast<float>(rng.unit(i) * 2.0 - 1.0);
          if (round == 1) {  // plane 0 too wide for 63 bits, with a NaN: it falls back to v1's gather
            for (std::size_t i = 0; i < static_cast<std::size_t>(w.out_plane()); i += 97) dy[i] = 1.0e-30f;
            dy[5] = std::numeric_limits<float>::quiet_NaN();
          }
          upload(*inst, "dy", dy);
          const auto want = dx_after(bwd, "v24_flat_terms", *inst);
          TUT_CUDA(cudaMemset(inst->operand("dx").device(), 0xCD, dx_bytes));
          launch(scratch);
          TUT_CUDA(cudaDeviceSynchronize());
          std::vector<unsigned char> got(dx_bytes);
          TUT_CUDA(cudaMemcpy(got.data(), inst->operand("dx").device(), dx_bytes, cudaMemcpyDeviceToHost));
          CHECK(got == want);
          std::vector<unsigned char> left(m.parts);  // the counters, and v26's marks after them
          TUT_CUDA(cudaMemcpy(left.data(), scratch.data(), left.size(), cudaMemcpyDeviceToHost));
          CHECK(std::count(left.begin(), left.end(), 0) == static_cast<std::ptrdiff_t>(left.size()));
        }
      };
      check("v25_clean_counters", false, [&](tut::DeviceBuffer<unsigned char>& s) {
        ch06::bwd_v25_clean_counters<float>(nullptr, inst->args(), s.data(), s.bytes());
      });
      check("v26_marked_sectors", true, [&](tut::DeviceBuffer<unsigned char>& s) {
        ch06::bwd_v26_marked_sectors<float>(nullptr, inst->args(), s.data(), s.bytes());
      });
      check("v27_early_loads", false, [&](tut::DeviceBuffer<unsigned char>& s) {
        ch06::bwd_v27_early_loads<float>(nullptr, inst->args(), s.data(), s.bytes());
      });
      check("v29_lean_scale", false, [&](tut::DeviceBuffer<unsigned char>& s) {
        ch06::bwd_v29_lean_scale<float>(nullptr, inst->args(), s.data(), s.bytes());
      });
    }
  }
  TEST_CASE("newest rungs: bwd v29's kernel 1 gives v21's partials, block by block: zeros, subnormals, powers of two, one-bit mantissas, the whole exponent range, NaN and Inf" *
            tut::needs_gpu()) {
    // v29 finds each plane's top bit and lowest set bit from unsigned keys instead of v19's parts;
    // the partials must be v21's wherever the plane's dy are finite (where one is not, only the
    // flag is used). Both kernels run on one dy with the same grid and each block's partial is
    // compared. The first shape leaves blocks with part-strips and none; the second makes each
    // block loop over two strips.
    const auto& bwd = ch06::maxpool3d_backward_f32();
    const std::vector<Spec> setups = {{{1, 9, 40, 41, 43}, {2}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
                                      {{1, 9, 64, 64, 66}, {1}, {1}, {0}, {1}, 0, "NCDHW", "int64"}};
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      INFO(c.name);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      const auto plane = static_cast<std::size_t>(w.out_plane());
      const std::int64_t planes = w.N * w.C;
      REQUIRE(planes == 9);
      tut::Random rng(91);
      std::vector<float> dy(static_cast<std::size_t>(w.out_numel()), 0.0f);  // plane 0: all zero
      const auto bits = [&](std::size_t i, std::uint32_t lo, std::uint32_t hi) {  // a random pattern in [lo, hi]
        return lo + static_cast<std::uint32_t>(rng.unit(i) * (static_cast<double>(hi - lo) + 1.0)) % (hi - lo + 1);
      };
      for (std::size_t i = 0; i < plane; ++i) {
        const std::uint32_t sign = rng.unit(i + 7 * plane) < 0.5 ? 0x80000000u : 0u;
        const auto f = [](std::uint32_t u) { float v; std::memcpy(&v, &u, 4); return v; };
        dy[1 * plane + i] = i % 3 ? f(sign | bits(i, 1, 0x7FFFFF)) : 0.0f;             // subnormals and zeros
        dy[2 * plane + i] = f(sign | (bits(i, 1, 254) << 23));                          // powers of two, every exponent
        dy[3 * plane + i] = f(sign | (bits(i, 1, 254) << 23) | (1u << (i % 23)));      // one bit below the implicit one
        dy[4 * plane + i] = f(sign | bits(i, 0, 0x7F7FFFFF));                           // any finite float
        dy[5 * plane + i] = f(sign | (bits(i, 100, 126) << 23) | (bits(i, 0, 0x7FFFFF) & ~0xFFFu));  // 27 binades, coarse bits
        dy[6 * plane + i] = i % 5 ? f(sign | bits(i, 0x3F800000, 0x40000000)) : 0.0f;  // [1, 2], zeros
        dy[7 * plane + i] = f(bits(i, 0x3F800000, 0x40000000));
        dy[8 * plane + i] = f(bits(i, 0x3F800000, 0x40000000));
      }
      dy[5 * plane + plane / 2] = 1.0e-45f;  // the smallest subnormal in a plane of coarse values
      dy[7 * plane + plane - 1] = std::numeric_limits<float>::quiet_NaN();
      dy[8 * plane + 1] = -std::numeric_limits<float>::infinity();
      upload(*inst, "dy", dy);
      ch06::GlobArgs g;
      g.first = 0;
      g.count = planes;
      g.parts = ch06::glob_parts(w, planes, ch06::kGlobMaxParts);
      const auto n = static_cast<std::size_t>(planes * g.parts);
      tut::DeviceBuffer<ch06::FixBits> p21(n), p29(n);
      tut::DeviceBuffer<unsigned long long> unused(1);
      const dim3 grid(static_cast<unsigned>(g.parts), static_cast<unsigned>(planes));
      const auto* d = static_cast<const float*>(inst->operand("dy").device());
      ch06::bwd_v21_scale_kernel<false, float><<<grid, ch06::kGlobBlock>>>(d, w, g, p21.data(), unused.data());
      TUT_CHECK_LAUNCH("bwd_v21_scale_kernel");
      ch06::bwd_v29_scale_kernel<float><<<grid, ch06::kGlobBlock>>>(d, w, g, p29.data(), unused.data());
      TUT_CHECK_LAUNCH("bwd_v29_scale_kernel");
      TUT_CUDA(cudaDeviceSynchronize());
      std::vector<ch06::FixBits> a(n), b(n);
      TUT_CUDA(cudaMemcpy(a.data(), p21.data(), n * sizeof(ch06::FixBits), cudaMemcpyDeviceToHost));
      TUT_CUDA(cudaMemcpy(b.data(), p29.data(), n * sizeof(ch06::FixBits), cudaMemcpyDeviceToHost));
      int differ = 0, empty = 0, subnormal_low = 0, flagged_finite = 0;
      for (std::size_t k = 0; k < n; ++k) {
        const bool finite = static_cast<std::int64_t>(k) / g.parts < 7;  // planes 7 and 8 hold a NaN, an Inf
        flagged_finite += finite && a[k].bad;
        differ += b[k].bad != a[k].bad || (finite && (b[k].top != a[k].top || b[k].low != a[k].low));
        empty += a[k].top == INT_MIN;
        subnormal_low += a[k].low == -149;
      }
      CHECK(flagged_finite == 0);
      CHECK(differ == 0);
      CHECK(empty > 0);          // plane 0, and blocks past a plane's end: the empty partial compared
      CHECK(subnormal_low > 0);  // 2^-149 seen as some block's lowest bit
      int flagged = 0;
      for (std::int64_t k = 7 * g.parts; k < 9 * g.parts; ++k) flagged += b[static_cast<std::size_t>(k)].bad;
      CHECK(flagged >= 2);  // the NaN's block and the Inf's
    }
  }
  TEST_CASE("newest rungs: bwd v22 in groups of 1, 2, 3 and 4 planes gives v21's bits, with v21's scatter, v23's and v24's, a plane that falls back included, every dx element written" *
            tut::needs_gpu()) {
    // The suite's shapes make one group on a 50 MB L2; here the launches take a few planes each,
    // so a group reuses the counters the group before it rounded and dropped from the L2.
    const auto& bwd = ch06::maxpool3d_backward_f32();
    std::vector<Spec> setups = {{{1, 5, 19, 21, 70}, {8}, {1}, {0}, {1}, 0, "NCDHW", "int64"},
                                {{2, 3, 13, 29, 33}, {3}, {1}, {1}, {1}, 0, "NCDHW", "compact"},
                                {{1, 7, 11, 12, 13}, {5}, {2}, {2}, {1}, 0, "NCDHW", "int64"}};
    if (tut::under_sanitizer()) setups.resize(2);
    for (const auto& setup : setups) {
      const auto c = ch06::make_pool_case(setup, true);
      INFO(c.name);
      const auto inst = tut::instantiate(bwd, c, tut::test_options(bwd.name, c));
      const auto& w = inst->window();
      upload_cells(*inst, forward_cells(w, 41));
      tut::Random rng(43);
      std::vector<float> dy(static_cast<std::size_t>(w.out_numel()));
      for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>(rng.unit(i) * 2.0 - 1.0);
      for (std::size_t i = 0; i < static_cast<std::size_t>(w.out_plane()); i += 97) dy[i] = 1.0e-30f;  // plane 0 falls back
      upload(*inst, "dy", dy);
      const auto want = dx_after(bwd, "v21_fixed_point_global", *inst);
      const auto dx_bytes = static_cast<std::size_t>(w.in_numel()) * sizeof(float);
      const auto run = [&](const char* name, const std::int64_t group, auto scatter) {
        INFO(name, " with planes per group: ", group);
        using Scatter = decltype(scatter);
        tut::DeviceBuffer<unsigned char> scratch(ch06::glob_scratch(w, group, ch06::kL2MaxParts).bytes);
        TUT_CUDA(cudaMemset(scratch.data(), 0xCD, scratch.bytes()));  // the counters start as garbage
        TUT_CUDA(cudaMemset(inst->operand("dx").device(), 0xCD, dx_bytes));
        const auto launch = [&](std::size_t bytes) {
          ch06::glob_run<ch06::ZeroedCounters<true>, Scatter>(nullptr, inst->args(), scratch.data(), bytes, name, group, ch06::kL2MaxParts);
        };
        launch(scratch.bytes());
        TUT_CUDA(cudaDeviceSynchronize());
        std::vector<unsigned char> got(dx_bytes);
        TUT_CUDA(cudaMemcpy(got.data(), inst->operand("dx").device(), dx_bytes, cudaMemcpyDeviceToHost));
        CHECK(got == want);
        CHECK_THROWS_AS(launch(scratch.bytes() - 1), std::invalid_argument);  // refused before any launch
      };
      for (const std::int64_t group : {1, 2, 3, 4}) {
        run("bwd_v22_l2_plane_groups", group, ch06::LaneScatter{});
        run("bwd_v22_l2_plane_groups (v23's scatter)", group, ch06::RunScatter{});
        run("bwd_v22_l2_plane_groups (v24's scatter)", group, ch06::FlatScatter{});
      }
    }
  }
}
