// One instance of an element-wise problem (one output, 1-3 inputs, out[i] = ref(in[i]...)):
// random inputs from a seed, device buffers, the output poisoned before each checked launch,
// and the comparison with the CPU reference. A chapter's benchmark and its GPU tests both use
// it, so what is timed is what is tested.
//
// Each device array has kGuard spare elements; the operand starts `offset` elements in
// (0..kGuard-1), so tests can pass misaligned pointers. The check also proves the guard elements
// around the output still hold the poison: nothing was written outside [0, n).
#pragma once

#include "tut/buffer.hpp"
#include "tut/parallel.hpp"
#include "tut/random.hpp"
#include "tut/verify.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tut {

struct InputSpec {
  double lo = -4.0, hi = 4.0;  // uniform range
  bool specials = true;        // sprinkle ±0, ±inf, NaN, ±1
};

inline constexpr int kGuard = 8;

template <class R, class... In>
class ElementwiseInstance {
 public:
  using Launch = void (*)(cudaStream_t, std::int64_t, R*, const In*...);
  using Reference = R (*)(In...);

  ElementwiseInstance(std::int64_t n, std::uint64_t seed, Reference ref, InputSpec spec = {},
                      Tolerance tol = kExact, int in_offset = 0, int out_offset = 0)
      : n_(checked_size(n)), ref_(ref), tol_(tol), in_off_(in_offset), out_off_(out_offset), out_(alloc_len()) {
    if (in_offset < 0 || in_offset >= kGuard || out_offset < 0 || out_offset >= kGuard)
      throw std::invalid_argument("offsets must be in [0, kGuard)");
    init_inputs(seed, spec, std::index_sequence_for<In...>{});
  }

  std::int64_t n() const { return n_; }
  std::string size() const { return "n=" + std::to_string(n_); }
  std::size_t working_set() const { return static_cast<std::size_t>(n_) * (sizeof(R) + (sizeof(In) + ... + 0)); }

  R* out() { return out_.data() + out_off_; }

  void run(Launch launch, cudaStream_t stream) {
    std::apply([&](auto&... d) { launch(stream, n_, out(), (d.data() + in_off_)...); }, dev_in_);
  }
  void poison(cudaStream_t stream) { out_.poison(stream); }

  VerifyResult check() {
    const std::vector<R> got = out_.to_host();
    const R* o = got.data() + out_off_;
    std::map<std::int64_t, VerifyResult> parts;  // by first index, so mismatches stay in order
    std::mutex mu;
    parallel_chunks(n_, [&](int, std::int64_t b, std::int64_t e) {
      auto part = verify_with(o + b, e - b, [&](std::int64_t i) { return reference_at(b + i); }, tol_);
      std::lock_guard<std::mutex> lock(mu);
      parts.emplace(b, std::move(part));
    });
    VerifyResult total;
    for (const auto& [begin, part] : parts) total.merge(part, begin);
    check_guards(got, total);
    return total;
  }

 private:
  static std::int64_t checked_size(std::int64_t n) {
    if (n < 0) throw std::invalid_argument("n must be non-negative, got " + std::to_string(n));
    return n;
  }
  std::size_t alloc_len() const { return static_cast<std::size_t>(n_) + kGuard; }

  template <std::size_t... I>
  void init_inputs(std::uint64_t seed, const InputSpec& spec, std::index_sequence<I...>) {
    ((std::get<I>(host_in_) = make_input<In>(Random(seed + 1000003 * I), spec)), ...);
    ((std::get<I>(dev_in_) = DeviceBuffer<In>(alloc_len())), ...);
    // Guard elements of inputs hold poison too: a kernel that reads them computes garbage there.
    ((std::get<I>(dev_in_).poison()), ...);
    ((std::get<I>(dev_in_).upload(std::get<I>(host_in_).data(), n_, in_off_)), ...);
  }

  template <class T>
  std::vector<T> make_input(const Random& rng, const InputSpec& spec) const {
    std::vector<T> v(n_);
    [[maybe_unused]] std::vector<T> specials;
    if constexpr (!std::is_integral_v<T>) specials = special_values<T>();
    parallel_chunks(n_, [&](int, std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        v[i] = rng.template value<T>(i, spec.lo, spec.hi);
        if constexpr (!std::is_integral_v<T>) {
          if (spec.specials) {
            const int slot = special_slot(i, n_, rng, static_cast<int>(specials.size()));
            if (slot >= 0) v[i] = specials[slot];
          }
        }
      }
    });
    return v;
  }

  R reference_at(std::int64_t i) const {
    return std::apply([&](const auto&... h) { return ref_(h[i]...); }, host_in_);
  }

  void check_guards(const std::vector<R>& got, VerifyResult& r) const {
    unsigned char poison[sizeof(R)];
    std::memset(poison, kPoisonByte, sizeof(R));
    auto guard = [&](std::int64_t j, std::int64_t logical) {
      if (std::memcmp(&got[j], poison, sizeof(R)) != 0) {
        ++r.mismatches;
        if (r.first.size() < 5) r.first.push_back({logical, "a write outside [0, n)", "the poison left untouched"});
      }
    };
    for (std::int64_t j = 0; j < out_off_; ++j) guard(j, j - out_off_);
    for (std::int64_t j = out_off_ + n_; j < static_cast<std::int64_t>(got.size()); ++j) guard(j, j - out_off_);
  }

  std::int64_t n_;
  Reference ref_;
  Tolerance tol_;
  int in_off_, out_off_;
  DeviceBuffer<R> out_;
  std::tuple<std::vector<In>...> host_in_;
  std::tuple<DeviceBuffer<In>...> dev_in_;
};

// The awkward sizes every element-wise version is graded at: empty, single, around a warp,
// around a block, primes, 2^20+1, and one large size that is not a multiple of any pack width.
inline const std::vector<std::int64_t> kGradeSizes = {0,   1,   7,    31,   32,           33,
                                                      255, 1000, 4099, (1 << 20) + 1, (std::int64_t{1} << 26) + 3};

// A seed per (problem, n, offsets), derived from the printed test seed.
inline std::uint64_t case_seed(std::uint64_t salt, std::int64_t n, int in_off, int out_off) {
  return splitmix64(test_seed() ^ splitmix64(salt * 1000003 + static_cast<std::uint64_t>(n) * 64 +
                                             static_cast<std::uint64_t>(in_off) * 8 + static_cast<std::uint64_t>(out_off)));
}

// One graded launch: fresh inputs (with special values unless spec says otherwise), a poisoned
// output, the launch, and the full comparison including the guard elements.
template <class R, class... In>
VerifyResult grade_elementwise(typename ElementwiseInstance<R, In...>::Launch launch,
                               typename ElementwiseInstance<R, In...>::Reference ref, std::uint64_t salt,
                               std::int64_t n, int in_off = 0, int out_off = 0, InputSpec spec = {},
                               Tolerance tol = kExact) {
  ElementwiseInstance<R, In...> inst(n, case_seed(salt, n, in_off, out_off), ref, spec, tol, in_off, out_off);
  inst.poison(nullptr);
  inst.run(launch, nullptr);
  return inst.check();
}

}  // namespace tut
