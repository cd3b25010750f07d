// Host-only tests: the index arithmetic every kernel relies on (the channel of an element, the
// divisor, the NHWC rows and NCHW shares replayed for every thread of a grid), Chan's merge, the
// float32 cancellation the lesson shows and the tolerances it justifies, the cases' errors, the
// floors, and the launchers' refusals before any launch. No GPU needed.
#include <doctest/doctest.h>

#include "float_stats.cuh"
#include "reference.hpp"
#include "versions.cuh"

#if TUT_EXERCISES
#include "exercises/answers.hpp"
#include "tut/exercise.hpp"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {
using namespace ch05;

Shape4 shape(std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W, Layout l) { return Shape4{N, C, H * W, l}; }

std::string case_error(const tut::ProblemEntry& p, const std::vector<std::int64_t>& dims,
                       const std::vector<std::pair<std::string, std::string>>& params = {}) {
  try {
    tut::make_case(p, dims, params);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("Divisor: the double-multiply quotient is exact, up to 2^50") {
  std::mt19937_64 rng(5);
  for (std::int64_t d : {1LL, 2LL, 3LL, 7LL, 49LL, 221LL, 323LL, 784LL, 12544LL, 50176LL, 1LL << 20, (1LL << 31) - 1}) {
    const Divisor div(d);
    for (std::int64_t n : std::initializer_list<std::int64_t>{0, 1, d - 1, d, d + 1, 2 * d - 1, (1LL << 50) - 1}) {
      CHECK(div.div(n) == n / d);
    }
    for (int k = 0; k < 20000; ++k) {
      const std::int64_t n = static_cast<std::int64_t>(rng() >> 14);  // below 2^50
      REQUIRE_MESSAGE(div.div(n) == n / d, n, " / ", d);
      const std::int64_t m = (n / d) * d;  // exact multiples and their neighbours: where truncation errs
      CHECK(div.div(m) == m / d);
      if (m > 0) CHECK(div.div(m - 1) == (m - 1) / d);
    }
  }
}

TEST_CASE("ChannelMap walks the channels of both layouts as Shape4::channel_of says") {
  for (Layout l : {Layout::nchw, Layout::nhwc}) {
    for (const auto& s : {shape(2, 3, 7, 7, l), shape(3, 33, 1, 1, l), shape(1, 64, 2, 2, l), shape(2, 1, 1, 2, l)}) {
      const ChannelMap map(s);
      int c = 0;
      std::int64_t pos = 0;
      map.locate(0, c, pos);
      for (std::int64_t e = 0; e < s.numel(); ++e) {
        int c2;
        std::int64_t pos2;
        map.locate(e, c2, pos2);
        REQUIRE(c == s.channel_of(e));
        REQUIRE(c2 == c);
        REQUIRE(pos2 == pos);
        map.step(c, pos);
      }
    }
  }
  // Shape4::index_of enumerates each channel's values once, in its own channel.
  for (Layout l : {Layout::nchw, Layout::nhwc}) {
    const Shape4 s = shape(3, 5, 2, 3, l);
    std::vector<int> seen(static_cast<std::size_t>(s.numel()), 0);
    for (std::int64_t c = 0; c < s.C; ++c)
      for (std::int64_t j = 0; j < s.per_channel(); ++j) {
        const std::int64_t e = s.index_of(c, j);
        REQUIRE(s.channel_of(e) == c);
        ++seen[static_cast<std::size_t>(e)];
      }
    for (int v : seen) CHECK(v == 1);
  }
}

TEST_CASE("Chan's merge equals the statistics of the union; an empty side changes nothing") {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> a(1000), b(37);
  for (auto& v : a) v = 50.0f + u(rng);
  for (auto& v : b) v = 51.0f + u(rng);
  Welford wa{}, wb{};
  for (float v : a) welford_add(wa, v);
  for (float v : b) welford_add(wb, v);
  std::vector<float> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const Welford m = merge(wa, wb);
  CHECK(m.n == 1037.0f);
  CHECK(m.mean == doctest::Approx(exact_mean(all)).epsilon(1e-6));
  CHECK(m.m2 / m.n == doctest::Approx(exact_var(all)).epsilon(1e-5));
  const Welford e = merge(wa, Welford{}), f = merge(Welford{}, wa), z = merge(Welford{}, Welford{});
  CHECK(e.n == wa.n);
  CHECK(e.mean == wa.mean);
  CHECK(e.m2 == wa.m2);
  CHECK(f.mean == wa.mean);
  CHECK(f.m2 == wa.m2);
  CHECK(z.n == 0.0f);
}

TEST_CASE("float32 variance at mean 1000: the naive formula loses it, Welford and Chan keep it") {
  // One channel of 16x32x112x112, x uniform in [997, 1003): variance 3.
  const auto x = channel_values(16 * 112 * 112, 1000.0, 20261121);
  const double var = exact_var(x);
  const double naive = naive_float(x).var;
  MESSAGE("exact ", var, "; naive float32 ", naive, "; 256 Welford streams merged by Chan ", welford_gpu_float(x, 256).var);
  CHECK(std::fabs(naive - var) > 0.1 * var);  // the cancellation: wrong in the first digit or worse
  // At mean 0 the same formula is off by parts in 10^5: the offset does it, not the formula's length.
  const auto x0 = channel_values(16 * 112 * 112, 0.0, 20261121);
  CHECK(std::fabs(naive_float(x0).var - exact_var(x0)) < 1e-3 * exact_var(x0));
}

TEST_CASE("the kernels' float32 arithmetic lies well inside the GPU tests' tolerances") {
  // The arrangements the kernels use (v1: 512 streams per channel; v2 and v3: 256 threads of 4
  // streams per block, several blocks), on one channel of 16x32x112x112 and of 64x64x112x112, at
  // mean 0 and at mean 1000. A factor of 3 to spare.
  for (std::int64_t M : {16 * 112 * 112, 64 * 112 * 112}) {
    for (double shift : {0.0, 1000.0}) {
      const auto x = channel_values(M, shift, 7);
      const double var = exact_var(x), mean = exact_mean(x);
      for (const FloatMoments& m : {welford_gpu_float(x, 512), welford_gpu_float(x, 1024), welford_gpu_float(x, 17 * 1024),
                                    two_pass_gpu_float(x, 512)}) {
        INFO("M = ", M, ", shift = ", shift, ": mean ", m.mean, " against ", mean, ", var ", m.var, " against ", var);
        CHECK(std::fabs(m.var - var) < kVarTol / 3 * var);
        CHECK(std::fabs(m.mean - mean) < kMeanTol / 3 * (std::fabs(mean) + std::sqrt(var)));
      }
    }
  }
}

TEST_CASE("NHWC rows: every whole pack once, each stream in one channel, for any C") {
  for (std::int64_t C : {1, 2, 3, 4, 7, 8, 33, 64, 300, 2048, 2049}) {
    for (int V : {1, 4, 8}) {
      for (std::int64_t rows_of_c : {1LL, 5LL, 40LL, 333LL}) {
        const Shape4 s{1, C, rows_of_c, Layout::nhwc};
        const NhwcPlan p = nhwc_plan(s, V);
        INFO("C = ", C, ", V = ", V, ", N*H*W = ", rows_of_c);
        REQUIRE(p.L % C == 0);
        REQUIRE(p.L % V == 0);
        REQUIRE(p.bx * p.by <= kBlock);
        REQUIRE(static_cast<std::int64_t>(p.gx) * p.bx >= p.P);
        for (std::int64_t target : {1, 7, 528}) {
          const int gy = nhwc_row_blocks(p, target);
          std::vector<int> seen(static_cast<std::size_t>(p.q_full), 0);
          for (int bxi = 0; bxi < p.gx; ++bxi)
            for (int byi = 0; byi < gy; ++byi)
              for (int tid = 0; tid < kBlock; ++tid) {
                const int tx = tid % p.bx, ty = tid / p.bx;
                const std::int64_t j = static_cast<std::int64_t>(bxi) * p.bx + tx;
                if (ty >= p.by || j >= p.P) continue;
                const std::int64_t r0 = static_cast<std::int64_t>(byi) * p.by + ty, step = static_cast<std::int64_t>(p.by) * gy;
                const auto visit = [&](std::int64_t r) {
                  const std::int64_t e0 = nhwc_pack_at(p, r, j);
                  REQUIRE(e0 % V == 0);
                  REQUIRE(e0 / V < p.q_full);
                  ++seen[static_cast<std::size_t>(e0 / V)];
                  for (int k = 0; k < V; ++k) REQUIRE(s.channel_of(e0 + k) == (j * V + k) % C);
                  return 0;
                };
                sequence<4>(r0, step, p.q_full / p.P, visit, [](int) {});
                const std::int64_t last = nhwc_partial_row(p, j, r0, step);
                if (last >= 0) visit(last);
              }
          for (int v : seen) REQUIRE(v == 1);
          // Each channel occurs L / C times in a row, counted over the column tiles as the gather does.
          std::map<std::int64_t, int> places;
          for (int bxi = 0; bxi < p.gx; ++bxi)
            for (std::int64_t c = 0; c < C; ++c)
              for (std::int64_t e = c; e < p.L; e += C) {
                const std::int64_t col = e / V - static_cast<std::int64_t>(bxi) * p.bx;
                if (col >= 0 && col < p.bx) ++places[c];
              }
          for (std::int64_t c = 0; c < C; ++c) REQUIRE(places[c] == p.L / C);
        }
      }
    }
  }
}

TEST_CASE("NCHW shares: every pack of a channel once, by the S blocks sharing it") {
  for (const auto& s : {shape(2, 3, 8, 8, Layout::nchw), shape(5, 7, 13, 17, Layout::nchw), shape(2, 1, 1, 2, Layout::nchw),
                        shape(16, 2, 56, 56, Layout::nchw)}) {
    for (int V : {1, 4}) {
      if (s.HW % V) continue;
      for (std::int64_t target : {1, 64, 1056}) {
        const int S = nchw_splits(s, target);
        const Divisor hw(s.HW);
        const std::int64_t packs = s.per_channel() / V;
        for (std::int64_t c = 0; c < s.C; ++c) {
          std::vector<int> seen(static_cast<std::size_t>(packs), 0);
          for (int chunk = 0; chunk < S; ++chunk)
            for (int t = 0; t < kBlock; ++t)
              sequence<4>(
                  chunk * kBlock + t, static_cast<std::int64_t>(S) * kBlock, packs,
                  [&](std::int64_t u) {
                    const std::int64_t e0 = nchw_pack_at(s, hw, c, u, V);
                    for (int k = 0; k < V; ++k) REQUIRE(s.channel_of(e0 + k) == c);
                    ++seen[static_cast<std::size_t>(u)];
                    return 0;
                  },
                  [](int) {});
          for (int v : seen) REQUIRE(v == 1);
        }
      }
    }
  }
}

TEST_CASE("version 3's plans: one item per block while C fits the grid; slots cover what phase 1 writes") {
  const Shape4 nchw = shape(64, 64, 112, 112, Layout::nchw), nhwc = shape(64, 64, 112, 112, Layout::nhwc);
  const V3Plan a = v3_plan(nchw, 4, 528);
  CHECK(a.S * 64 <= 528);
  CHECK(a.slots == a.S);
  const V3Plan b = v3_plan(nhwc, 4, 528);
  CHECK(b.nhwc.gx * b.gy <= 528);
  CHECK(b.slots == b.nhwc.gx * b.gy + 1);  // and the slot of the elements after the last whole pack
  const V3Plan c = v3_plan(shape(2, 2048, 1, 1, Layout::nchw), 4, 528);
  CHECK(c.S == 1);  // more channels than blocks: blocks take several
}

TEST_CASE("Scratch: 256-byte aligned pieces, parameters padded to 8 channels") {
  const Scratch s(33, 1000, 77);
  CHECK(s.Cp == 40);
  CHECK(s.partials % 256 == 0);
  CHECK(s.counters % 256 == 0);
  CHECK(s.buffer % 256 == 0);
  CHECK(s.total >= s.buffer + 77);
  CHECK(s.partials >= 4 * 40 * sizeof(float));
  CHECK(s.counters >= s.partials + 1000);
}

TEST_CASE("bad cases are refused with a clear error, before any launch") {
  const auto fwd = tut::erase(bn_relu_f32()), inf = tut::erase(bn_relu_inference_f32());
  CHECK(case_error(fwd, {16, 32, 112, 112}).empty());
  CHECK(case_error(fwd, {16, 0, 112, 112}).find("dimension C is 0") != std::string::npos);
  CHECK(case_error(fwd, {0, 3, 4, 4}).find("dimension N is 0") != std::string::npos);
  const std::string one = case_error(fwd, {1, 64, 1, 1});
  CHECK(one.find("expected more than 1 value per channel when training") != std::string::npos);
  CHECK(one.find("[1, 64, 1, 1]") != std::string::npos);
  CHECK(case_error(inf, {1, 64, 1, 1}).empty());  // inference has nothing to reduce
  CHECK(case_error(fwd, {1, 1, 1, 2}).empty());   // the smallest valid training shapes
  CHECK(case_error(fwd, {2, 1, 1, 1}).empty());
  CHECK(case_error(fwd, {4, 3, 5}).find("4 dimensions") != std::string::npos);
  CHECK(case_error(fwd, {2, 3, 4, 4}, {{"layout", "NCWH"}}).find("'NCWH' is not one of NCHW, NHWC") != std::string::npos);
  CHECK(case_error(fwd, {2, 3, 4, 4}, {{"eps", "0"}}).find("eps must be positive") != std::string::npos);
  CHECK(case_error(fwd, {2, 3, 4, 4}, {{"momentum", "1.5"}}).find("momentum") != std::string::npos);
  // The launchers check their shapes first, so a bad one throws before any CUDA call.
  FwdArgs<float> a;
  a.s = Shape4{2, 0, 4, Layout::nchw};
  const auto v2 = &fwd_v2_layout_aware<float, false>, v3 = &fwd_v3_single_read<float, false>, v0 = &fwd_v0_unfused<float, false>;
  CHECK_THROWS_AS(v2(nullptr, a, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(v3(nullptr, a, nullptr), std::invalid_argument);
  CHECK_THROWS_AS(v0(nullptr, a, nullptr), std::invalid_argument);
  CHECK_THROWS_AS((fwd_v4_own_packs<float, false>(nullptr, a, nullptr)), std::invalid_argument);
  FwdArgs<__half> h;
  h.s = Shape4{1, 1, 0, Layout::nhwc};
  CHECK_THROWS_AS((fwd_v5_onchip_cache<__half, true>(nullptr, h, nullptr)), std::invalid_argument);
  CHECK_THROWS_AS((fwd_v7_mask_bytes<__half, false>(nullptr, h, nullptr)), std::invalid_argument);
  BwdArgs<float> b;
  b.s = Shape4{0, 3, 4, Layout::nhwc};
  const auto b3 = &bwd_v3_single_read<float, true>;
  CHECK_THROWS_AS(b3(nullptr, b, nullptr), std::invalid_argument);
  CHECK_THROWS_AS((bwd_v4_own_packs<float, true>(nullptr, b, nullptr)), std::invalid_argument);
  CHECK_THROWS_AS((bwd_v5_onchip_cache<float, false>(nullptr, b, nullptr)), std::invalid_argument);
}

// Versions 4 and 5 write the mask in phase 3 from each thread's own phase-1 packs: a word is the
// ballot of a group of 32 / V lanes, so at every step each group must hold 32 consecutive elements
// starting at a multiple of 32, or be wholly past its walk. Replayed here for every thread of a
// grid, with the tail (elements from tail_first on, one warp) covering the rest, each element once.
TEST_CASE("the own walk of versions 4 and 5: whole mask words per lane group, every element once") {
  std::vector<Shape4> shapes;
  for (std::int64_t C : {1, 2, 4, 8, 16, 32, 64, 96, 256, 1024, 2048, 3, 33})
    for (std::int64_t M : {1, 7, 50, 333}) shapes.push_back(Shape4{1, C, M, Layout::nhwc});
  for (std::int64_t HW : {32, 64, 96, 224, 4, 49})
    for (std::int64_t N : {1, 3}) shapes.push_back(Shape4{N, 5, HW, Layout::nchw});
  shapes.push_back(Shape4{2, 64, 12544, Layout::nchw});
  int walked = 0;
  for (const Shape4& s : shapes) {
    for (int V : {1, 4, 8}) {
      if (s.layout == Layout::nchw && s.HW % V) continue;
      INFO("C = ", s.C, ", HW = ", s.HW, ", N = ", s.N, ", layout ", static_cast<int>(s.layout), ", V = ", V);
      if (!own_words_whole(s, V)) {
        CHECK((s.layout == Layout::nchw ? s.HW % 32 != 0 : (s.C == 3 || s.C == 33)));
        continue;
      }
      ++walked;
      const std::int64_t main_end = own_main_end(s, V), n = s.numel(), lanes = 32 / V;
      for (int grid : {1, 7, 264}) {
        const V3Plan plan = v3_plan(s, V, grid);
        const std::int64_t tail_first = s.layout == Layout::nchw ? n : main_end * plan.nhwc.L;
        REQUIRE(tail_first % 32 == 0);
        std::vector<int> seen(static_cast<std::size_t>(n), 0);
        for (std::int64_t e = tail_first; e < n; ++e) ++seen[static_cast<std::size_t>(e)];
        for (int b = 0; b < grid; ++b)
          for (std::int64_t item = b; item < v3_items(s, plan); item += grid)
            for (int warp = 0; warp < kWarps; ++warp) {
              OwnItem w[32];
              std::int64_t count[32];
              for (int l = 0; l < 32; ++l) {
                w[l] = own_item(s, plan, V, item, warp * 32 + l);
                OwnItem m = w[l];
                m.end = std::min(m.end, main_end);
                count[l] = m.count();
                REQUIRE(count[l] <= count[0]);  // lane 0 walks the longest
              }
              for (std::int64_t i = 0; i < count[0]; ++i)
                for (int g = 0; g < 32 / lanes; ++g) {
                  const int l0 = static_cast<int>(g * lanes);
                  const bool valid = i < count[l0];
                  const std::int64_t base = valid ? own_pack_at(s, plan, V, w[l0], w[l0].first + i * w[l0].step) : 0;
                  REQUIRE((!valid || base % 32 == 0));
                  for (int l = l0; l < l0 + lanes; ++l) {
                    REQUIRE((i < count[l]) == valid);
                    if (!valid) continue;
                    const std::int64_t e0 = own_pack_at(s, plan, V, w[l], w[l].first + i * w[l].step);
                    REQUIRE(e0 == base + (l - l0) * V);
                    for (int k = 0; k < V; ++k) {
                      REQUIRE(s.channel_of(e0 + k) == (s.layout == Layout::nchw ? w[l].c : (w[l].j * V + k) % s.C));
                      ++seen[static_cast<std::size_t>(e0 + k)];
                    }
                  }
                }
            }
        for (std::int64_t e = 0; e < n; ++e) REQUIRE(seen[static_cast<std::size_t>(e)] == 1);
      }
    }
  }
  CHECK(walked > 40);
}

// Version 7 writes a byte of the mask per pack of 8 halves: every pack phase 3 walks must start at
// a multiple of 8, and its packs (every whole row in NHWC, every pack in NCHW) with the tail warp's
// elements from tail_first on (a multiple of 8) must cover each element once, for any C.
TEST_CASE("version 7's walk: packs of 8 on byte boundaries, every element once, any C") {
  constexpr int V = 8;
  std::vector<Shape4> shapes;
  for (std::int64_t C : {1, 2, 3, 7, 8, 33, 64, 96, 1024, 2047})
    for (std::int64_t M : {1, 7, 50, 333}) shapes.push_back(Shape4{1, C, M, Layout::nhwc});
  for (std::int64_t HW : {8, 24, 32, 56, 96})
    for (std::int64_t N : {1, 3}) shapes.push_back(Shape4{N, 5, HW, Layout::nchw});
  for (const Shape4& s : shapes) {
    INFO("C = ", s.C, ", HW = ", s.HW, ", N = ", s.N, ", layout ", static_cast<int>(s.layout));
    const std::int64_t n = s.numel();
    for (int grid : {1, 7, 264}) {
      const V3Plan plan = v3_plan(s, V, grid);
      const std::int64_t main_end = s.layout == Layout::nchw ? s.per_channel() / V : plan.nhwc.q_full / plan.nhwc.P;
      const std::int64_t tail_first = s.layout == Layout::nchw ? n : main_end * plan.nhwc.L;
      REQUIRE(tail_first % 8 == 0);
      std::vector<int> seen(static_cast<std::size_t>(n), 0);
      for (std::int64_t e = tail_first; e < n; ++e) ++seen[static_cast<std::size_t>(e)];
      for (int b = 0; b < grid; ++b)
        for (std::int64_t item = b; item < v3_items(s, plan); item += grid)
          for (int t = 0; t < kBlock; ++t) {
            OwnItem w = own_item(s, plan, V, item, t);
            w.end = std::min(w.end, main_end);
            for (std::int64_t i = 0; i < w.count(); ++i) {
              const std::int64_t e0 = own_pack_at(s, plan, V, w, w.first + i * w.step);
              REQUIRE(e0 % 8 == 0);
              for (int k = 0; k < V; ++k) ++seen[static_cast<std::size_t>(e0 + k)];
            }
          }
      for (std::int64_t e = 0; e < n; ++e) REQUIRE(seen[static_cast<std::size_t>(e)] == 1);
    }
  }
}

TEST_CASE("v6's queue and cached units: every element once, forward (whole words) and backward") {
  std::vector<Shape4> shapes;
  for (std::int64_t C : {1, 4, 32, 64, 96, 256, 3, 33})
    for (std::int64_t M : {7, 50, 333}) shapes.push_back(Shape4{1, C, M, Layout::nhwc});
  for (std::int64_t HW : {32, 96, 224, 4, 49})
    for (std::int64_t N : {1, 3}) shapes.push_back(Shape4{N, 5, HW, Layout::nchw});
  shapes.push_back(Shape4{2, 64, 12544, Layout::nchw});
  shapes.push_back(Shape4{2, 64, 3136, Layout::nhwc});
  int walked = 0;
  for (const Shape4& s : shapes) {
    for (int V : {4, 8}) {
      if (s.layout == Layout::nchw && s.HW % V) continue;
      for (bool forward : {true, false}) {
        if (forward && !own_words_whole(s, V)) continue;
        const std::int64_t n = s.numel();
        const std::int64_t main_end = forward ? own_main_end(s, V) : std::numeric_limits<std::int64_t>::max();
        for (int grid : {7, 264, 396})
          for (int cached : {0, 1, 5, 1000}) {
            const V3Plan plan = v3_plan(s, V, grid);
            if (v3_items(s, plan) > grid) continue;  // v6 runs v5 there
            INFO("C = ", s.C, ", HW = ", s.HW, ", N = ", s.N, ", layout ", static_cast<int>(s.layout), ", V = ", V,
                 forward ? ", forward" : ", backward", ", grid ", grid, ", cached ", cached);
            ++walked;
            const TicketPlan tp = ticket_plan(s, plan, V, cached, main_end);
            std::vector<int> seen(static_cast<std::size_t>(n), 0);
            const std::int64_t tail_first = s.layout == Layout::nchw ? n : forward ? main_end * plan.nhwc.L : plan.nhwc.q_full * V;
            for (std::int64_t e = tail_first; e < n; ++e) ++seen[static_cast<std::size_t>(e)];
            // Units [lo, hi) of 32 threads of `item` (threads warp * 32 ..), as phase 3 runs them.
            const auto run = [&](std::int64_t item, int warp, std::int64_t lo, std::int64_t span) {
              OwnItem w[32];
              std::int64_t count[32];
              for (int l = 0; l < 32; ++l) {
                w[l] = pass_item(s, plan, V, item, warp * 32 + l, main_end);
                count[l] = w[l].count();
              }
              const std::int64_t hi = std::min(lo + span, forward ? count[0] : std::numeric_limits<std::int64_t>::max());
              for (int l = 0; l < 32; ++l)
                for (std::int64_t i = lo; i < std::min(hi, count[l]); ++i) {
                  const std::int64_t e0 = own_pack_at(s, plan, V, w[l], w[l].first + i * w[l].step);
                  for (int k = 0; k < V; ++k) ++seen[static_cast<std::size_t>(e0 + k)];
                }
            };
            for (int warp = 0; warp < kWarps; ++warp)
              for (std::int64_t t = 0; t < tp.tickets(); ++t) run(tp.item_of(t), warp, tp.lo_of(t), kTicketUnits);
            for (std::int64_t item = 0; item < tp.items; ++item)
              for (int warp = 0; warp < kWarps; ++warp) {
                run(item, warp, 0, cached);
                if (forward || s.layout != Layout::nhwc) continue;
                for (int l = 0; l < 32; ++l) {  // the backward's partial row
                  const OwnItem w = own_item(s, plan, V, item, warp * 32 + l);
                  const std::int64_t last = w.active ? nhwc_partial_row(plan.nhwc, w.j, w.first, w.step) : -1;
                  if (last < 0) continue;
                  for (int k = 0; k < V; ++k) ++seen[static_cast<std::size_t>(nhwc_pack_at(plan.nhwc, last, w.j) + k)];
                }
              }
            for (std::int64_t e = 0; e < n; ++e) REQUIRE(seen[static_cast<std::size_t>(e)] == 1);
          }
      }
    }
  }
  CHECK(walked > 100);
}

TEST_CASE("v8's cut: every element once, by one cluster, at most 32 channels each; 64x1024x7x7's cuts") {
  using namespace ch05;
  for (const Layout layout : {Layout::nchw, Layout::nhwc})
    for (const auto& d : std::vector<std::vector<std::int64_t>>{{1, 1, 1, 2}, {5, 3, 7, 7}, {4, 33, 17, 19}, {2, 24, 5, 5},
                                                               {4, 12, 9, 9}, {2, 8, 100, 100}, {2, 2048, 1, 1}})
      for (const int V : {1, 4, 8})
        for (const int R : {8, 16, 32}) {
          Shape4 s{d[0], d[1], d[2] * d[3], layout};
          if (V > 1 && (layout == Layout::nchw || s.C % V != 0)) continue;  // the launchers' packs rule
          const ClusterPlan plan = cluster_plan(s, V, R);
          INFO(d[0], "x", d[1], "x", d[2], "x", d[3], (layout == Layout::nchw ? " NCHW" : " NHWC"), " V ", V, " R ", R);
          CHECK(plan.P * V <= kGroupSlots);
          CHECK(plan.P * plan.L == kBlock);
          CHECK((plan.K >= 1 && plan.K <= kClusterMax && (plan.K & (plan.K - 1)) == 0));
          CHECK(plan.items * plan.L * plan.K >= plan.M);
          std::vector<int> seen(static_cast<std::size_t>(s.numel()), 0);
          std::int64_t off_row = 0;  // NHWC: a pack's elements not at row * C + channel
          for (std::int64_t g = 0; g < plan.groups; ++g)
            for (int rank = 0; rank < plan.K; ++rank)
              for (int t = 0; t < kBlock; ++t) {
                const int col = t % plan.P, lrow = t / plan.P;
                const std::int64_t c_first = layout == Layout::nchw ? g : (g * plan.P + col) * V;
                if (c_first >= s.C) continue;
                for (std::int64_t i = 0; i < plan.items; ++i) {
                  const std::int64_t row = static_cast<std::int64_t>(rank) * plan.L + lrow + i * plan.L * plan.K;
                  if (row >= plan.M) break;
                  for (int k = 0; k < V; ++k) {
                    const std::int64_t e = s.index_of(c_first + k, row);
                    off_row += layout == Layout::nhwc && e != row * s.C + c_first + k;
                    ++seen[static_cast<std::size_t>(e)];
                  }
                }
              }
          CHECK(off_row == 0);
          CHECK(std::count(seen.begin(), seen.end(), 1) == s.numel());
        }
  // The cuts Nsight Compute measured at 64x1024x7x7 NHWC float: the forward 32 clusters of 8 blocks,
  // 32 channels each, 13 packs per thread; the backward 64 clusters of 8, 16 channels, 7 packs.
  const Shape4 s{64, 1024, 49, Layout::nhwc};
  const ClusterPlan f = cluster_plan(s, 4, kFwdRegItems<4>), b = cluster_plan(s, 4, kBwdRegItems<4>);
  CHECK((f.P == 8 && f.K == 8 && f.groups == 32 && f.items == 13));
  CHECK((b.P == 4 && b.K == 8 && b.groups == 64 && b.items == 7));
  // v10, at most 8 packs (16 values) per thread: the forward's cut at 64x1024x7x7 NHWC float is the
  // backward's above; in half, 32 clusters of 4 packs of 8; at 4x33x17x19 NHWC (single values),
  // 3 clusters of 16 channels with 11 values per thread (v8: 2 of 32 with 21).
  const ClusterPlan n = cluster_plan(s, 4, kNarrowItems<4>), h = cluster_plan(s, 8, kNarrowItems<8>);
  CHECK((n.P == 4 && n.K == 8 && n.groups == 64 && n.items == 7));
  CHECK((h.P == 4 && h.K == 8 && h.groups == 32 && h.items == 7));
  const Shape4 tiny{4, 33, 17 * 19, Layout::nhwc};
  const ClusterPlan t = cluster_plan(tiny, 1, kNarrowItems<1>), t8 = cluster_plan(tiny, 1, kFwdRegItems<1>);
  CHECK((t.P == 16 && t.K == 8 && t.groups == 3 && t.items == 11));
  CHECK((t8.P == 32 && t8.K == 8 && t8.groups == 2 && t8.items == 21));
}

TEST_CASE("v9's walks: every element once; flat, one channel per slot and whole mask words per lane group") {
  using namespace ch05;
  // v9's cap on the flat walk's partials, and v11's.
  for (const std::int64_t budget : {std::int64_t{kV9FlatPartials}, kV11FlatPartials})
  for (const Layout layout : {Layout::nchw, Layout::nhwc})
    for (const auto& d : std::vector<std::vector<std::int64_t>>{{1, 1, 1, 2}, {2, 1, 1, 1}, {5, 3, 7, 7}, {4, 33, 17, 19},
                                                               {4, 48, 5, 5}, {2, 64, 30, 30}, {3, 68, 5, 7},
                                                               {2, 65, 3, 5}, {2, 2048, 1, 1}, {8, 3, 24, 24}})
      for (const int Vp : {4, 8})
        for (const bool packs : {true, false}) {
          const Shape4 s{d[0], d[1], d[2] * d[3], layout};
          const V9Plan p = v9_plan(s, packs, Vp, budget);
          INFO(d[0], "x", d[1], "x", d[2], "x", d[3], (layout == Layout::nchw ? " NCHW" : " NHWC"), " V ", Vp,
               packs ? " aligned" : " unaligned", " budget ", budget);
          CHECK(p.Q >= 1);
          if (budget == kV9FlatPartials)
            CHECK(p.Q * s.C * sizeof(Welford) <= std::max(fwd_v9_scratch_bytes<float>(s), fwd_v9_scratch_bytes<__half>(s)));
          else
            CHECK(p.Q * s.C * sizeof(float4) <= std::max(fwd_v11_scratch_bytes<float>(s), fwd_v11_scratch_bytes<__half>(s)));
          std::vector<int> seen(static_cast<std::size_t>(s.numel()), 0);
          std::int64_t wrong_channel = 0, split_words = 0;
          if (p.walk == V9Walk::flat) {
            CHECK(layout == Layout::nhwc);
            CHECK(p.Q * kBlock * p.V % s.C == 0);  // the step is whole rows
            CHECK(p.Q * s.C <= std::max(budget, s.C / std::gcd(s.C, std::int64_t{kBlock} * p.V) * s.C));
            for (std::int64_t q = 0; q < p.Q; ++q)
              for (int t = 0; t < kBlock; ++t) {
                const std::int64_t first = q * kBlock + t;
                if (t % (32 / p.V) == 0 && first * p.V % 32 != 0) ++split_words;
                for (std::int64_t i = 0; i < p.items; ++i) {
                  const std::int64_t u = first + i * p.Q * kBlock;
                  if (u >= p.units) break;
                  for (int k = 0; k < p.V; ++k) {
                    const std::int64_t e = u * p.V + k;
                    wrong_channel += s.channel_of(e) != (first * p.V + k) % s.C;
                    ++seen[static_cast<std::size_t>(e)];
                  }
                }
              }
          } else {
            CHECK(p.P * p.V <= kGroupSlots);
            CHECK(p.P * p.L == kBlock);
            CHECK(p.items * p.L * p.Q >= p.units);
            for (std::int64_t b = 0; b < p.groups * p.Q; ++b)
              for (int t = 0; t < kBlock; ++t) {
                const std::int64_t g = b / p.Q, q = b % p.Q;
                const int col = t % p.P, lrow = t / p.P;
                const std::int64_t c_first = p.walk == V9Walk::nchw ? g : (g * p.P + col) * p.V;
                if (c_first >= s.C) continue;
                for (std::int64_t i = 0; i < p.items; ++i) {
                  const std::int64_t row = q * p.L + lrow + i * p.L * p.Q;
                  if (row >= p.units) break;
                  for (int k = 0; k < p.V; ++k) {
                    const std::int64_t e = s.index_of(c_first + k, row);
                    wrong_channel += s.channel_of(e) != c_first + k;
                    ++seen[static_cast<std::size_t>(e)];
                  }
                }
              }
          }
          CHECK(wrong_channel == 0);
          CHECK(split_words == 0);
          CHECK(std::count(seen.begin(), seen.end(), 1) == s.numel());
        }
  // 64x1024x7x7 NHWC float: rows, 32 groups of 32 channels, 16 blocks each (512), 7 packs per
  // thread; 8x3x224x224 NHWC float: flat, 528 blocks; 4x33x17x19 NHWC float: flat, 66 blocks.
  const V9Plan a = v9_plan(Shape4{64, 1024, 49, Layout::nhwc}, true, 4);
  CHECK((a.walk == V9Walk::rows && a.P == 8 && a.groups == 32 && a.Q == 16 && a.items == 7));
  const V9Plan b = v9_plan(Shape4{8, 3, 224 * 224, Layout::nhwc}, true, 4);
  CHECK((b.walk == V9Walk::flat && b.V == 4 && b.Q == 528));
  const V9Plan c = v9_plan(Shape4{4, 33, 17 * 19, Layout::nhwc}, true, 4);
  CHECK((c.walk == V9Walk::flat && c.V == 4 && c.Q == 66));
  // v11 (Q * C <= 2048): the same cuts at 64x1024x7x7 and 8x3x224x224; 33 blocks of 2 packs per
  // thread at 4x33x17x19.
  const V9Plan a11 = v9_plan(Shape4{64, 1024, 49, Layout::nhwc}, true, 4, kV11FlatPartials);
  CHECK((a11.walk == V9Walk::rows && a11.Q == 16 && a11.items == 7));
  CHECK(v9_plan(Shape4{8, 3, 224 * 224, Layout::nhwc}, true, 4, kV11FlatPartials).Q == 528);
  const V9Plan c11 = v9_plan(Shape4{4, 33, 17 * 19, Layout::nhwc}, true, 4, kV11FlatPartials);
  CHECK((c11.walk == V9Walk::flat && c11.Q == 33 && c11.items == 2));
}

TEST_CASE("floors: the single-read bytes per element, and the two-pass model beside them") {
  const auto per_element = [](const tut::Floor& f, std::int64_t n) { return static_cast<double>(f.bytes) / n; };
  const auto c = tut::make_case(tut::erase(bn_relu_f32()), {64, 64, 112, 112});
  const std::int64_t n = c.numel(), C = 64;
  const tut::Floor f = bn_relu_f32().floor(c);
  CHECK(f.bytes == 8ull * n + 4ull * (n / 32) + 32ull * C);
  CHECK(per_element(f, n) == doctest::Approx(8.125).epsilon(1e-4));
  REQUIRE(f.models.size() == 1);
  CHECK(f.models[0].first == "two_pass");
  CHECK(static_cast<double>(f.models[0].second) / n == doctest::Approx(12.125).epsilon(1e-4));
  const tut::Floor b = bn_relu_backward_f32().floor(c);
  CHECK(per_element(b, n) == doctest::Approx(12.125).epsilon(1e-4));
  CHECK(static_cast<double>(b.models[0].second) / n == doctest::Approx(20.25).epsilon(1e-4));
  CHECK(per_element(bn_add_relu_f32().floor(c), n) == doctest::Approx(12.125).epsilon(1e-4));
  CHECK(per_element(bn_add_relu_backward_f32().floor(c), n) == doctest::Approx(16.125).epsilon(1e-4));
  CHECK(per_element(bn_relu_f16().floor(c), n) == doctest::Approx(4.125).epsilon(1e-4));
  CHECK(per_element(bn_relu_inference_f32().floor(c), n) == doctest::Approx(8.0).epsilon(1e-4));
}

TEST_CASE("every problem's suite has the lesson's seven shapes in both layouts") {
  const std::vector<tut::ProblemEntry> problems = {
      tut::erase(bn_relu_f32()),          tut::erase(bn_relu_backward_f32()), tut::erase(bn_add_relu_f32()),
      tut::erase(bn_add_relu_backward_f32()), tut::erase(bn_relu_f16()),   tut::erase(bn_relu_backward_f16()),
      tut::erase(bn_add_relu_f16()),      tut::erase(bn_add_relu_backward_f16()), tut::erase(bn_relu_inference_f32())};
  for (const auto& p : problems) {
    INFO(p.name);
    CHECK(p.suite.size() == 14);
    std::map<std::string, int> layouts;
    for (const auto& c : p.suite) ++layouts[c.params.get<std::string>("layout")];
    CHECK(layouts["NCHW"] == 7);
    CHECK(layouts["NHWC"] == 7);
  }
}

#if TUT_EXERCISES
// A wrong answer fails with its question's number and hint, never the expected value
// (tut/exercise.hpp); how the expected values follow from the code is below, for after you have
// your own.
TEST_CASE("exercise, part 2: the three numeric answers") {
  // 1. Forward x 4 + y 4 + 1/8, backward dy 4 + x 4 + 1/8 + dx 4: 20.25 bytes per element, 648 per 32.
  const tut::Case c = tut::make_case(tut::erase(bn_relu_f32()), {64, 64, 112, 112});
  const std::uint64_t C = 64, tensors = bn_relu_f32().floor(c).bytes - 32 * C +  // the per-channel vectors aside
                                        bn_relu_backward_f32().floor(c).bytes - 20 * C;
  const std::uint64_t per_element_x32 = tensors * 32 / static_cast<std::uint64_t>(c.numel());
  tut::grade_answer(1, exercise::kFwdBwdBytesPer32Elements, static_cast<long long>(per_element_x32),
                    "add each pass's inputs read once and outputs written once; the mask is one bit per element");
  // 2 and 3. lcm(33, 4) = 132 elements, 33 packs of 4.
  const NhwcPlan p = nhwc_plan(Shape4{1, 33, 1, Layout::nhwc}, 4);
  tut::grade_answer(2, exercise::kNhwcRowElementsC33, p.L,
                    "a row must hold whole packs and whole runs of the C channels: both counts divide it");
  tut::grade_answer(3, exercise::kNhwcRowPacksC33, p.P, "the row's elements, 4 to a pack");
}
#endif

TEST_CASE("v12's plan: whole units per chunk, every element in one chunk, the pieces covering each chunk in order") {
  for (const auto& d : std::vector<std::vector<std::int64_t>>{{16, 32, 112 * 112}, {8, 3, 224 * 224}, {4, 33, 17 * 19},
                                                              {1, 1, 2}, {2, 1, 1}, {1, 5, 9}, {2, 16, 3}, {4, 64, 99},
                                                              {6, 48, 33 * 35}, {2, 1, 300 * 301}, {3, 7, 13 * 17}}) {
    const Shape4 s{d[0], d[1], d[2], Layout::nhwc};
    for (int sms : {132, 114, 7, 1}) {
      const ResPlan p = res_plan(s, sms);
      INFO(s.N, "x", s.C, "x", s.HW, " on ", sms, " SMs");
      CHECK(p.unit % s.C == 0);
      CHECK(p.unit % 32 == 0);
      CHECK(p.G * p.C <= kResBlock);
      REQUIRE(p.chunk > 0);
      CHECK(p.chunk % p.unit == 0);
      CHECK(p.blocks <= sms);
      CHECK(static_cast<std::int64_t>(p.blocks - 1) * p.chunk < p.n);
      CHECK(static_cast<std::int64_t>(p.blocks) * p.chunk >= p.n);
      for (int b = 0; b < p.blocks; ++b) {
        const std::int64_t begin = b * p.chunk, len = std::min(p.chunk, p.n - begin);
        CHECK(len > 0);
        CHECK(len % s.C == 0);  // whole rows
        CHECK(begin % 32 == 0);  // whole mask words
        const int units = static_cast<int>((len + p.unit - 1) / p.unit), cap = static_cast<int>(len);
        CHECK(res_piece_start(p, units, 0, cap) == 0);
        CHECK(res_piece_start(p, units, kResPieces, cap) == cap);
        for (int q = 0; q < kResPieces; ++q) {
          const int e0 = res_piece_start(p, units, q, cap), e1 = res_piece_start(p, units, q + 1, cap);
          CHECK(e0 <= e1);
          CHECK((e0 % p.unit == 0 || e0 == cap));  // pieces start on whole rows and 16-byte-aligned bytes
        }
      }
    }
  }
}

TEST_CASE("v16's walk: every thread's values of a channel at index_of's places, each value once; the block's width; "
          "the cap and past it") {
  // (N, C, HW): M at the cap (kChanValues) in runs of 1024, of one value (C apart) and of 2048; runs
  // of 49 (64x1024x7x7) and 323; HW not dividing the block (13 x 17, 143); tiny shapes. Each on a GPU
  // of 132 SMs and of 2, so that every block width is walked.
  const std::int64_t cap = kChanValues;
  for (const auto& d : std::vector<std::vector<std::int64_t>>{{4, 5, 1024}, {cap, 3, 1}, {2, 7, 2048}, {64, 1024, 49},
                                                              {4, 33, 323}, {3, 7, 13 * 17}, {7, 9, 143}, {1, 1, 2},
                                                              {2, 1, 1}, {2, 2048, 1}, {5, 3, 49}}) {
    for (int sms : {132, 2}) {
      const Shape4 s{d[0], d[1], d[2], Layout::nchw};
      const std::int64_t resident[3] = {2 * sms, 5 * sms, 6 * sms};  // blocks of 512, 256 and 128 at once
      const ChanPlan p = chan_plan(s, resident);
      INFO(s.N, "x", s.C, "x", s.HW, " on ", sms, " SMs");
      // the widest block whose C blocks fit at once, else the one the GPU holds the most threads of
      const int want = s.C <= resident[0] ? 512 : s.C <= resident[1] ? 256 : s.C <= resident[2] ? 128 : 256;
      REQUIRE(p.threads == want);
      REQUIRE(p.items == (s.N * s.HW + p.threads - 1) / p.threads);
      CHECK(p.items <= kChanValues / p.threads);
      for (std::int64_t c : {std::int64_t{0}, s.C / 2, s.C - 1}) {
        std::vector<int> seen(static_cast<std::size_t>(p.M), 0);
        for (int t = 0; t < p.threads; ++t) {
          ChanWalk w(p, c, t);
          for (int m = 0; m < kChanValues / p.threads; ++m, w.next(p)) {
            if (m >= p.items || w.j >= p.M) continue;
            CHECK(w.j == t + m * p.threads);
            CHECK(w.at == s.index_of(c, w.j));
            ++seen[static_cast<std::size_t>(w.j)];
          }
        }
        CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
        CHECK(p.last + c * s.HW == s.index_of(c, p.M - 1));
      }
    }
  }
  const std::int64_t resident[3] = {264, 660, 792};
  CHECK(chan_plan(Shape4{1, 3, cap + 1, Layout::nchw}, resident).threads == 0);  // past the cap: v15's path
  CHECK(chan_plan(Shape4{cap + 1, 3, 1, Layout::nchw}, resident).threads == 0);
  CHECK(chan_plan(Shape4{4, 5, 1024, Layout::nhwc}, resident).threads == 0);     // NHWC: v15's path
  CHECK(chan_plan(Shape4{2, std::int64_t{1} << 31, 1, Layout::nchw}, resident).threads == 0);  // more channels than a grid's blocks
}

TEST_CASE("v26's plan: every row in one part, no part empty or past the registers, the grid resident; "
          "the least R; where it runs v11") {
  // (N, C, HW) in NHWC on a GPU of 132 SMs and of 2, with one, two or three blocks of 512 resident
  // per SM as the forms' registers allow.
  const auto check_type = [](auto zero) {
    using T = decltype(zero);
    constexpr int L = kV26Lanes<T>;
    for (const auto& d : std::vector<std::vector<std::int64_t>>{{64, 1024, 49}, {2, 64, 1}, {3, 64, 35}, {4, 128, 99},
                                                                {1, 2048, 9}, {2, 192, 561}, {7, 64, 1023}, {1, 64, 2}}) {
      for (int sms : {132, 2}) {
        const Shape4 s{d[0], d[1], d[2], Layout::nhwc};
        const int resident[3] = {3 * sms, 2 * sms, sms};  // forms R = 2, 4, 8
        const V26Plan p = v26_plan<T>(s, resident[0], resident[1], resident[2]);
        INFO(s.N, "x", s.C, "x", s.HW, " on ", sms, " SMs, ", sizeof(T), "-byte elements");
        const std::int64_t rows = s.N * s.HW;
        if (p.parts == 0) {
          // only where even R = 8 with every resident block cannot hold the rows, or the groups do not fit
          const std::int64_t groups = s.C / 64, most = std::min<std::int64_t>({resident[2] / groups, kV26MaxParts});
          CHECK((groups > resident[2] || rows > most * L * 8));
          continue;
        }
        CHECK(p.rows == rows);
        CHECK(p.groups == s.C / 64);
        CHECK(p.per * p.parts >= rows);            // every row in a part
        CHECK((p.parts - 1) * p.per < rows);       // no part empty
        CHECK(p.per <= static_cast<std::int64_t>(L) * p.R);  // a part fits in the registers
        CHECK(p.parts <= kV26MaxParts);
        const int r_index = p.R == 2 ? 0 : p.R == 4 ? 1 : 2;
        CHECK(static_cast<std::int64_t>(p.groups) * p.parts <= resident[r_index]);  // the cooperative grid fits
        for (int smaller = 0; smaller < r_index; ++smaller) {  // no smaller R would have held the part
          const int R = smaller == 0 ? 2 : 4;
          const std::int64_t parts = std::min<std::int64_t>({resident[smaller] / p.groups, kV26MaxParts, (rows + L - 1) / L});
          CHECK((parts < 1 || (rows + parts - 1) / parts > static_cast<std::int64_t>(L) * R));
        }
      }
    }
    const int r = 132;
    CHECK(v26_plan<T>(Shape4{64, 1024, 49, Layout::nchw}, 3 * r, 2 * r, r).parts == 0);  // NCHW
    CHECK(v26_plan<T>(Shape4{64, 1000, 49, Layout::nhwc}, 3 * r, 2 * r, r).parts == 0);  // C % 64 != 0
    CHECK(v26_plan<T>(Shape4{64, 64, 3136, Layout::nhwc}, 3 * r, 2 * r, r).parts == 0);  // rows past the registers
    CHECK(v26_plan<T>(Shape4{2, 64 * 400, 1, Layout::nhwc}, 3 * r, 2 * r, r).parts == 0);  // groups past the GPU
  };
  check_type(float{});
  check_type(__half{});
}
