// Host-only tests: PyTorch's output sizes, every rule a case must satisfy (each a clear error,
// before anything is launched), the reference's tie and NaN rule, the separable form against the
// direct one, the fast division, the floors, the dispatcher's rule, and the launchers' argument
// checks. No GPU needed.
#include <doctest/doctest.h>

#include "cases.hpp"
#include "kernels/bwd.cuh"
#include "kernels/bwd_auto_rule.cuh"
#include "kernels/bwd_v5_chunk_writer.cuh"
#include "kernels/bwd_v6_staged_tile.cuh"
#include "kernels/bwd_v7_zero_then_store.cuh"
#include "kernels/bwd_v8_slab_writer.cuh"
#include "kernels/bwd_v9_ordered_tile.cuh"
#include "kernels/bwd_v10_row_writer.cuh"
#include "kernels/bwd_v13_prefetch_rows.cuh"
#include "kernels/bwd_v16_zeros_then_value.cuh"
#include "kernels/bwd_v17_bulk_store.cuh"
#include "kernels/bwd_v11_window_gather.cuh"
#include "kernels/bwd_v12_class_scatter.cuh"
#include "kernels/fwd_auto_rule.cuh"
#include "kernels/fwd_v6_separable.cuh"
#include "kernels/fwd_v10_max_first.cuh"
#include "kernels/fwd_v13_output_packs.cuh"
#include "kernels/fwd_v14_row_lanes.cuh"
#include "kernels/fwd_v15_packs_max_first.cuh"
#include "kernels/bwd_v29_lean_scale.cuh"
#include "kernels/pool.cuh"
#include "reference.hpp"
#include "tests/gpu_cases.hpp"
#include "tut/random.hpp"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using ch06::List;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

tut::Params params(List kernel, List stride = {}, List padding = {0}, List dilation = {1}, std::int64_t ceil_mode = 0,
                   std::string layout = "NCDHW", std::string indices = "none") {
  tut::Params p;
  p.set("kernel", kernel);
  p.set("stride", stride);
  p.set("padding", padding);
  p.set("dilation", dilation);
  p.set("ceil_mode", ceil_mode);
  p.set("layout", layout);
  p.set("indices", indices);
  return p;
}

// The error case_for gives, or "" when the case is accepted.
std::string error_of(const std::vector<std::int64_t>& shape, const tut::Params& p, bool backward = false) {
  try {
    ch06::pool_case(shape, p, backward);
    return "";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

ch06::Window win(const std::vector<std::int64_t>& shape, const tut::Params& p) {
  return ch06::window_of_case(ch06::pool_case(shape, p, false));
}
}  // namespace

TEST_CASE("output sizes follow PyTorch's formula, ceil_mode's last-window rule included") {
  using ch06::pooled_size;
  CHECK(pooled_size(5, 2, 2, 0, 1, false) == 2);
  CHECK(pooled_size(5, 2, 2, 0, 1, true) == 3);    // the last window starts at 4, inside
  CHECK(pooled_size(6, 3, 3, 1, 1, false) == 2);
  CHECK(pooled_size(6, 3, 3, 1, 1, true) == 3);    // ceil gives 4, but window 3 would start at 8 >= 6 + 1
  CHECK(pooled_size(56, 3, 2, 1, 1, false) == 28);
  CHECK(pooled_size(57, 3, 2, 1, 1, false) == 29);
  CHECK(pooled_size(10, 3, 1, 0, 2, false) == 6);  // dilated: the window spans 5 cells
  CHECK(pooled_size(64, 8, 1, 0, 1, false) == 57);
  CHECK(pooled_size(2, 3, 1, 0, 1, false) == 0);   // the window is larger than the input
  CHECK(pooled_size(2, 3, 2, 0, 1, false) == 0);   // rounding toward -inf, not toward 0
  CHECK(pooled_size(33, 2, 2, 0, 1, true) == 17);
  CHECK(pooled_size(33, 2, 2, 0, 1, false) == 16);
}

TEST_CASE("every bad case is a clear error naming the parameter and its value") {
  const std::vector<std::int64_t> shape = {2, 3, 8, 9, 10};
  CHECK(error_of(shape, params({3}, {2}, {1})) == "");
  CHECK(error_of({2, 3, 8, 9}, params({3})).find("5-D shape") != std::string::npos);
  CHECK(error_of({2, 3, 8, 9, 10, 1}, params({3})).find("rank 6") != std::string::npos);
  CHECK(error_of({2, 0, 8, 9, 10}, params({3})).find("dimension C") != std::string::npos);
  CHECK(error_of({2, 3, 8, 9, 0}, params({3})).find("dimension W") != std::string::npos);
  CHECK(error_of(shape, params({0})).find("kernel 0 along D") != std::string::npos);
  CHECK(error_of(shape, params({3, -1, 3})).find("kernel -1 along H") != std::string::npos);
  CHECK(error_of(shape, params({3}, {0})).find("stride 0 along D") != std::string::npos);
  CHECK(error_of(shape, params({3}, {1, 1, -2})).find("stride -2 along W") != std::string::npos);
  CHECK(error_of(shape, params({3}, {}, {0}, {0})).find("dilation 0") != std::string::npos);
  CHECK(error_of(shape, params({3}, {}, {-1})).find("padding -1") != std::string::npos);
  CHECK(error_of(shape, params({3}, {}, {2})).find("padding 2 along D is more than half of kernel 3") !=
        std::string::npos);
  CHECK(error_of(shape, params({4}, {}, {2})) == "");  // 2 <= 4 / 2
  // PyTorch's 3-D rule compares with the kernel, not the dilated window: kernel 3, dilation 2,
  // padding 2 is refused though the dilated window spans 5 cells.
  CHECK(error_of(shape, params({3}, {1}, {2}, {2})).find("more than half of kernel 3") != std::string::npos);
  CHECK(error_of({1, 1, 2, 9, 9}, params({3})).find("output size along D is 0") != std::string::npos);
  CHECK(error_of(shape, params({3}, {}, {0}, {1}, 2)).find("ceil_mode is 0 or 1") != std::string::npos);
  CHECK(error_of(shape, params({3, 3})).find("one value or three") != std::string::npos);
  CHECK(error_of(shape, params({3}, {}, {1}, {1}, 0, "NCDHW", "none"), true).find("indices is int64 or compact") !=
        std::string::npos);
  CHECK(error_of({1, 1, 40, 40, 40}, params({33}, {}, {0}, {1}, 0, "NCDHW", "compact")).find("at most 32768 cells") !=
        std::string::npos);
  CHECK(error_of({1, 1, 40, 40, 40}, params({33}, {}, {0}, {1}, 0, "NCDHW", "int64")) == "");
  CHECK(error_of({1, 1, 1 << 30, 2, 2}, params({1})) == "");
  CHECK(error_of({1, 1, (std::int64_t{1} << 30) + 1, 2, 2}, params({1})).find("more than 2^30") != std::string::npos);
}

TEST_CASE("a window that holds no input cell is refused (PyTorch would index outside the input)") {
  // Kernel 2, dilation 3, padding 1 on an axis of 2: window 0 covers cells -1 and 2, both outside.
  const auto e = error_of({1, 1, 2, 4, 4}, params({2, 1, 1}, {1}, {1, 0, 0}, {3, 1, 1}));
  CHECK(e.find("window 0 along D") != std::string::npos);
  CHECK(e.find("holds no input cell") != std::string::npos);
  // On an axis of 3 the same window holds cell 2: accepted.
  CHECK(error_of({1, 1, 3, 4, 4}, params({2, 1, 1}, {1}, {1, 0, 0}, {3, 1, 1})) == "");
}

TEST_CASE("a case's name writes every parameter per axis and reads back as the same case") {
  const auto c = ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}), false);
  CHECK(c.name == "8x64x16x56x56 kernel=3x3x3 stride=2x2x2 padding=1x1x1 dilation=1x1x1 ceil_mode=0 layout=NCDHW "
                  "indices=none");
  const auto same_stride = ch06::pool_case({1, 1, 9, 9, 9}, params({3, 2, 1}), false);
  CHECK(same_stride.params.get<List>("stride") == List{3, 2, 1});  // empty stride: the kernel
}

namespace {
// A tiny volume with hand-placed values: D = 1, H = 1, W = 6 (one row), x given.
struct Row {
  std::vector<float> x;
  ch06::Best at(int k, int s, int p, int o) const {
    const auto w = win({1, 1, 1, 1, static_cast<std::int64_t>(x.size())}, params({1, 1, k}, {1, 1, s}, {0, 0, p}));
    return ch06::window_max(w, 0, 0, 0, 0, o, [&](std::int64_t e) { return x[static_cast<std::size_t>(e)]; });
  }
};
}  // namespace

TEST_CASE("reference: the first of equal maxima, the last NaN, -inf at the first inside cell") {
  CHECK(Row{{1, 5, 5, 2, 0, 0}}.at(6, 1, 0, 0).cell == 1);  // ties: the first
  CHECK(Row{{1, 5, 5, 2, 0, 0}}.at(6, 1, 0, 0).value == 5);
  const Row nan{{1, kNaN, 7, kNaN, 3, 9}};
  CHECK(std::isnan(nan.at(6, 1, 0, 0).value));
  CHECK(nan.at(6, 1, 0, 0).cell == 3);  // the last NaN
  CHECK(Row{{-kInf, -kInf, -kInf, -kInf}}.at(2, 1, 1, 0).cell == 1);  // padding at cell 0; first inside is 1
  CHECK(Row{{-kInf, -kInf, -kInf, -kInf}}.at(2, 1, 1, 0).value == -kInf);
  const Row zeros{{-0.0f, 0.0f, -1, -1}};
  CHECK(zeros.at(2, 2, 0, 0).cell == 0);  // +0 == -0: the first
  CHECK(std::signbit(zeros.at(2, 2, 0, 0).value));
  CHECK(Row{{-3, -2, -1}}.at(3, 1, 1, 0).cell == 2);  // padding counts as -inf: never chosen
  CHECK(Row{{-3, -2, -1}}.at(3, 1, 1, 0).value == -2);
}

TEST_CASE("the separable form gives the direct window's value and cell on every output") {
  // Whole numbers in [-3, 3] with NaN, +-inf and +-0: many ties, NaNs in many windows.
  const tut::Random rng(20261124);
  const auto spec = tut::InputSpec::whole_numbers(-3, 3).with_specials();
  struct Setup {
    std::vector<std::int64_t> shape;
    tut::Params p;
  };
  const std::vector<Setup> setups = {
      {{2, 3, 7, 8, 9}, params({3}, {2}, {1})},
      {{1, 2, 9, 9, 9}, params({3}, {1}, {1})},
      {{1, 1, 10, 11, 12}, params({2, 3, 4}, {1, 2, 3}, {1, 1, 2})},
      {{1, 2, 9, 10, 11}, params({3}, {1}, {1}, {2})},
      {{2, 1, 9, 9, 9}, params({2}, {2}, {1}, {1}, 1)},
      {{1, 1, 12, 12, 12}, params({8}, {1})},
      {{2, 3, 5, 6, 7}, params({3}, {2}, {1}, {1}, 0, "NDHWC")},
  };
  for (const auto& s : setups) {
    const auto w = win(s.shape, s.p);
    INFO(ch06::pool_case(s.shape, s.p, false).name);
    const auto n = static_cast<std::uint64_t>(w.in_numel());
    const auto at = [&](std::int64_t e) { return rng.value<float>(static_cast<std::uint64_t>(e), n, spec); };
    std::int64_t differ = 0;
    for (std::int64_t o = 0; o < w.out_numel(); ++o) {
      const auto q = ch06::out_pos(w, o);
      const auto a = ch06::window_max(w, q.n, q.c, q.od, q.oh, q.ow, at);
      const auto b = ch06::window_max_separable(w, q.n, q.c, q.od, q.oh, q.ow, at);
      const bool same = a.cell == b.cell && ((std::isnan(a.value) && std::isnan(b.value)) || a.value == b.value);
      differ += same ? 0 : 1;
    }
    CHECK(differ == 0);
  }
}

TEST_CASE("combine is associative, NaN and ties included") {
  const std::vector<float> vals = {-kInf, -1, 0, -0.0f, 2, 2, kInf, kNaN};
  for (std::size_t i = 0; i < vals.size(); ++i)
    for (std::size_t j = 0; j < vals.size(); ++j)
      for (std::size_t k = 0; k < vals.size(); ++k) {
        const ch06::Best a{vals[i], 0}, b{vals[j], 1}, c{vals[k], 2};
        const auto l = ch06::combine(ch06::combine(a, b), c), r = ch06::combine(a, ch06::combine(b, c));
        CHECK(l.cell == r.cell);
      }
}

namespace {
// One kind of v6's sliding pass, on the host: random axes of 1 to 24 cells with many ties, NaNs and
// infinities, cells left by a previous pass, and groups of outputs that start in the padding or run
// past the axis's end, loaded as the kernel loads them (slide_source). Each window's van Herk result
// against the direct scan over its inside cells (the kernel's K = 0 form and PyTorch's loop).
template <int K>
void check_van_herk(std::int64_t& windows, std::int64_t& differ) {
  constexpr int kSpan = ch06::kSlide + K - 1;
  const tut::Random rng(20261125 + K);
  const float pool[] = {-kInf, -1, 0, -0.0f, 2, kInf, kNaN};
  std::uint64_t r = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const int len = 1 + static_cast<int>(rng.bits(r++) % 24), cell_step = 1 + static_cast<int>(rng.bits(r++) % 64);
    const int start = -(K - 1) + static_cast<int>(rng.bits(r++) % static_cast<std::uint64_t>(len + K - 1));
    const int spread = 1 + static_cast<int>(rng.bits(r++) % 7);  // few distinct values: many ties
    std::vector<float> x(static_cast<std::size_t>(len));
    std::vector<int> prev(static_cast<std::size_t>(len));
    for (int e = 0; e < len; ++e) {
      x[static_cast<std::size_t>(e)] = pool[rng.bits(r++) % static_cast<std::uint64_t>(spread)];
      prev[static_cast<std::size_t>(e)] = static_cast<int>(rng.bits(r++) % 9);
    }
    float v[kSpan];
    int a[kSpan];
    for (int j = 0; j < kSpan; ++j) {
      const int from = ch06::slide_source(start + j, len);
      v[j] = x[static_cast<std::size_t>(from)];
      a[j] = (from - start) * cell_step + prev[static_cast<std::size_t>(from)];
    }
    float best[ch06::kSlide];
    int best_a[ch06::kSlide];
    ch06::sliding_best<K>(v, a, best, best_a);
    for (int m = 0; m < ch06::kSlide; ++m) {
      float ref = -kInf;
      int cell = -1;
      for (int j = 0; j < K; ++j) {
        const int at = start + m + j;
        if (at < 0 || at >= len) continue;
        if (ch06::reference_replaces(ref, x[static_cast<std::size_t>(at)]) || cell < 0) {
          ref = x[static_cast<std::size_t>(at)];
          cell = j * cell_step + prev[static_cast<std::size_t>(at)];
        }
      }
      if (cell < 0) continue;  // no inside cell: an output past the axis's end, never stored
      const bool same = best_a[m] - m * cell_step == cell &&
                        ((std::isnan(ref) && std::isnan(best[m])) ||
                         (ref == best[m] && std::signbit(ref) == std::signbit(best[m])));
      differ += same ? 0 : 1;
      ++windows;
    }
  }
}
}  // namespace

TEST_CASE("v6's sliding pass: van Herk's suffix and prefix runs give the direct scan's value and cell, k 1 to 8") {
  std::int64_t windows = 0, differ = 0;
  check_van_herk<1>(windows, differ);
  check_van_herk<2>(windows, differ);
  check_van_herk<3>(windows, differ);
  check_van_herk<4>(windows, differ);
  check_van_herk<5>(windows, differ);
  check_van_herk<6>(windows, differ);
  check_van_herk<7>(windows, differ);
  check_van_herk<8>(windows, differ);
  INFO(windows, " windows");
  CHECK(windows > 100000);
  CHECK(differ == 0);
  // An outside cell read as its nearest inside one.
  CHECK(ch06::slide_source(-3, 5) == 0);
  CHECK(ch06::slide_source(2, 5) == 2);
  CHECK(ch06::slide_source(7, 5) == 4);
}

TEST_CASE("v6's row kernel (the W pass in NCDHW): which passes take it, odd-word pitches, and its shared memory") {
  ch06::AxisPass ps;
  ps.outer = 16 * 64 * 64;
  ps.len = 64;
  ps.out_len = 57;
  ps.k = 8;
  CHECK(ch06::slides_rows<float>(ps));
  const auto rp = ch06::row_plan<float>(ps);
  CHECK(rp.warps_per_set == 8);  // 8 groups of 8 outputs per row: one warp each, 32 rows per block
  CHECK(rp.rows() == 32);
  CHECK(rp.in_pitch == 65);
  CHECK(rp.out_pitch == 57);
  CHECK(rp.smem == 32u * (65 * 4 + 57 * 6));
  for (int len = 1; len < 300; ++len) {
    ch06::AxisPass q = ps;
    q.len = len;
    q.k = 3;
    q.p = 1;
    q.out_len = len;
    const auto f = ch06::row_plan<float>(q);
    const auto h = ch06::row_plan<__half>(q);
    INFO(len);
    CHECK(f.in_pitch >= len);
    CHECK(f.in_pitch % 2 == 1);  // odd in words
    CHECK(h.in_pitch >= len);
    CHECK(h.in_pitch % 4 == 2);  // an odd number of 2-half words
    const int groups = (len + ch06::kSlide - 1) / ch06::kSlide;
    CHECK(f.warps_per_set * f.row_sets == 8);
    CHECK((f.warps_per_set >= groups || f.warps_per_set == 8));
    CHECK(ch06::slides_rows<float>(q) == (f.smem <= ch06::kRowSmemMax));
  }
  ch06::AxisPass q = ps;
  q.k = 4;  // not a van Herk size: the plain pass
  CHECK_FALSE(ch06::slides_rows<float>(q));
  q = ps;
  q.s = 2;
  CHECK_FALSE(ch06::slides_rows<float>(q));
  q = ps;
  q.dil = 2;
  CHECK_FALSE(ch06::slides_rows<float>(q));
  q = ps;
  q.inner = 4;  // NDHWC: the sliding kernel
  CHECK_FALSE(ch06::slides_rows<float>(q));
  q = ps;
  q.len = 1000;  // 32 rows of 1000 cells do not fit in 48 KiB
  q.out_len = 993;
  CHECK_FALSE(ch06::slides_rows<float>(q));
}

TEST_CASE("split windows: each part's best by the rule, combined by outranks in any order, is the window's") {
  // v8's lanes: each scans some of a window's cells in scan order with PyTorch's rule, then the
  // parts' bests meet in a butterfly. Parts here: interleaved rows (v8's NCDHW lanes), blocks of
  // rows (its NDHWC parts), and random cells; combined left to right and right to left.
  const tut::Random rng(20261125);
  const auto spec = tut::InputSpec::whole_numbers(-3, 3).with_specials();
  const std::vector<std::pair<std::vector<std::int64_t>, tut::Params>> setups = {
      {{2, 3, 8, 8, 8}, params({4}, {4})},
      {{1, 2, 9, 10, 11}, params({3}, {2}, {1})},
      {{2, 2, 16, 16, 16}, params({8}, {8})},
      {{1, 2, 9, 9, 10}, params({2, 3, 4}, {1, 2, 3}, {1, 1, 2}, {1}, 1)},
  };
  std::int64_t differ = 0, windows = 0;
  for (const auto& [shape, p] : setups) {
    const auto w = win(shape, p);
    const auto n = static_cast<std::uint64_t>(w.in_numel());
    const auto at = [&](std::int64_t e) { return rng.value<float>(static_cast<std::uint64_t>(e), n, spec); };
    for (std::int64_t o = 0; o < w.out_numel(); ++o) {
      const auto q = ch06::out_pos(w, o);
      const auto ref = ch06::window_max(w, q.n, q.c, q.od, q.oh, q.ow, at);
      const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
      for (int scheme = 0; scheme < 3; ++scheme)
        for (int parts : {2, 4, 8, 32}) {
          std::vector<ch06::Best> best(static_cast<std::size_t>(parts), ch06::Best{-kInf, -1});
          for (int cell = 0; cell < w.cells(); ++cell) {
            const int jw = cell % w.k[2], jh = cell / w.k[2] % w.k[1], jd = cell / w.k[2] / w.k[1];
            const int d = d0 + jd, h = h0 + jh, x = w0 + jw;
            if (d < 0 || d >= w.D || h < 0 || h >= w.H || x < 0 || x >= w.W) continue;
            const int row = jd * w.k[1] + jh;
            const int part = scheme == 0 ? row % parts
                             : scheme == 1 ? row * parts / (w.k[0] * w.k[1])
                                           : static_cast<int>(rng.bits(static_cast<std::uint64_t>(o * 977 + cell)) % parts);
            const float v = at(ch06::in_element(w, q.n, q.c, (static_cast<std::int64_t>(d) * w.H + h) * w.W + x));
            auto& b = best[static_cast<std::size_t>(part)];
            if (ch06::reference_replaces(b.value, v) || b.cell < 0) b = {v, cell};  // the lane's scan
          }
          for (int dir = 0; dir < 2; ++dir) {
            ch06::Best all{-kInf, -1};
            for (int i = 0; i < parts; ++i) {
              const auto& b = best[static_cast<std::size_t>(dir ? parts - 1 - i : i)];
              if (ch06::outranks(b.value, b.cell, all.value, all.cell)) all = b;
            }
            const bool same = all.cell == ref.cell && ((std::isnan(all.value) && std::isnan(ref.value)) ||
                                                       (all.value == ref.value && std::signbit(all.value) == std::signbit(ref.value)));
            differ += same ? 0 : 1;
            ++windows;
          }
        }
    }
  }
  INFO(windows, " split windows");
  CHECK(windows > 1000);
  CHECK(differ == 0);
}

namespace {
// fwd v10's runs kernel on the host, for one run of `count` pieces of V values: lane r of G takes
// pieces r, r + G, ..., kP of them a batch, with -inf past the run; the batch's maximum, then (with
// the cell) the lookup only when it replaces the lane's best; the lanes' butterfly by outranks, or
// (no cell) by the maximum, scanned again with the lookup when that is a zero or a NaN. The same
// helpers as the kernel; max_nan is the host's stand-in for FMNMX.NAN.
template <int V, int kP>
ch06::Best v10_on_host(const std::vector<float>& x, int G, bool want_cell) {
  constexpr int kN = kP * V;
  const int count = static_cast<int>(x.size()) / V;
  std::vector<float> best(static_cast<std::size_t>(G));
  std::vector<int> cell(static_cast<std::size_t>(G));
  const auto scan = [&](bool with_cell) {
    for (int r = 0; r < G; ++r) {
      float& b = best[static_cast<std::size_t>(r)];
      int& c = cell[static_cast<std::size_t>(r)];
      b = -kInf;
      c = -1;
      for (int p0 = 0; p0 < count; p0 += kP * G) {
        float v[kN];
        for (int k = 0; k < kP; ++k)
          for (int l = 0; l < V; ++l) {
            const int piece = p0 + k * G + r;
            v[k * V + l] = piece < count ? x[static_cast<std::size_t>(piece * V + l)] : -kInf;
          }
        const float m = ch06::max_of(v);
        if (!with_cell) {
          b = ch06::max_nan(b, m);
        } else if ((p0 + r < count) & (ch06::replaces(b, m) | (c < 0))) {
          int j;
          ch06::locate(v, m, j, b);
          c = (p0 + (j / V) * G + r) * V + j % V;
        }
      }
    }
  };
  const auto combine = [&] {
    for (int m = 1; m < G; m *= 2) {
      const auto b0 = best;
      const auto c0 = cell;
      for (int r = 0; r < G; ++r) {
        const auto o = static_cast<std::size_t>(r ^ m), i = static_cast<std::size_t>(r);
        if (ch06::outranks(b0[o], c0[o], b0[i], c0[i])) {
          best[i] = b0[o];
          cell[i] = c0[o];
        }
      }
    }
  };
  scan(want_cell);
  if (want_cell) {
    combine();
  } else {
    for (int m = 1; m < G; m *= 2) {
      const auto b0 = best;
      for (int r = 0; r < G; ++r)
        best[static_cast<std::size_t>(r)] = ch06::max_nan(b0[static_cast<std::size_t>(r)], b0[static_cast<std::size_t>(r ^ m)]);
    }
    if (ch06::bits_unsure(best[0])) {
      scan(true);
      combine();
    }
  }
  return {best[0], cell[0]};
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
}  // namespace

TEST_CASE("fwd v10's rule on the host: the maximum first and the lookup after give the sequential rule's element, bit for bit, and its cell") {
  // Values from a small set, so that ties, both zeros and NaNs (each with its own payload and
  // sign) are common; runs of 1 to 200 pieces of 1, 2 or 4 values over 1 to 32 lanes.
  const std::vector<float> palette = {-2.0f, -1.0f, -0.0f, 0.0f, 1.0f, 2.0f, -kInf, kInf,
                                      from_bits(0x7fc00001u), from_bits(0xffc00002u), from_bits(0x7fc00003u)};
  const tut::Random rng(20261129);
  std::int64_t runs = 0, differ = 0, nan_runs = 0, zero_runs = 0;
  for (int t = 0; t < 6000; ++t) {
    const auto draw = [&](std::uint64_t k) { return rng.bits(static_cast<std::uint64_t>(t) * 100003u + k); };
    const int V = 1 << (draw(0) % 3), G = 1 << (draw(1) % 6), pieces = 1 + static_cast<int>(draw(2) % 200);
    const int nan_odds = 1 + static_cast<int>(draw(3) % 400);  // NaN from never-ish to often
    std::vector<float> x(static_cast<std::size_t>(pieces * V));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint64_t u = draw(10 + i);
      // One run in three draws no positive number, so that a zero is often the maximum.
      const std::uint64_t kinds = t % 3 == 0 ? 4 : 8;  // palette[0, 4): -2, -1, -0, +0
      x[i] = u % static_cast<std::uint64_t>(nan_odds) == 0 ? palette[8 + (u >> 20) % 3] : palette[(u >> 8) % kinds];
    }
    ch06::Best ref{-kInf, -1};
    for (std::size_t i = 0; i < x.size(); ++i)
      if (ch06::reference_replaces(ref.value, x[i]) || ref.cell < 0) ref = {x[i], static_cast<int>(i)};
    nan_runs += std::isnan(ref.value) ? 1 : 0;
    zero_runs += ref.value == 0.0f ? 1 : 0;
    for (bool want_cell : {false, true}) {
      const ch06::Best got = V == 1 ? v10_on_host<1, 4>(x, G, want_cell)
                             : V == 2 ? v10_on_host<2, 4>(x, G, want_cell)
                                      : v10_on_host<4, 4>(x, G, want_cell);
      const bool same = bits_of(got.value) == bits_of(ref.value) && (!want_cell || got.cell == ref.cell);
      if (!same) INFO("V ", V, " G ", G, " pieces ", pieces, " want_cell ", want_cell);
      differ += same ? 0 : 1;
      ++runs;
    }
  }
  INFO(runs, " runs, ", nan_runs, " with a NaN, ", zero_runs, " with a zero maximum");
  CHECK(nan_runs > 500);
  CHECK(zero_runs > 100);
  CHECK(differ == 0);
}

TEST_CASE("FastDiv divides exactly, and the decoder agrees with out_pos") {
  for (std::int64_t d : {1, 2, 3, 5, 7, 28, 56, 57, 100, 641, 65535, 65536, 1 << 20, (1 << 30) + 1, 2147483647}) {
    const ch06::FastDiv f(d);
    std::int64_t bad = 0;
    for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, d - 1, d, d + 1, 2 * d, std::int64_t{2147483647},
                           std::int64_t{2147483646}, std::int64_t{1234567891}})
      if (n >= 0 && n <= 2147483647) bad += f.div(static_cast<std::uint32_t>(n)) != static_cast<std::uint32_t>(n / d);
    for (std::int64_t n = 0; n < 2147483647; n += 7919 * 13)
      bad += f.div(static_cast<std::uint32_t>(n)) != static_cast<std::uint32_t>(n / d);
    INFO("divisor ", d);
    CHECK(bad == 0);
  }
  CHECK_THROWS_AS(ch06::FastDiv(0), std::invalid_argument);
  for (const char* layout : {"NCDHW", "NDHWC"}) {
    const auto w = win({3, 5, 7, 9, 11}, params({3}, {2}, {1}, {1}, 0, layout));
    const ch06::OutDecoder dec(w);
    std::int64_t bad = 0;
    for (std::int64_t o = 0; o < w.out_numel(); ++o) {
      const auto a = dec(o), b = ch06::out_pos(w, o);
      bad += a.n != b.n || a.c != b.c || a.od != b.od || a.oh != b.oh || a.ow != b.ow;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("floors: x once, y once, the index in its format; the backward reads dy and the index") {
  const auto f = ch06::forward_floor<float>(ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}), false));
  const std::uint64_t in = 8ull * 64 * 16 * 56 * 56, out = 8ull * 64 * 8 * 28 * 28;
  CHECK(f.bytes == 4 * in + 4 * out);
  CHECK(f.flops == 27 * out);
  const auto i64 = ch06::forward_floor<float>(
      ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}, {1}, 0, "NCDHW", "int64"), false));
  CHECK(i64.bytes == 4 * in + 12 * out);
  const auto cmp = ch06::forward_floor<float>(
      ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}, {1}, 0, "NCDHW", "compact"), false));
  CHECK(cmp.bytes == 4 * in + 5 * out);  // 27 cells: one byte
  const auto big = ch06::forward_floor<float>(
      ch06::pool_case({1, 16, 64, 64, 64}, params({8}, {1}, {0}, {1}, 0, "NCDHW", "compact"), false));
  CHECK(big.bytes == 4ull * 16 * 64 * 64 * 64 + 6ull * 16 * 57 * 57 * 57);  // 512 cells: two bytes
  const auto h = ch06::forward_floor<__half>(ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}), false));
  CHECK(h.bytes == 2 * in + 2 * out);
  // Stride 3 over windows of 2: a third of the rows, slices and columns is read by no window.
  const auto gaps = ch06::forward_floor<float>(ch06::pool_case({2, 64, 48, 96, 96}, params({2}, {3}), false));
  CHECK(gaps.bytes == 4ull * 2 * 64 * 32 * 64 * 64 + 4ull * 2 * 64 * 16 * 32 * 32);
  // Floor mode on 33 cells: the last cell is read by no window.
  CHECK(ch06::covered_cells(33, 2, 2, 0, 1, 16) == 32);
  CHECK(ch06::covered_cells(33, 2, 2, 0, 1, 17) == 33);  // ceil_mode: a last window of one cell
  CHECK(ch06::covered_cells(10, 3, 1, 0, 2, 6) == 10);
  CHECK(ch06::covered_cells(10, 1, 3, 0, 1, 4) == 4);
  const auto b = ch06::backward_floor<float>(
      ch06::pool_case({8, 64, 16, 56, 56}, params({3}, {2}, {1}, {1}, 0, "NCDHW", "int64"), true));
  CHECK(b.bytes == 12 * out + 4 * in);
}

TEST_CASE("the suites: at least 20 shapes, every one in both layouts, every case valid") {
  const auto fwd = ch06::forward_suite();
  CHECK(ch06::suite_shapes().size() >= 17);
  CHECK(fwd.size() >= 20);
  std::map<std::string, int> layouts;
  for (const auto& c : fwd) layouts[c.params.get<std::string>("layout")] += 1;
  CHECK(layouts["NCDHW"] >= static_cast<int>(ch06::suite_shapes().size()));
  CHECK(layouts["NDHWC"] == static_cast<int>(ch06::suite_shapes().size()));
  std::map<std::string, int> names;
  for (const auto& c : fwd) CHECK(++names[c.name] == 1);
  CHECK(ch06::backward_suite().size() >= 10);
}

TEST_CASE("every case the GPU tests use is a valid case") {
  namespace tc = ch06::test_cases;
  CHECK(tc::window_cases().size() >= 50);
  CHECK(tc::special_cases().size() >= 40);
  CHECK(tc::backward_cases().size() >= 30);
  for (std::int64_t k = 2; k <= 8; ++k) CHECK(tc::exercise_cases(k).size() >= 8);
}

TEST_CASE("the dispatcher's rule: v10 for large disjoint windows that are one run (NCDHW), v11 for those with channels (NDHWC), v4 (rows of outputs over >= 128 bytes) or v8 for other large disjoint ones, separable for large or stride-1 overlapping ones (undilated in NDHWC) and NCDHW dilation, v4 for small disjoint float windows in rows of >= 32 outputs (>= 16 for 2x2x2 windows all inside), v13 for kernel 2 along W in rows of >= 8 (2x2x2 disjoint windows only where cut and without an int64 index), v2 for other NCDHW and C = 1, v11 for half NDHWC windows of >= 16 cells, else v7") {
  using ch06::AutoPick;
  const auto pick = [](std::vector<std::int64_t> shape, const tut::Params& p) { return ch06::auto_pick(win(shape, p)); };
  const auto cl = [](List k, List s, List p = {0}, List d = {1}) { return params(k, s, p, d, 0, "NDHWC"); };
  CHECK(pick({1, 16, 64, 64, 64}, params({8}, {1})) == AutoPick::v6_separable);              // overlap 512
  CHECK(pick({1, 16, 64, 64, 64}, cl({8}, {1})) == AutoPick::v6_separable);
  CHECK(pick({2, 48, 33, 65, 65}, params({5}, {2}, {2})) == AutoPick::v6_separable);          // overlap 15.6
  CHECK(pick({256, 256, 8, 8, 8}, params({8}, {8})) == AutoPick::v10_max_first);            // the whole plane, 512 cells
  CHECK(pick({1024, 512, 4, 4, 4}, params({4}, {4})) == AutoPick::v10_max_first);           // the whole plane, 64 cells
  CHECK(pick({64, 8, 16, 4, 4}, params({4}, {4})) == AutoPick::v10_max_first);              // runs of whole (H, W) planes
  CHECK(pick({64, 8, 4, 16, 16}, params({1, 8, 16}, {1, 8, 16})) == AutoPick::v10_max_first);  // kD = 1: runs of rows
  CHECK(pick({64, 8, 4, 16, 16}, params({2, 8, 16}, {2, 8, 16})) == AutoPick::v8_wide_loads);  // kH < H, kD > 1: not one run
  CHECK(pick({64, 8, 16, 4, 4}, params({4}, {4}, {0, 1, 0})) == AutoPick::v8_wide_loads);     // padded along H: not one run
  CHECK(pick({2, 64, 64, 64, 64}, params({8}, {8})) == AutoPick::v14_row_lanes);            // a row of outputs spans 256 bytes
  CHECK(ch06::auto_pick(win({2, 64, 64, 64, 32}, params({8}, {8})), 4) == AutoPick::v14_row_lanes);  // 128 bytes
  CHECK(pick({2, 64, 64, 64, 60}, params({6, 6, 6}, {6, 6, 6})) == AutoPick::v4_layout_ncdt);  // rows of 24 bytes: not v14's pieces
  CHECK(ch06::auto_pick(win({2, 64, 64, 64, 64}, params({8}, {8})), 2) == AutoPick::v4_layout_ncdt);  // half: v14 not timed
  CHECK(ch06::auto_pick(win({2, 64, 64, 64, 32}, params({8}, {8})), 2) == AutoPick::v8_wide_loads);   // 64 bytes of half
  CHECK(pick({2, 64, 64, 64, 24}, params({8}, {8})) == AutoPick::v8_wide_loads);             // 96 bytes
  CHECK(pick({2, 64, 64, 64, 64}, cl({8}, {8})) == AutoPick::v11_columns_max);
  CHECK(pick({1024, 512, 4, 4, 4}, cl({4}, {4})) == AutoPick::v11_columns_max);             // NDHWC, 64 cells
  CHECK(pick({128, 256, 10, 10, 10}, cl({5}, {5})) == AutoPick::v11_columns_max);            // NDHWC, 125 cells
  CHECK(pick({1024, 512, 4, 4, 4}, cl({2}, {2})) == AutoPick::v7_channels_last);             // NDHWC, 8 cells
  CHECK(pick({1024, 1, 4, 4, 4}, cl({4}, {4})) == AutoPick::v8_wide_loads);                 // one channel: NCDHW in memory
  CHECK(pick({64, 64, 16, 16, 16}, cl({7}, {7})) == AutoPick::v11_columns_max);               // NDHWC, 343 cells
  CHECK(pick({64, 64, 16, 16, 16}, cl({8}, {8})) == AutoPick::v11_columns_max);               // NDHWC, 512 cells
  CHECK(ch06::window_is_one_run(win({2, 3, 9, 6, 8}, params({3, 6, 8}, {2, 6, 8}, {1, 0, 0}))));  // D padding is fine
  CHECK(!ch06::window_is_one_run(win({2, 3, 9, 6, 8}, params({3, 6, 4}, {2, 6, 4}))));                  // kW < W
  CHECK(pick({1024, 512, 4, 4, 4}, params({2}, {2})) == AutoPick::v2_interior_border);        // 8 outputs per plane
  CHECK(pick({8, 64, 33, 33, 33}, params({2}, {2}, {0}, {1}, 1)) == AutoPick::v13_output_packs);  // rows of 17 outputs
  CHECK(pick({2, 64, 48, 96, 96}, params({2}, {3})) == AutoPick::v4_layout_ncdt);              // gaps: still disjoint, rows of 32
  CHECK(pick({1, 2, 128, 256, 256}, params({2}, {2})) == AutoPick::v4_layout_ncdt);            // rows of 128
  CHECK(pick({1, 1, 320, 320, 320}, params({2}, {2})) == AutoPick::v4_layout_ncdt);
  CHECK(pick({2, 3, 8, 8, 62}, params({2}, {2})) == AutoPick::v4_layout_ncdt);                 // rows of 31 outputs, all inside
  CHECK(pick({8, 64, 32, 32, 32}, params({2}, {2})) == AutoPick::v4_layout_ncdt);              // rows of 16, all inside
  CHECK(pick({16, 64, 31, 31, 31}, params({2}, {2})) == AutoPick::v2_interior_border);         // rows of 15, all inside
  CHECK(pick({8, 64, 16, 16, 16}, params({2}, {2})) == AutoPick::v2_interior_border);          // rows of 8, all inside
  CHECK(pick({2, 3, 8, 8, 63}, params({2}, {2}, {0}, {1}, 1)) == AutoPick::v4_layout_ncdt);    // rows of 32, the last cut: v4 as before
  CHECK(pick({2, 3, 8, 8, 61}, params({2}, {2}, {0}, {1}, 1)) == AutoPick::v13_output_packs);  // rows of 31, the last cut
  CHECK(pick({8, 64, 17, 17, 17}, params({2}, {2}, {0}, {1}, 1)) == AutoPick::v13_output_packs);  // rows of 9, the last cut
  CHECK(pick({8, 64, 33, 33, 33}, params({2}, {2}, {0}, {1}, 1, "NCDHW", "int64")) == AutoPick::v2_interior_border);  // cut, int64
  CHECK(pick({8, 64, 33, 33, 33}, params({2}, {2}, {0}, {1}, 1, "NCDHW", "compact")) == AutoPick::v13_output_packs);  // cut, compact
  CHECK(pick({2, 3, 8, 8, 32}, params({2, 2, 2}, {1, 1, 2})) == AutoPick::v13_output_packs);   // overlap in D and H: as before
  CHECK(pick({8, 64, 16, 56, 56}, params({1, 2, 2}, {1, 2, 2})) == AutoPick::v13_output_packs);  // 1 x 2 x 2, rows of 28: as before
  CHECK(pick({8, 64, 16, 16, 16}, params({1, 2, 2}, {1, 2, 2})) == AutoPick::v13_output_packs);  // 1 x 2 x 2, rows of 8: as before
  CHECK(ch06::windows_inside(win({8, 64, 32, 32, 32}, params({2}, {2}))));
  CHECK(!ch06::windows_inside(win({8, 64, 33, 33, 33}, params({2}, {2}, {0}, {1}, 1))));      // the last window cut
  CHECK(ch06::windows_inside(win({8, 64, 33, 33, 33}, params({2}, {2}))));                    // floor: the last cell left out
  CHECK(!ch06::windows_inside(win({8, 64, 32, 32, 32}, params({3}, {2}, {1}))));              // padding
  CHECK(pick({2, 3, 8, 8, 14}, params({2}, {2})) == AutoPick::v2_interior_border);             // rows of 7 outputs
  CHECK(pick({2, 3, 8, 8, 62}, params({3}, {3})) == AutoPick::v2_interior_border);             // kernel 3: not v13's, and v4 from 32
  CHECK(pick({2, 3, 8, 8, 64}, params({2}, {2})) == AutoPick::v4_layout_ncdt);                 // rows of 32
  CHECK(ch06::auto_pick(win({2, 64, 32, 112, 112}, params({2}, {2})), 2) == AutoPick::v15_packs_max_first);  // half: v15
  CHECK(ch06::auto_pick(win({2, 64, 32, 112, 112}, params({2}, {2}, {0}, {1}, 0, "NCDHW", "int64")), 2) ==
        AutoPick::v2_interior_border);  // half with an index: v2
  CHECK(ch06::auto_pick(win({2, 64, 32, 112, 112}, params({3}, {3})), 2) == AutoPick::v2_interior_border);  // half, rows of 6 bytes: v2
  CHECK(ch06::auto_pick(win({8, 64, 33, 33, 33}, params({2}, {2}, {0}, {1}, 1)), 2) == AutoPick::v15_packs_max_first);  // half, rows of 66 bytes
  CHECK(ch06::auto_pick(win({1024, 512, 4, 4, 4}, params({2}, {2})), 2) == AutoPick::v15_packs_max_first);  // half, rows of 2 outputs
  CHECK(ch06::auto_pick(win({2, 8, 16, 16, 64}, params({2, 2, 4}, {2, 2, 4})), 2) == AutoPick::v2_interior_border);  // half, kernel 4 along W: not timed
  CHECK(ch06::auto_pick(win({2, 64, 32, 112, 112}, params({2}, {2})), 4) == AutoPick::v4_layout_ncdt);
  CHECK(pick({2, 32, 32, 64, 64}, params({3}, {1}, {1}, {2})) == AutoPick::v6_separable);     // dilated NCDHW
  CHECK(pick({2, 32, 32, 64, 64}, cl({3}, {1}, {1}, {2})) == AutoPick::v7_channels_last);
  CHECK(pick({8, 64, 16, 56, 56}, params({3}, {2}, {1})) == AutoPick::v2_interior_border);
  CHECK(pick({8, 64, 16, 56, 56}, cl({3}, {2}, {1})) == AutoPick::v7_channels_last);
  // Half in NDHWC: v11 from 16 cells (27, 24, dilated 27), v7 below (9, 8).
  const auto half = [](std::vector<std::int64_t> shape, const tut::Params& p) { return ch06::auto_pick(win(shape, p), 2); };
  CHECK(half({8, 64, 16, 56, 56}, cl({3}, {2}, {1})) == AutoPick::v11_columns_max);
  CHECK(half({4, 32, 31, 63, 63}, cl({2, 3, 4}, {1, 2, 3}, {1, 1, 2})) == AutoPick::v11_columns_max);
  CHECK(half({2, 32, 32, 64, 64}, cl({3}, {1}, {1}, {2})) == AutoPick::v11_columns_max);
  CHECK(half({4, 64, 16, 56, 56}, cl({1, 3, 3}, {1, 2, 2}, {0, 1, 1})) == AutoPick::v7_channels_last);
  CHECK(half({2, 64, 32, 112, 112}, cl({2}, {2})) == AutoPick::v7_channels_last);
  CHECK(half({1, 1, 320, 320, 320}, cl({3}, {2}, {1})) == AutoPick::v2_interior_border);  // C = 1
  CHECK(half({4, 32, 32, 64, 64}, cl({3}, {1}, {1})) == AutoPick::v6_separable);          // overlap 27: v6 first
  CHECK(pick({1, 1, 320, 320, 320}, cl({3}, {2}, {1})) == AutoPick::v2_interior_border);     // C = 1
  CHECK(pick({4, 32, 32, 64, 64}, params({3}, {1}, {1})) == AutoPick::v6_separable);          // 27 cells, overlap 27
  CHECK(pick({4, 32, 32, 64, 64}, cl({3}, {1}, {1})) == AutoPick::v6_separable);             // NDHWC too, undilated
  CHECK(pick({4, 64, 16, 56, 56}, params({1, 3, 3}, {1, 2, 2}, {0, 1, 1})) == AutoPick::v2_interior_border);  // overlap 2.25
}

TEST_CASE("the backward's rule: v20 or v10 where windows do not overlap in NCDHW (v3 or v7 in NDHWC), v9 where they overlap a little, v18 (kernel 3), v25 (kernels 4 to 8) or v15 for stride-1 cubic NCDHW windows, else v6 (undilated, <= 64 D x H slots), else v1") {
  using ch06::BwdPick;
  const auto pick = [](std::vector<std::int64_t> shape, const tut::Params& p) { return ch06::bwd_pick(win(shape, p)); };
  const auto idx = [](List k, List s, List p = {0}, List d = {1}, std::string layout = "NCDHW") {
    return params(k, s, p, d, 0, layout, "int64");
  };
  CHECK(pick({2, 64, 32, 112, 112}, idx({2}, {2})) == BwdPick::v10_row_writer);      // 8 cells per output: chunks span 2 outputs
  CHECK(pick({2, 64, 32, 112, 112}, params({2}, {2}, {0}, {1}, 0, "NCDHW", "compact")) == BwdPick::v10_row_writer);
  CHECK(pick({2, 64, 32, 112, 112}, idx({2}, {2}, {0}, {1}, "NDHWC")) == BwdPick::v3_segment_writer);  // rows of channels
  CHECK(pick({2, 64, 64, 64, 64}, idx({8}, {8})) == BwdPick::v20_plane_fill);           // 512 cells an output, 4096 a plane
  CHECK(pick({2, 64, 64, 64, 64}, params({8}, {8}, {0}, {1}, 0, "NCDHW", "compact")) == BwdPick::v20_plane_fill);
  CHECK(pick({2, 64, 64, 64, 64}, idx({8}, {8}, {0}, {1}, "NDHWC")) == BwdPick::v7_zero_then_store);  // v20 reads NCDHW only
  CHECK(pick({1024, 512, 4, 4, 4}, idx({4}, {4})) == BwdPick::v10_row_writer);          // 64, but planes of 16 cells
  CHECK(pick({1024, 512, 4, 4, 4}, idx({4}, {4}, {0}, {1}, "NDHWC")) == BwdPick::v7_zero_then_store);
  CHECK(pick({1024, 1, 4, 4, 4}, idx({4}, {4}, {0}, {1}, "NDHWC")) == BwdPick::v10_row_writer);  // one channel
  CHECK(pick({2, 64, 48, 96, 96}, idx({2}, {3})) == BwdPick::v20_plane_fill);        // gaps between windows, 27
  CHECK(pick({2, 64, 48, 31, 32}, idx({2}, {3})) == BwdPick::v10_row_writer);         // 27, but planes of 992 cells
  CHECK(pick({2, 3, 11, 12, 13}, idx({2}, {3}, {0}, {2})) == BwdPick::v10_row_writer);  // span 3 <= stride 3
  CHECK(pick({2, 3, 11, 12, 13}, idx({2}, {2}, {0}, {2})) == BwdPick::v1_gather);     // span 3 > stride 2, dilated
  CHECK(pick({8, 64, 16, 56, 56}, idx({3}, {2}, {1})) == BwdPick::v9_ordered_tile);  // 2 x 2 x 2 ranks
  CHECK(pick({8, 64, 16, 56, 56}, idx({3}, {2}, {1}, {1}, "NDHWC")) == BwdPick::v9_ordered_tile);  // v14 lost here
  CHECK(pick({8, 1, 16, 56, 56}, idx({3}, {2}, {1}, {1}, "NDHWC")) == BwdPick::v9_ordered_tile);  // one channel
  CHECK(pick({4, 32, 32, 64, 64}, idx({3}, {1}, {1}, {1}, "NDHWC")) == BwdPick::v6_staged_tile);  // 3 per axis: as before
  CHECK(pick({4, 64, 16, 56, 56}, idx({1, 3, 3}, {1, 2, 2}, {0, 1, 1})) == BwdPick::v9_ordered_tile);  // 1 x 2 x 2
  CHECK(pick({4, 32, 32, 64, 64}, idx({3}, {1}, {1})) == BwdPick::v18_column_walk);        // 27 ranks, stride 1, kernel 3
  CHECK(pick({4, 32, 32, 64, 64}, params({3}, {1}, {1}, {1}, 0, "NCDHW", "compact")) == BwdPick::v18_column_walk);
  CHECK(pick({1, 16, 64, 64, 64}, idx({8}, {1})) == BwdPick::v29_lean_scale);      // 512 ranks
  CHECK(pick({1, 16, 64, 64, 64}, params({8}, {1}, {0}, {1}, 0, "NCDHW", "compact")) == BwdPick::v29_lean_scale);
  CHECK(pick({1, 16, 64, 64, 64}, idx({8}, {1}, {4})) == BwdPick::v29_lean_scale); // padding k / 2
  CHECK(pick({2, 8, 20, 20, 20}, idx({5}, {1}, {2})) == BwdPick::v29_lean_scale);  // kernel 5: 125 ranks
  CHECK(pick({1, 16, 64, 64, 64}, idx({4}, {1})) == BwdPick::v29_lean_scale);         // kernel 4: 64 ranks
  CHECK(pick({2, 8, 20, 20, 20}, idx({2}, {1})) == BwdPick::v9_ordered_tile);  // 8 ranks (v9's planner refused rows under 32 here before)
  CHECK(pick({1, 16, 64, 64, 64}, idx({8}, {1}, {0}, {1}, "NDHWC")) == BwdPick::v6_staged_tile);  // v15 and v25 read NCDHW only
  CHECK(pick({2, 3, 9, 10, 11}, idx({3, 4, 5}, {1, 1, 1}, {1, 2, 2})) == BwdPick::v6_staged_tile);  // not cubic
  CHECK(pick({2, 3, 9, 10, 11}, idx({3}, {1, 2, 1}, {1})) == BwdPick::v6_staged_tile);     // stride 2 along H
  CHECK(pick({1, 2, 40, 40, 40}, idx({9}, {1})) == BwdPick::v1_gather);              // kernel 9: neither v15 nor v6
  CHECK(pick({1, 2, 20, 20, 65535}, idx({3}, {1})) == BwdPick::v18_column_walk);     // past v15's 16-bit code; v18 keeps offsets in the window
  CHECK(pick({1, 2, 40, 40, 40}, idx({9}, {1})) == BwdPick::v1_gather);              // 81 (D, H) pairs
  CHECK(pick({2, 32, 32, 64, 64}, idx({3}, {1}, {1}, {2})) == BwdPick::v1_gather);   // dilated, overlapping
  CHECK(ch06::windows_disjoint(win({1, 1, 1, 1, 1}, idx({1}, {1}))));
  // Every case of the suite gets a version that takes it.
  for (const auto& c : ch06::backward_suite()) {
    const auto w = ch06::window_of_case(c);
    INFO(c.name);
    CHECK(ch06::bwd_pick(w) != BwdPick::v1_gather);
  }
}

namespace {
// A backward case on the host: the forward's index (the reference's cells, in the case's format),
// dy drawn as non-integer values so that the order of the additions shows in the bits, and dx as
// v1 sums it: each input's dy in ascending output order, which is (od, oh, ow) ascending.
struct HostBackward {
  ch06::Window w;
  std::vector<float> dy, dx_v1, dx;
  std::vector<std::int64_t> index;
  std::vector<std::uint8_t> offset8;
  std::vector<std::int16_t> offset16;
  explicit HostBackward(const tut::Case& c) : w(ch06::window_of_case(c)) {
    const tut::Random rng(20261126);
    const auto spec = tut::InputSpec::whole_numbers(-3, 3).with_specials();  // many ties, some NaN
    const auto n = static_cast<std::uint64_t>(w.in_numel());
    const auto at = [&](std::int64_t e) { return rng.value<float>(static_cast<std::uint64_t>(e), n, spec); };
    const auto outs = static_cast<std::size_t>(w.out_numel());
    dy.resize(outs);
    dx_v1.assign(static_cast<std::size_t>(w.in_numel()), 0.0f);
    if (w.indices == ch06::IndexFormat::int64) index.resize(outs);
    else if (w.compact8()) offset8.resize(outs);
    else offset16.resize(outs);
    for (std::size_t o = 0; o < outs; ++o) {
      const auto q = ch06::out_pos(w, static_cast<std::int64_t>(o));
      const int cell = ch06::window_max(w, q.n, q.c, q.od, q.oh, q.ow, at).cell;
      const std::int64_t flat = w.flat_index(q.od, q.oh, q.ow, cell);
      if (!index.empty()) index[o] = flat;
      if (!offset8.empty()) offset8[o] = static_cast<std::uint8_t>(cell);
      if (!offset16.empty()) offset16[o] = static_cast<std::int16_t>(cell);
      dy[o] = static_cast<float>(rng.unit(o + n) * 2.0 - 1.0) * 1.0e-3f * static_cast<float>(1 + o % 1000);
      dx_v1[static_cast<std::size_t>(ch06::in_element(w, q.n, q.c, flat))] += dy[o];
    }
    dx.assign(dx_v1.size(), std::numeric_limits<float>::quiet_NaN());  // poison: unwritten elements show
  }
  ch06::BackwardArgs<float> args() {
    ch06::BackwardArgs<float> a;
    a.w = w;
    a.dy = dy.data();
    a.index = index.empty() ? nullptr : index.data();
    a.offset8 = offset8.empty() ? nullptr : offset8.data();
    a.offset16 = offset16.empty() ? nullptr : offset16.data();
    a.dx = dx.data();
    return a;
  }
  bool same_bits() const { return std::memcmp(dx.data(), dx_v1.data(), dx.size() * sizeof(float)) == 0; }
};

// The cases the host runs of the backward kernels: the GPU tests' backward cases, and larger volumes
// with several tiles per plane, partial channel tiles and every index format.
std::vector<tut::Case> host_backward_cases() {
  auto cases = ch06::test_cases::backward_cases();
  const std::vector<ch06::Spec> more = {
      {{1, 2, 20, 40, 70}, {3}, {2}, {1}},  {{1, 2, 20, 40, 70}, {3}, {1}, {1}}, {{1, 2, 19, 37, 45}, {5}, {2}, {2}},
      {{1, 1, 24, 24, 40}, {8}, {1}, {0}},  {{2, 20, 7, 9, 11}, {3}, {2}, {1}},  {{1, 40, 9, 9, 9}, {3}, {1}, {1}},
      {{2, 3, 13, 17, 33}, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}}, {{1, 2, 16, 16, 24}, {8}, {8}, {0}},
      {{2, 12, 9, 10, 12}, {2}, {2}, {0}},  {{1, 3, 15, 20, 33}, {2}, {3}, {1}},
  };
  for (ch06::Spec s : more)
    for (const char* layout : {"NCDHW", "NDHWC"})
      for (const char* idx : {"int64", "compact"}) {
        s.layout = layout;
        s.indices = idx;
        cases.push_back(ch06::make_pool_case(s, true));
      }
  return cases;
}

// host_backward_cases() and the row writers' own cases, in both index formats. Each writer's test
// adds to the cases of the one before it: v10 rows of 2-element chunks (W = 18) and rows of more
// chunks than a block has threads (W = 1100: 275 chunks, so a thread takes two columns); v13 kernel 8
// and a non-cubic window; v16 kernel 4; v17 gaps with padding, ceil mode and rows of 600 and 300
// outputs (several units per plane).
std::vector<tut::Case> host_writer_cases(int version) {
  std::vector<ch06::Spec> rows = {{{1, 2, 10, 12, 18}, {3}, {3}, {1}}, {{1, 1, 3, 4, 1100}, {2, 2, 4}, {2, 2, 4}, {0}}};
  if (version >= 13) rows.insert(rows.end(), {{{1, 2, 8, 16, 32}, {8}, {8}, {0}}, {{1, 2, 6, 9, 16}, {2, 3, 4}, {2, 3, 4}, {1, 1, 0}}});
  if (version >= 16) rows.push_back({{1, 3, 9, 11, 20}, {4}, {4}, {0}});
  if (version >= 17)
    rows.insert(rows.end(), {{{2, 3, 11, 12, 13}, {2}, {4}, {1}, {2}}, {{2, 3, 10, 10, 10}, {3}, {3}, {1}, {1}, 1},
                             {{1, 2, 5, 7, 600}, {1}, {1}, {0}}, {{1, 1, 3, 300, 100}, {1}, {1}, {0}}});
  auto cases = host_backward_cases();
  for (ch06::Spec s : rows)
    for (const char* idx : {"int64", "compact"}) {
      s.indices = idx;
      cases.push_back(ch06::make_pool_case(s, true));
    }
  return cases;
}
}  // namespace

TEST_CASE("bwd v5's chunks, run on the host: every dx element written once, v1's bits") {
  int ran = 0;
  for (const auto& c : host_backward_cases()) {
    HostBackward hb(c);
    if (!ch06::bwd_v5_refuses<float>(hb.w).empty()) continue;
    INFO(c.name);
    ++ran;
    auto a = hb.args();
    const int V = ch06::bwd_v5_pack(a);
    const auto ca = ch06::chunk_args<float>(hb.w, V);
    const auto chunk = [&](auto v, std::int64_t i) {
      ch06::ChunkJob<decltype(v)::value, float> job;
      ch06::load_chunk(a, ca, i, job);
      ch06::store_chunk(job);
    };
    for (std::int64_t i = 0; i < ca.chunks; ++i) {
      if (V == 4) chunk(std::integral_constant<int, 4>{}, i);
      else if (V == 2) chunk(std::integral_constant<int, 2>{}, i);
      else chunk(std::integral_constant<int, 1>{}, i);
    }
    CHECK(hb.same_bits());
  }
  CHECK(ran >= 10);
}

// v10's items on the host, one thread after another (one block).
void run_v10_on_host(ch06::BackwardArgs<float> a) {
  const int V = ch06::bwd_v5_pack(a);
  const auto ra = ch06::row_args<float>(a.w, V);
  const bool int64 = a.w.indices == ch06::IndexFormat::int64;
  const auto run = [&](auto v) {
    constexpr int kV = decltype(v)::value;
    // The kernel's loops, one thread after another: a block's thread t takes columns t mod lanes
    // (stepping by lanes) and items t / lanes (stepping by the grid's items; one block here).
    for (int t = 0; t < ch06::kRowBlock; ++t) {
      const int sub = t / ra.lanes;
      if (sub >= ra.items_per_block) continue;
      for (int g = t - sub * ra.lanes; g < ra.per_row; g += ra.lanes) {
        const auto col = ch06::row_column<kV>(a, ra, g);
        for (std::int64_t it = sub; it < ra.items; it += ra.items_per_block) {
          if (int64) ch06::write_item<kV, true>(a, ra, col, it);
          else ch06::write_item<kV, false>(a, ra, col, it);
        }
      }
    }
  };
  if (V == 4) run(std::integral_constant<int, 4>{});
  else if (V == 2) run(std::integral_constant<int, 2>{});
  else run(std::integral_constant<int, 1>{});
}

TEST_CASE("bwd v10's items, run on the host thread by thread: every dx element written, v1's bits") {
  // The GPU tests' cases and the host's, plus rows of 2-element chunks (W = 18) and rows of more
  // chunks than a block has threads (W = 1100: 275 chunks, so a thread takes two columns).
  const auto cases = host_writer_cases(10);
  int ran = 0;
  std::map<int, int> widths;
  for (const auto& c : cases) {
    HostBackward hb(c);
    if (!ch06::bwd_v10_refuses<float>(hb.w).empty()) continue;
    INFO(c.name);
    ++ran;
    const auto a = hb.args();
    const int V = ch06::bwd_v5_pack(a);
    ++widths[V];
    const auto ra = ch06::row_args<float>(hb.w, V);
    CHECK(ra.lanes * ra.items_per_block <= ch06::kRowBlock);
    // dx starts as NaN (HostBackward), so an element no item wrote fails the comparison of bits.
    run_v10_on_host(a);
    CHECK(hb.same_bits());
  }
  CHECK(ran >= 10);
  CHECK(widths[4] >= 2);
  CHECK(widths[2] >= 1);
  CHECK(widths[1] >= 2);
}

TEST_CASE("bwd v13's threads, run on the host one after another: every dx element written, v1's bits") {
  // v10's cases, each run with the kernel's thread function over grids of 1 and 3 blocks: the teams
  // (R threads splitting an item's rows), the prefetched next item, and the one-output chunks.
  const auto cases = host_writer_cases(13);
  int ran = 0, teams = 0, one = 0;
  for (const auto& c : cases)
    for (std::int64_t grid : {1, 3}) {
      HostBackward hb(c);
      if (!ch06::bwd_v13_refuses<float>(hb.w).empty()) continue;
      INFO(c.name);
      ++ran;
      const auto a = hb.args();
      const int V = ch06::bwd_v5_pack(a);
      const auto pa = ch06::prefetch_args<float>(hb.w, V);
      CHECK(pa.ra.lanes * pa.R * pa.teams_per_block <= ch06::kRowBlock);
      teams += pa.R > 1;
      const bool int64 = hb.w.indices == ch06::IndexFormat::int64, o1 = ch06::chunk_in_one_output(hb.w, V);
      one += o1 && V > 1;
      const auto run = [&](auto v, auto i64, auto ko) {
        constexpr int kV = decltype(v)::value;
        constexpr bool kI = decltype(i64)::value, kO = decltype(ko)::value;
        for (std::int64_t blk = 0; blk < grid; ++blk)
          for (int t = 0; t < ch06::kRowBlock; ++t) ch06::prefetch_rows_thread<kV, kI, kO>(a, pa, t, blk, grid);
      };
      ch06::with_row_item_form(V, int64, o1, run);
      CHECK(hb.same_bits());
    }
  CHECK(ran >= 20);
  CHECK(teams >= 2);
  CHECK(one >= 2);
}

// v16's threads over a grid of `grid` blocks, on the host one after another.
void run_v16_on_host(ch06::BackwardArgs<float> a, std::int64_t grid) {
  const int V = ch06::bwd_v5_pack(a);
  const auto ra = ch06::row_args<float>(a.w, V);
  const bool int64 = a.w.indices == ch06::IndexFormat::int64, o1 = ch06::chunk_in_one_output(a.w, V);
  const auto run = [&](auto v, auto i64, auto ko) {
    constexpr int kV = decltype(v)::value;
    constexpr bool kI = decltype(i64)::value, kO = decltype(ko)::value;
    for (std::int64_t blk = 0; blk < grid; ++blk)
      for (int t = 0; t < ch06::kRowBlock; ++t) ch06::zeros_then_value_thread<kV, kI, kO>(a, ra, t, blk, grid);
  };
  ch06::with_row_item_form(V, int64, o1, run);
}


TEST_CASE("bwd v16's threads, run on the host one after another: every dx element written, v1's bits; on corrupt indices, v10's bits") {
  // v13's cases, over grids of 1 and 3 blocks (groups of U items cut short by the end of the items),
  // then with 1 index in 7 replaced by a random one (int64: any cell of the plane; compact: any
  // offset of its type, past the window's cells too): v16 must give what v10 gives, bit for bit.
  const auto cases = host_writer_cases(16);
  int ran = 0, one = 0, corrupt_differs = 0;
  for (const auto& c : cases) {
    {
      HostBackward probe(c);
      if (!ch06::bwd_v16_refuses<float>(probe.w).empty()) continue;
    }
    INFO(c.name);
    for (std::int64_t grid : {1, 3}) {
      HostBackward hb(c);
      ++ran;
      one += ch06::chunk_in_one_output(hb.w, ch06::bwd_v5_pack(hb.args())) && ch06::bwd_v5_pack(hb.args()) > 1;
      run_v16_on_host(hb.args(), grid);
      CHECK(hb.same_bits());
    }
    HostBackward hb(c), h10(c);
    const tut::Random rng(77);
    const std::int64_t plane = hb.w.in_plane();
    for (std::size_t o = 0; o < hb.dy.size(); ++o) {
      const std::uint64_t draw = rng.bits(o);
      if (draw % 7 != 0) continue;
      if (!hb.index.empty()) hb.index[o] = h10.index[o] = static_cast<std::int64_t>((draw >> 8) % static_cast<std::uint64_t>(plane));
      if (!hb.offset8.empty()) hb.offset8[o] = h10.offset8[o] = static_cast<std::uint8_t>(draw >> 8);
      if (!hb.offset16.empty()) hb.offset16[o] = h10.offset16[o] = static_cast<std::int16_t>((draw >> 8) % 32768);
    }
    run_v16_on_host(hb.args(), 3);
    run_v10_on_host(h10.args());
    CHECK(std::memcmp(hb.dx.data(), h10.dx.data(), hb.dx.size() * sizeof(float)) == 0);
    corrupt_differs += !hb.same_bits();  // the corruption changed dx (against the forward's indices)
  }
  CHECK(ran >= 20);
  CHECK(one >= 2);
  CHECK(corrupt_differs >= 10);
}

// v17's units on the host, one after another, each built as the kernel builds its stage: zeros,
// then the cell each of its outputs names, then the span copied to dx. Checks that the units tile
// dx in order, fit a stage, hold at most a block's 2 outputs per thread, and that no cell is named
// twice in a unit.
void run_v17_on_host(ch06::BackwardArgs<float> a) {
  const ch06::Window& w = a.w;
  ch06::BulkPlan b;
  REQUIRE(ch06::bulk_plan<float>(w, b).empty());
  const bool int64 = w.indices == ch06::IndexFormat::int64;
  std::vector<float> stage;
  std::vector<char> named;
  std::int64_t next = 0;
  int tiled = 1, fits = 1, once = 1;
  for (std::int64_t u = 0; u < b.units; ++u) {
    const ch06::BulkUnit r = ch06::bulk_unit(w, b, u);
    tiled &= r.g0 == next && r.len > 0;
    next = r.g0 + r.len;
    const int outs = (r.ob - r.oa) * w.oW;
    fits &= r.len <= b.cap && b.cap + 3 <= b.stage && outs <= ch06::kBulkMaxOuts;
    stage.assign(static_cast<std::size_t>(r.len), 0.0f);
    named.assign(static_cast<std::size_t>(r.len), 0);
    for (int j = 0; j < outs; ++j) {
      const std::int64_t o = r.o0 + j;
      const std::int64_t saved = int64 ? a.index[o] : ch06::saved_window_cell(a, o);
      const int oh = r.oa + j / w.oW, ow = j % w.oW;
      const int e = int64 ? ch06::bulk_named_place<true>(w, b, r, oh, ow, saved)
                          : ch06::bulk_named_place<false>(w, b, r, oh, ow, saved);
      if (e < 0) continue;
      once &= e < r.len && !named[static_cast<std::size_t>(e)];
      named[static_cast<std::size_t>(e)] = 1;
      stage[static_cast<std::size_t>(e)] = a.dy[o];
    }
    std::memcpy(a.dx + r.g0, stage.data(), stage.size() * sizeof(float));
  }
  CHECK(tiled);
  CHECK(next == w.in_numel());
  CHECK(fits);
  CHECK(once);
}

TEST_CASE("bwd v17's units, run on the host: they tile dx, fit a stage, and give v1's bits; on corrupt indices, v10's bits") {
  // v16's cases (rows of 2 and 1 elements, 275 outputs per row, chunks in one output), then 1 index
  // in 7 replaced by a random one (int64: any cell of the plane; compact: any offset of its type):
  // the inverse compare must give what v10's compare gives, bit for bit.
  const auto cases = host_writer_cases(17);
  int ran = 0, multi = 0, corrupt_differs = 0;
  for (const auto& c : cases) {
    {
      HostBackward probe(c);
      if (!ch06::bwd_v17_refuses<float>(probe.w).empty()) continue;
    }
    INFO(c.name);
    ++ran;
    HostBackward hb(c);
    ch06::BulkPlan b;
    REQUIRE(ch06::bulk_plan<float>(hb.w, b).empty());
    multi += b.G > 1 && b.groups > 1;
    run_v17_on_host(hb.args());
    CHECK(hb.same_bits());
    HostBackward bad(c), h10(c);
    const tut::Random rng(77);
    const std::int64_t plane = bad.w.in_plane();
    for (std::size_t o = 0; o < bad.dy.size(); ++o) {
      const std::uint64_t draw = rng.bits(o);
      if (draw % 7 != 0) continue;
      if (!bad.index.empty()) bad.index[o] = h10.index[o] = static_cast<std::int64_t>((draw >> 8) % static_cast<std::uint64_t>(plane));
      if (!bad.offset8.empty()) bad.offset8[o] = h10.offset8[o] = static_cast<std::uint8_t>(draw >> 8);
      if (!bad.offset16.empty()) bad.offset16[o] = h10.offset16[o] = static_cast<std::int16_t>((draw >> 8) % 32768);
    }
    run_v17_on_host(bad.args());
    run_v10_on_host(h10.args());
    CHECK(std::memcmp(bad.dx.data(), h10.dx.data(), bad.dx.size() * sizeof(float)) == 0);
    corrupt_differs += !bad.same_bits();
  }
  CHECK(ran >= 20);
  CHECK(multi >= 2);
  CHECK(corrupt_differs >= 10);
  // What it refuses: overlap, NDHWC with channels, more than 512 outputs in a row, a row segment
  // past a stage.
  CHECK_FALSE(ch06::bwd_v17_refuses<float>(win({1, 2, 8, 8, 8}, params({3}, {2}, {1}, {1}, 0, "NCDHW", "int64"))).empty());
  CHECK_FALSE(ch06::bwd_v17_refuses<float>(win({1, 4, 8, 8, 8}, params({2}, {2}, {0}, {1}, 0, "NDHWC", "int64"))).empty());
  CHECK(ch06::bwd_v17_refuses<float>(win({1, 1, 8, 8, 8}, params({2}, {2}, {0}, {1}, 0, "NDHWC", "int64"))).empty());
  CHECK_FALSE(ch06::bwd_v17_refuses<float>(win({1, 1, 2, 2, 600}, params({1}, {1}, {0}, {1}, 0, "NCDHW", "int64"))).empty());
  CHECK_FALSE(ch06::bwd_v17_refuses<float>(win({1, 1, 8, 64, 4000}, params({8}, {8}, {0}, {1}, 0, "NCDHW", "int64"))).empty());
  CHECK(ch06::bwd_v17_refuses<float>(win({1, 1, 8, 64, 1000}, params({8}, {8}, {0}, {1}, 0, "NCDHW", "int64"))).empty());
}

TEST_CASE("bwd v11, run on the host element by element: v1's bits; it takes at most 3 outputs per axis, undilated") {
  int ran = 0, three = 0;
  for (const auto& c : host_backward_cases()) {
    HostBackward hb(c);
    if (!ch06::bwd_v11_refuses<float>(hb.w).empty()) continue;
    INFO(c.name);
    ++ran;
    const auto a = hb.args();
    const auto dv = ch06::window_gather_divs(hb.w);
    const int kc = ch06::window_gather_candidates(hb.w);
    three += kc == 3;
    for (std::int64_t e = 0; e < hb.w.in_numel(); ++e)
      hb.dx[static_cast<std::size_t>(e)] =
          kc <= 2 ? ch06::window_gather_one<2>(a, dv, e) : ch06::window_gather_one<3>(a, dv, e);
    CHECK(hb.same_bits());
  }
  CHECK(ran >= 20);
  CHECK(three >= 4);
  const auto w = [](ch06::Spec s) {
    s.indices = "int64";
    return ch06::window_of_case(ch06::make_pool_case(s, true));
  };
  CHECK(ch06::bwd_v11_refuses<float>(w({{1, 2, 12, 12, 12}, {8}, {1}, {4}})) != "");        // 8 per axis
  CHECK(ch06::bwd_v11_refuses<float>(w({{2, 3, 9, 10, 11}, {3}, {1}, {1}, {2}})) != "");     // dilated
  CHECK(ch06::bwd_v11_refuses<float>(w({{2, 3, 9, 10, 11}, {3, 4, 5}, {1, 1, 1}, {1, 2, 2}})) != "");  // 5 along W
  CHECK(ch06::bwd_v11_refuses<float>(w({{2, 3, 9, 10, 11}, {2, 3, 4}, {1, 2, 3}, {1, 1, 2}})) == "");  // 2, 2, 2
}

TEST_CASE("bwd v12's passes, run on the host: no cell added to twice in a pass, v1's sums up to their order") {
  int ran = 0, reordered = 0, three = 0;
  for (const auto& c : host_backward_cases()) {
    HostBackward hb(c);
    if (!ch06::bwd_v12_refuses<float>(hb.w).empty()) continue;
    INFO(c.name);
    ++ran;
    const auto a = hb.args();
    std::fill(hb.dx.begin(), hb.dx.end(), 0.0f);  // the memset
    int m[3];
    ch06::class_periods(hb.w, m);
    three += m[0] * m[1] * m[2] == 27;
    int twice = 0;
    std::int64_t outputs = 0;
    for (int cd = 0; cd < m[0]; ++cd)
      for (int ch = 0; ch < m[1]; ++ch)
        for (int cw = 0; cw < m[2]; ++cw) {
          const auto cp = ch06::class_pass(hb.w, cd, ch, cw);
          outputs += cp.outputs;
          for (std::int64_t i = 0; i < cp.outputs; ++i) ch06::class_add(a, cp, i);
          // The same pass with every dy 1 onto zeros: a cell that ends above 1 was added to twice.
          std::vector<float> ones(hb.dy.size(), 1.0f), count(hb.dx.size(), 0.0f);
          auto b = a;
          b.dy = ones.data();
          b.dx = count.data();
          for (std::int64_t i = 0; i < cp.outputs; ++i) ch06::class_add(b, cp, i);
          for (float n : count) twice += n > 1.0f;
        }
    CHECK(outputs == hb.w.out_numel());  // every output in exactly one class
    // Sums: the same terms as v1's, added in the classes' order.
    int far = 0;
    for (std::size_t e = 0; e < hb.dx.size(); ++e) {
      far += !(std::fabs(hb.dx[e] - hb.dx_v1[e]) <= 1e-6f * (1.0f + std::fabs(hb.dx_v1[e])));
      reordered += hb.dx[e] != hb.dx_v1[e];
    }
    CHECK(far == 0);
    CHECK(twice == 0);
  }
  CHECK(ran >= 20);
  CHECK(three >= 4);
  MESSAGE("v12's sums differ from v1's in the last bits at ", reordered, " elements over the cases");
}

TEST_CASE("bwd v6's columns, run on the host step by step: v1's bits, the masks clear after every column") {
  // Each case twice: with the tiling the kernel gets, and with one that asks for a single column, so
  // that small cases walk columns of several tiles too.
  int ran = 0, walked = 0;
  for (const auto& c : host_backward_cases())
   for (const std::int64_t columns_wanted : {ch06::kStagedColumnsWanted, std::int64_t{1}}) {
    HostBackward hb(c);
    if (!ch06::bwd_v6_refuses<float>(hb.w).empty()) continue;
    INFO(c.name);
    INFO(columns_wanted);
    ++ran;
    ch06::StagedTile st;
    REQUIRE(ch06::staged_tile(hb.w, st, columns_wanted));
    CHECK(st.shared_bytes() <= ch06::kStagedMaxSmem);
    walked += st.L > 1;
    const auto a = hb.args();
    std::vector<unsigned> mask(static_cast<std::size_t>(2 * st.cells * st.words), 0u);
    std::vector<float> dy_of(static_cast<std::size_t>(st.R * st.slice));
    std::vector<unsigned short> cell_of(static_cast<std::size_t>(st.R * st.slice));
    std::vector<unsigned short> list(static_cast<std::size_t>(st.cells));
    int dirty = 0, overfull = 0;
    for (std::int64_t plane = 0; plane < st.planes; ++plane)
      for (std::uint32_t within = 0; within < st.per_plane; ++within) {
        const auto col = ch06::column_at(hb.w, st, plane, within);
        int last_hi0 = -1;
        for (int j = col.j0; j < col.j1; ++j) {
          const auto sp = ch06::step_at(hb.w, st, col, j, last_hi0);
          last_hi0 = sp.hi0;
          // The kernel's three steps, its threads one after another (a barrier between the steps).
          for (int tid = 0; tid < ch06::kStagedBlock; ++tid)
            ch06::stage_thread(a, st, col, sp, tid, mask.data(), cell_of.data(), dy_of.data());
          unsigned listed = 0;
          for (int tid = 0; tid < ch06::kStagedBlock; ++tid)
            ch06::zero_or_list_thread(a, st, col, sp, tid, mask.data(), list.data(), &listed);
          overfull += listed > static_cast<unsigned>(st.cells);
          for (unsigned k = 0; k < listed; ++k)
            ch06::gather_listed(a, st, col, sp, list[k], mask.data(), cell_of.data(), dy_of.data());
        }
        for (unsigned m : mask) dirty += m != 0u;
      }
    CHECK(dirty == 0);
    CHECK(overfull == 0);
    CHECK(hb.same_bits());
  }
  CHECK(ran >= 20);
  CHECK(walked >= 5);  // columns of several tiles, where the ring and the next tile's mask matter
}

TEST_CASE("bwd v7 and v8, run on the host: zeros then one store per output, v1's bits; v8 writes every element") {
  int ran = 0;
  for (const auto& c : host_backward_cases()) {
    if (!ch06::bwd_v7_refuses<float>(ch06::window_of_case(c)).empty()) continue;
    INFO(c.name);
    ++ran;
    {  // v7: the memset, then each output's store
      HostBackward hb(c);
      std::fill(hb.dx.begin(), hb.dx.end(), 0.0f);
      const auto a = hb.args();
      const auto dv = ch06::store_divs<float>(hb.w);
      for (std::int64_t o = 0; o < hb.w.out_numel(); ++o) ch06::store_one_output(a, dv, o);
      CHECK(hb.same_bits());
    }
    {  // v8: per slab, the 32 lanes' zeros, then their values (dx starts as NaN: every element written)
      HostBackward hb(c);
      const auto a = hb.args();
      const auto sa = ch06::slab_args<float>(hb.w);
      const int V = ch06::bwd_v8_pack(a, sa);
      for (std::int64_t i = 0; i < sa.slabs; ++i) {
        for (int lane = 0; lane < 32; ++lane) {
          if (V == 4) ch06::zero_slab<4>(a, sa, i, lane, 32);
          else if (V == 2) ch06::zero_slab<2>(a, sa, i, lane, 32);
          else ch06::zero_slab<1>(a, sa, i, lane, 32);
        }
        for (int lane = 0; lane < 32; ++lane) ch06::fill_slab(a, sa, i, lane, 32);
      }
      CHECK(hb.same_bits());
    }
  }
  CHECK(ran >= 10);
}

TEST_CASE("v7 drops an int64 index outside its output's segment; the compact format cannot name one") {
  HostBackward hb(ch06::make_pool_case({{1, 1, 4, 4, 4}, {2}, {2}, {0}, {1}, 0, "NCDHW", "int64"}, true));
  std::fill(hb.dx.begin(), hb.dx.end(), 0.0f);
  // Output (0, 0, 0) names the last cell, in output (1, 1, 1)'s segment: its dy goes nowhere, and
  // its own cell keeps 0, the cell 63 output 7's value (or 0).
  std::vector<float> expect = hb.dx_v1;
  expect[static_cast<std::size_t>(hb.index[0])] = 0.0f;
  hb.index[0] = 63;
  const auto a = hb.args();
  const auto dv = ch06::store_divs<float>(hb.w);
  for (std::int64_t o = 0; o < hb.w.out_numel(); ++o) ch06::store_one_output(a, dv, o);
  CHECK(std::memcmp(hb.dx.data(), expect.data(), expect.size() * sizeof(float)) == 0);
  hb.index[1] = -5;              // outside the volume
  CHECK_NOTHROW(ch06::store_one_output(a, dv, 1));
}

namespace {
// bwd v9's kernel on the host: per tile, the block's threads one after another in each step, the
// ranks in order. Checks that no two outputs of one rank add to the same cell (what lets the kernel
// add without atomics) and that every output whose cell is in the volume is added exactly once.
void run_ordered_on_host(HostBackward& hb, const ch06::OrderedTile& ot, int& collisions, std::int64_t& added) {
  const auto a = hb.args();
  std::vector<float> tile(static_cast<std::size_t>(ot.cells));
  REQUIRE(ot.cells % ot.run == 0);
  for (std::int64_t t = 0; t < ot.tiles; ++t) {
    const auto b = ch06::tile_box(hb.w, ot, t);
    const auto rc = ch06::tile_recip(b);
    std::fill(tile.begin(), tile.end(), 0.0f);
    const int outputs = ch06::tile_outputs(b);
    REQUIRE(outputs <= ch06::kOrderedMaxOutputs);
    std::vector<int> key(static_cast<std::size_t>(outputs));
    std::vector<float> g(static_cast<std::size_t>(outputs));
    for (int e = 0; e < outputs; ++e) {
      int od, oh, ow, c;
      const std::int64_t o = ch06::ordered_output<float>(hb.w, ot, b, rc, e, od, oh, ow, c);
      const int saved = ch06::saved_as_int(a, o);
      key[static_cast<std::size_t>(e)] = saved < 0 ? -1 : ch06::ordered_key<float>(hb.w, ot, b, od, oh, ow, c, saved);
      g[static_cast<std::size_t>(e)] = a.dy[o];
    }
    for (int p = 0; p < ot.passes; ++p) {
      std::vector<int> hits(tile.size(), 0);
      for (int e = 0; e < outputs; ++e) {
        const int k = key[static_cast<std::size_t>(e)];
        if (k < 0 || (k & 63) != p) continue;
        collisions += hits[static_cast<std::size_t>(k >> 6)]++ > 0;
        tile[static_cast<std::size_t>(k >> 6)] += g[static_cast<std::size_t>(e)];
        ++added;
      }
    }
    for (int r = 0; r < ot.cells / ot.run; ++r) {
      int len = 0;
      const std::int64_t base = ch06::ordered_run<float>(hb.w, ot, b, r, len);
      for (int q = 0; q < len; ++q)
        hb.dx[static_cast<std::size_t>(base + q)] = tile[static_cast<std::size_t>(r * ot.run + q)];
    }
  }
}
}  // namespace

TEST_CASE("bwd v9's tiles, run on the host rank by rank: v1's bits, no two adds of a rank on one cell") {
  int ran = 0, halos = 0;
  for (const auto& c : host_backward_cases()) {
    const auto w = ch06::window_of_case(c);
    if (!ch06::bwd_v9_refuses<float>(w).empty()) continue;
    INFO(c.name);
    // The tiling the kernel gets, and small boxes, so that small volumes have halos between tiles.
    std::vector<ch06::OrderedTile> tilings = {ch06::ordered_plan(w).ot};
    for (const auto& box : std::vector<std::array<int, 4>>{{2, 3, 5, 4}, {1, 4, 8, 3}, {3, 2, 7, 1}}) {
      ch06::OrderedTile ot;
      for (int ax = 0; ax < 4; ++ax) ot.t[ax] = box[static_cast<std::size_t>(ax)];
      ch06::finish_ordered_tile(w, ot);
      tilings.push_back(ot);
    }
    for (const auto& ot : tilings) {
      HostBackward hb(c);
      int collisions = 0;
      std::int64_t added = 0;
      run_ordered_on_host(hb, ot, collisions, added);
      ++ran;
      halos += ot.tiles > hb.w.N * hb.w.C;
      CHECK(collisions == 0);
      CHECK(added == hb.w.out_numel());  // every saved cell is in the volume: each output added once
      CHECK(hb.same_bits());
    }
  }
  CHECK(ran >= 40);
  CHECK(halos >= 20);
}

TEST_CASE("bwd v9's tiling: halos the block can hold, ranks, and what it refuses") {
  const auto idx = [](List k, List s, List p = {0}, std::string layout = "NCDHW") {
    return params(k, s, p, {1}, 0, layout, "int64");
  };
  for (const auto& c : {win({8, 64, 16, 56, 56}, idx({3}, {2}, {1})), win({8, 64, 16, 56, 56}, idx({3}, {2}, {1}, "NDHWC")),
                        win({4, 32, 32, 64, 64}, idx({3}, {1}, {1}))}) {
    const auto plan = ch06::ordered_plan(c);
    REQUIRE(plan.refused.empty());
    CHECK(plan.ot.cells <= ch06::kOrderedMaxCells);
    CHECK(plan.reads_per_cell * plan.ot.cells <= ch06::kOrderedMaxOutputs);
    CHECK(plan.ot.t[2] * plan.ot.t[3] >= 32);  // rows of whole sectors
  }
  // The boxes and halos the lesson quotes: on the stem case 16 x 19 x 56 cells, 0.134 outputs read
  // per cell (the outputs are 0.125 per cell); in NDHWC 4 x 6 x 8 positions x 64 channels, 0.276;
  // kernel 3 stride 1, 8 x 10 x 32, 1.454.
  const auto box = [](const ch06::OrderedPlan& pl) {
    return std::vector<int>{pl.ot.t[0], pl.ot.t[1], pl.ot.t[2], pl.ot.t[3]};
  };
  const auto stem = ch06::ordered_plan(win({8, 64, 16, 56, 56}, idx({3}, {2}, {1})));
  CHECK(box(stem) == std::vector<int>{16, 19, 56, 1});
  CHECK(stem.reads_per_cell == doctest::Approx(0.134).epsilon(0.004));
  const auto stem_cl = ch06::ordered_plan(win({8, 64, 16, 56, 56}, idx({3}, {2}, {1}, "NDHWC")));
  CHECK(box(stem_cl) == std::vector<int>{4, 6, 8, 64});
  CHECK(stem_cl.reads_per_cell == doctest::Approx(0.276).epsilon(0.002));
  const auto s1 = ch06::ordered_plan(win({4, 32, 32, 64, 64}, idx({3}, {1}, {1})));
  CHECK(box(s1) == std::vector<int>{8, 10, 32, 1});
  CHECK(s1.reads_per_cell == doctest::Approx(1.454).epsilon(0.001));
  CHECK(ch06::ordered_plan(win({8, 64, 16, 56, 56}, idx({3}, {2}, {1}))).ot.passes == 8);
  CHECK(ch06::ordered_plan(win({4, 32, 32, 64, 64}, idx({3}, {1}, {1}))).ot.passes == 27);
  CHECK_FALSE(ch06::bwd_v9_refuses<float>(win({1, 16, 64, 64, 64}, idx({8}, {1}))).empty());  // 512 ranks
  CHECK_FALSE(ch06::bwd_v9_refuses<float>(win({2, 3, 11, 12, 13}, params({3}, {1}, {1}, {2}, 0, "NCDHW", "int64"))).empty());
  // NCDHW rows shorter than 32 cells: the planner once asked for runs of min(32, W * C) cells there,
  // and so found no tile.
  const auto short_rows = ch06::ordered_plan(win({2, 16, 14, 20, 22}, idx({3}, {2}, {1})));
  CHECK(short_rows.refused.empty());
  CHECK(short_rows.ot.t[2] == 22);  // whole rows
}

TEST_CASE("bwd v6's tiling: the stem pooling's and kernel 8 stride 1's columns, and what it refuses") {
  ch06::StagedTile st;
  const auto idx = [](List k, List s, List p = {0}, std::string layout = "NCDHW") {
    return params(k, s, p, {1}, 0, layout, "int64");
  };
  REQUIRE(ch06::staged_tile(win({8, 64, 16, 56, 56}, idx({3}, {2}, {1})), st));
  CHECK(st.words == 1);   // 2 x 2 (D, H) slots
  CHECK(st.T[2] >= 16);   // rows of whole sectors
  CHECK(st.cells <= ch06::kStagedMaxCells);
  REQUIRE(ch06::staged_tile(win({8, 64, 16, 56, 56}, idx({3}, {2}, {1}, "NDHWC")), st));
  CHECK(st.cl);
  CHECK(st.CT >= 8);
  REQUIRE(ch06::staged_tile(win({1, 16, 64, 64, 64}, idx({8}, {1})), st));
  CHECK(st.words == 2);   // 8 x 8 (D, H) slots
  CHECK(st.shared_bytes() <= ch06::kStagedMaxSmem);
  CHECK(st.L > 1);        // the halo along D staged once per column of tiles
  CHECK(st.T[0] >= 7);    // a window reaches one tile down at most
  CHECK_FALSE(ch06::bwd_v6_refuses<float>(win({1, 2, 40, 40, 40}, idx({9}, {1}))).empty());  // 81 slots
  CHECK_FALSE(ch06::bwd_v6_refuses<float>(win({2, 3, 11, 12, 13}, params({3}, {1}, {1}, {2}, 0, "NCDHW", "int64"))).empty());
}

TEST_CASE("fwd v13 and v15 take windows side by side along W whose rows are 2, 4 or 8 bytes, and say why they refuse the rest") {
  // Outputs a thread: 16 bytes of window rows.
  static_assert(ch06::kOutputPack<2, __half> == 4 && ch06::kOutputPack<4, __half> == 2 && ch06::kOutputPack<1, __half> == 8);
  static_assert(ch06::kOutputPack<2, float> == 2 && ch06::kOutputPack<1, float> == 4);
  const auto takes = [](const tut::Params& p, bool half) {
    const auto w = win({2, 3, 8, 10, 32}, p);
    return half ? ch06::fwd_v13_refuses<__half>(w) : ch06::fwd_v13_refuses<float>(w);
  };
  for (bool half : {false, true}) {
    INFO("half: ", half);
    CHECK(takes(params({2}, {2}), half).empty());
    CHECK(takes(params({3, 3, 2}, {2, 2, 2}, {1, 1, 0}), half).empty());        // padded in D and H
    CHECK(takes(params({2}, {2}, {0}, {1}, 1), half).empty());                  // ceil_mode
    CHECK(takes(params({2, 2, 1}, {1, 1, 1}), half).empty());                   // kernel 1 along W
    CHECK(takes(params({2}, {2}, {0}, {1}, 0, "NDHWC"), half).find("NCDHW") != std::string::npos);
    CHECK(takes(params({2}, {2}, {0}, {2}), half).find("dilation") != std::string::npos);
    CHECK(takes(params({2}, {1}), half).find("side by side") != std::string::npos);         // overlap along W
    CHECK(takes(params({2}, {3}), half).find("side by side") != std::string::npos);         // gaps along W
    CHECK(takes(params({2}, {2}, {1}), half).find("side by side") != std::string::npos);    // padding along W
    CHECK(takes(params({3}, {3}), half).find("bytes") != std::string::npos);                // rows of 6 or 12 bytes
    CHECK(takes(params({8}, {8}), half).find("bytes") != std::string::npos);                // rows of 16 or 32 bytes
  }
  CHECK(takes(params({4}, {4}), true).empty());                                            // 8 bytes of half
  CHECK(takes(params({4}, {4}), false).find("bytes") != std::string::npos);                // 16 bytes of float
  // v15 reads the same packs: the same cases, each refusal in its own name.
  for (const auto& p : {params({2}, {2}), params({2}, {2}, {0}, {1}, 1), params({3}, {3}), params({2}, {1})}) {
    const auto w = win({2, 3, 8, 10, 32}, p);
    CHECK(ch06::fwd_v15_refuses<float>(w).empty() == ch06::fwd_v13_refuses<float>(w).empty());
    CHECK(ch06::fwd_v15_refuses<__half>(w).empty() == ch06::fwd_v13_refuses<__half>(w).empty());
  }
  CHECK(ch06::fwd_v15_refuses<float>(win({2, 3, 8, 10, 32}, params({3}, {3}))).rfind("fwd_v15_packs_max_first", 0) == 0);
}

TEST_CASE("fwd v14 splits a warp into pieces, outputs and row sets of 32 lanes, and says why it refuses a case") {
  const auto split = [](std::vector<std::int64_t> shape, const tut::Params& p, int V) { return ch06::row_lanes(win(shape, p), V); };
  // 2 x 64 x 64^3, kernel 8, float: two pieces a row, the 8 outputs of a row, 2 lanes over the 64 rows.
  auto g = split({2, 64, 64, 64, 64}, params({8}, {8}), 4);
  CHECK(g.q == 2);
  CHECK(g.O == 8);
  CHECK(g.S == 2);
  CHECK(g.tasks.count == 2 * 64 * 8 * 8);
  CHECK((g.step_d == 0 && g.step_h == 2));
  // Rows of 9 outputs: tiles of 8, two a row; kernel 4 is one piece, so 4 lanes over its 16 rows.
  g = split({2, 2, 9, 9, 36}, params({4}, {4}, {0}, {1}, 1), 4);
  CHECK((g.q == 1 && g.O == 8 && g.S == 4 && g.tasks.per_row == 2));
  CHECK(g.tasks.count == 2 * 2 * 3 * 3 * 2);
  // One output a row: every lane but the pieces over the rows, S past kH: (jd, jh) step by (2, 0) for kH = 4.
  g = split({1, 1, 8, 4, 16}, params({8, 4, 16}, {8, 4, 16}), 4);
  CHECK((g.q == 4 && g.O == 1 && g.S == 8 && g.step_d == 2 && g.step_h == 0));
  for (const auto& t : {g, split({2, 64, 64, 64, 64}, params({8}, {8}), 4), split({3, 2, 8, 8, 64}, params({8}, {8}), 8)})
    CHECK(t.q * t.O * t.S == 32);
  // The grid: as many rounds of tasks as one wave of warps needs, then the fewest blocks for them.
  CHECK(ch06::balanced_grid(8192, 8, 132 * 3) == 342);   // 3 rounds: 2731 warps, not 2.59 waves of 1024 blocks
  CHECK(ch06::balanced_grid(8192, 8, 132 * 8) == 1024);  // one round: a task a warp
  CHECK(ch06::balanced_grid(10, 8, 100) == 2);
  CHECK(ch06::balanced_grid(1, 8, 100) == 1);
  const auto why = [](const tut::Params& p, bool half) {
    const auto w = win({2, 3, 16, 16, 64}, p);
    return half ? ch06::fwd_v14_refuses<__half>(w) : ch06::fwd_v14_refuses<float>(w);
  };
  CHECK(why(params({8}, {8}), false).empty());
  CHECK(why(params({4, 4, 4}, {4, 4, 4}, {2, 2, 0}), false).empty()); // padding along D and H
  CHECK(why(params({4, 4, 8}, {4, 4, 8}, {2, 2, 4}), false).empty()); // a piece of padding along W
  CHECK(why(params({8}, {4}), false).empty());                        // overlap: pieces read twice, still correct
  CHECK(why(params({8}, {8}), true).empty());                         // half: kernel 8 is one piece
  CHECK(why(params({4}, {4}), true).find("pieces") != std::string::npos);      // 8 bytes of half
  CHECK(why(params({3}, {3}), false).find("pieces") != std::string::npos);     // 12 bytes
  CHECK(why(params({12}, {12}), false).find("pieces") != std::string::npos);   // 3 pieces: not a power of two
  CHECK(why(params({8}, {6}), false).find("16-byte") != std::string::npos);    // stride 6 along W
  CHECK(why(params({4}, {4}, {0}, {1}, 1), false).empty());            // ceil_mode
  CHECK(why(params({4, 4, 4}, {4, 4, 4}, {0, 0, 2}), false).find("16-byte") != std::string::npos);  // padding 2 along W
  CHECK(why(params({8}, {8}, {0}, {1}, 0, "NDHWC"), false).find("NCDHW") != std::string::npos);
  CHECK(why(params({4}, {4}, {0}, {2}), false).find("dilation") != std::string::npos);
  CHECK(ch06::fwd_v14_refuses<float>(win({2, 3, 16, 16, 66}, params({4}, {4}))).find("16-byte") != std::string::npos);  // W = 66
}

TEST_CASE("bwd v29's keys, run on the host: each |dy|'s lowest set bit and the partial's top, low and bad are v19's, every exponent and mantissa bit") {
  // v19's parts of a float (FloatParts): value = m 2^e, m with the implicit bit, e = E - 150 (E > 0)
  // or -149; its lowest set bit is at e + ffs(m) - 1, its top at e + 24.
  const auto low_of = [](std::uint32_t a) {
    const std::uint32_t E = a >> 23, f = a & 0x7FFFFFu, m = E ? f | 0x800000u : f;
    return (E ? static_cast<int>(E) - 150 : -149) + __builtin_ffs(static_cast<int>(m)) - 1;
  };
  const auto top_of = [](std::uint32_t a) { return ((a >> 23) ? static_cast<int>(a >> 23) - 150 : -149) + 24; };
  tut::Random rng(29);
  int checked = 0;
  CHECK(ch06::lean_low_key(0) == 0xFFFFFFFFu);  // a zero never lowers the minimum
  for (std::uint32_t E = 0; E < 255; ++E)
    for (int bit = -1; bit < 23; ++bit)  // no mantissa bit, then each single one
      for (int r = 0; r < 9; ++r) {      // and with random bits above it
        std::uint32_t f = bit < 0 ? 0u : 1u << bit;
        if (r && bit >= 0) f |= static_cast<std::uint32_t>(rng.unit(E * 4096 + bit * 16 + r) * 8388608.0) & (0x7FFFFFu << bit);
        const std::uint32_t a = E << 23 | f;
        if (a == 0) continue;
        INFO("bits ", a);
        CHECK(static_cast<int>(ch06::lean_low_key(a)) - 149 == low_of(a));
        ++checked;
      }
  CHECK(checked > 50000);
  // A set of values: the partial from the largest bits and the smallest key against v19's fold.
  for (int trial = 0; trial < 200; ++trial) {
    std::uint32_t top = 0, key = 0xFFFFFFFFu;
    int want_top = INT_MIN, want_low = INT_MAX;
    const int n = 1 + trial % 17;
    for (int i = 0; i < n; ++i) {
      const double u = rng.unit(trial * 64 + i);
      std::uint32_t a = static_cast<std::uint32_t>(u * 2139095040.0);  // below 0x7F800000: finite
      if (i % 5 == 4) a = 0;                                             // zeros among them
      top = std::max(top, a);
      key = std::min(key, ch06::lean_low_key(a));
      if (a) want_top = std::max(want_top, top_of(a)), want_low = std::min(want_low, low_of(a));
    }
    const ch06::FixBits b = ch06::lean_fix_bits(top, key);
    CHECK(b.top == want_top);
    CHECK(b.low == want_low);
    CHECK(b.bad == 0);
  }
  CHECK(ch06::lean_fix_bits(0x7F800000u, 10).bad == 1);  // an Inf
  CHECK(ch06::lean_fix_bits(0x7FC00001u, 10).bad == 1);  // a NaN
  CHECK(ch06::lean_fix_bits(0, 0xFFFFFFFFu).top == INT_MIN);  // every dy zero
}

TEST_CASE("launchers refuse bad arguments before any launch") {
  const auto w = win({1, 2, 5, 6, 7}, params({3}, {2}, {1}, {1}, 0, "NCDHW", "int64"));
  ch06::ForwardArgs<float> a;
  a.w = w;
  CHECK_THROWS_AS(ch06::check_forward(a, "test"), std::invalid_argument);  // no pointers
  std::vector<float> x(1), y(1);
  a.x = x.data();
  a.y = y.data();
  CHECK_THROWS_AS(ch06::check_forward(a, "test"), std::invalid_argument);  // int64 without the index array
  std::vector<std::int64_t> idx(1);
  a.index = idx.data();
  CHECK_NOTHROW(ch06::check_forward(a, "test"));
  a.w.p[1] = 2;  // padding past kernel / 2
  CHECK_THROWS_AS(ch06::check_forward(a, "test"), std::invalid_argument);
  a.w = w;
  a.w.s[0] = 0;
  CHECK_THROWS_AS(ch06::check_forward(a, "test"), std::invalid_argument);
  ch06::BackwardArgs<float> b;
  b.w = win({1, 2, 5, 6, 7}, params({3}, {2}, {1}));
  std::vector<float> dy(1), dx(1);
  b.dy = dy.data();
  b.dx = dx.data();
  CHECK_THROWS_AS(ch06::check_backward(b, "test"), std::invalid_argument);  // indices=none: nothing to read
}

#if TUT_EXERCISES
#include "exercises/unrolled_padded.cuh"

TEST_CASE("exercise: the window size is one the grader can build cases for") {
  CHECK(exercise::kKernel >= 2);
  CHECK(exercise::kKernel <= 8);
}
#endif
