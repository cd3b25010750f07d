// The typed operands of an instance (tut/problem.hpp), and the declarations that make them:
//
//   class ReluInstance : public tut::Instance {
//    public:
//     ReluInstance(const tut::Case& c, const tut::InstanceOptions& o)
//         : Instance(o),
//           x(input<float>("x", c.numel(), tut::InputSpec{}.with_specials())),
//           y(output<float>("y", c.numel(), tut::Rule::bitwise()).expect([this](std::int64_t i) { return relu_ref(x.at(i)); })) {}
//     tut::Array<float>& x;
//     tut::Array<float>& y;
//   };
//
// Every array sits 512 bytes into its allocation (so with offset 0 it keeps cudaMalloc's 256-byte
// alignment: a kernel is timed on the alignment a framework's tensors have), plus its offset
// (0..7 elements, from InstanceOptions::offsets by name), so a test can hand a kernel a pointer
// that is off its 16-byte alignment. The spare elements on both sides hold the poison byte; an
// output's check proves they still do, so a write outside [0, count) is caught even when it lands
// inside the allocation.
//
// Inputs and state are filled on the device from (seed of the name, index) by the same function
// the host uses to regenerate them (tut/random.hpp): no host copy of a multi-gigabyte input
// exists, and a reference reads element i as `x.at(i)`. Outputs and saved inputs are downloaded
// whole before a check (`host(i)`), so a reference may relate outputs to each other.
#pragma once

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/parallel.hpp"
#include "tut/problem.hpp"
#include "tut/random.hpp"
#include "tut/verify.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace tut {

inline constexpr int kGuardBytes = 512;
inline constexpr int kMaxOffset = 8;  // offsets 0..7

template <class T>
constexpr std::int64_t guard_elements() {
  static_assert(sizeof(T) <= kGuardBytes, "element too large for the guard");
  return kGuardBytes / sizeof(T);
}

template <class T>
constexpr const char* dtype_name() {
  if constexpr (std::is_same_v<T, __half>) return "f16";
  else if constexpr (std::is_same_v<T, float>) return "f32";
  else if constexpr (std::is_same_v<T, double>) return "f64";
  else if constexpr (std::is_same_v<T, std::int8_t>) return "i8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "u8";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "i16";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "i32";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "u32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "i64";
  else return "?";
}

namespace detail {
inline void check_layout(const std::string& name, std::int64_t n, int offset) {
  if (n < 0) throw std::invalid_argument("operand '" + name + "' needs a non-negative length, got " + std::to_string(n));
  if (offset < 0 || offset >= kMaxOffset)
    throw std::invalid_argument("operand '" + name + "': an offset must be in [0, " + std::to_string(kMaxOffset) +
                                "), got " + std::to_string(offset));
}
template <class T>
std::size_t alloc_len(std::int64_t n) {
  return static_cast<std::size_t>(n + 2 * guard_elements<T>() + kMaxOffset);
}

template <class T>
__global__ void fill_random_kernel(T* __restrict__ out, std::int64_t n, Random rng, InputSpec spec) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = rng.value<T>(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(n), spec);
}
}  // namespace detail

template <class T>
class Array final : public Operand {
 public:
  // Compares the host view [lo, hi) (got[0] is element lo) and adds each mismatch to `out`.
  using BlockCheck = std::function<void(const T* got, std::int64_t lo, std::int64_t hi, VerifyResult& out)>;

  Array(std::string name, Role role, std::int64_t n, int offset, std::uint64_t seed, InputSpec spec, Rule rule)
      : Operand(std::move(name), role),
        n_(n),
        offset_(offset),
        rng_(seed),
        spec_(spec),
        rule_(rule),
        buf_((detail::check_layout(this->name(), n, offset), detail::alloc_len<T>(n))) {
    buf_.poison();  // guards, and for inputs what a read outside [0, n) computes garbage from
    if (role == Role::input || role == Role::state) refill(nullptr);
  }

  T* data() { return buf_.data() + guard_elements<T>() + offset_; }
  const T* data() const { return buf_.data() + guard_elements<T>() + offset_; }
  std::int64_t size() const { return n_; }

  // Element i of an input or state as drawn, regenerated on the host: what the device holds
  // before a launch changes it.
  T at(std::int64_t i) const {
    return rng_.template value<T>(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(n_), spec_);
  }
  // Element i as the device held it at the last check (outputs, state and saved inputs).
  // Throws when this operand was not downloaded (an output the version does not write).
  T host(std::int64_t i) const {
    if (!fresh_) throw std::logic_error("operand '" + name() + "' has no host view of this launch: the version does not write it");
    return host_[static_cast<std::size_t>(guard_elements<T>() + offset_ + i)];
  }

  // The reference: element i must match ref_at(i) under the operand's rule, with terms_at(i) the
  // number of values summed into it (a tolerance that grows with it; tut/verify.hpp).
  template <class RefAt, class TermsAt>
  Array& expect(RefAt ref_at, TermsAt terms_at) {
    check_ = [ref_at, terms_at, rule = rule_](const T* got, std::int64_t lo, std::int64_t hi, VerifyResult& out) {
      for (std::int64_t i = lo; i < hi; ++i) {
        const T ref = ref_at(i);
        if (!element_matches(got[i - lo], ref, rule, static_cast<double>(terms_at(i))))
          out.add(i, detail::show(got[i - lo]), detail::show(ref));
      }
    };
    return *this;
  }
  template <class RefAt>
  Array& expect(RefAt ref_at) {
    return expect(ref_at, [](std::int64_t) { return 0; });
  }
  // A judgement instead of a value: judge(i, got) returns "" when element i is right, else what
  // was expected (for an output that may take several values: a mask bit near zero, say).
  template <class Judge>
  Array& judge(Judge j) {
    check_ = [j](const T* got, std::int64_t lo, std::int64_t hi, VerifyResult& out) {
      for (std::int64_t i = lo; i < hi; ++i) {
        std::string expected = j(i, got[i - lo]);
        if (!expected.empty()) out.add(i, detail::show(got[i - lo]), std::move(expected));
      }
    };
    return *this;
  }

  // Operand
  const char* dtype() const override { return dtype_name<T>(); }
  std::int64_t count() const override { return n_; }
  std::size_t element_bytes() const override { return sizeof(T); }
  void* device() override { return data(); }
  const void* device() const override { return data(); }
  int offset() const override { return offset_; }
  const Rule& rule() const override { return rule_; }
  void poison(cudaStream_t s) override {
    fresh_ = false;
    buf_.poison(s);
  }
  void refill(cudaStream_t s) override {
    fresh_ = false;
    if (n_ == 0) return;
    const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((n_ + 255) / 256, 65536));
    detail::fill_random_kernel<T><<<blocks, 256, 0, s>>>(data(), n_, rng_, spec_);
    TUT_CHECK_LAUNCH("fill_random_kernel");
  }
  void download() override {
    if (host_.size() != buf_.size()) host_ = PinnedBuffer<T>(buf_.size());
    TUT_CUDA(cudaMemcpy(host_.data(), buf_.data(), buf_.bytes(), cudaMemcpyDeviceToHost));
    fresh_ = true;
  }
  // Compares every element on every core, then checks that every guard element still holds the
  // poison. A missing reference is a declaration error, not a pass.
  VerifyResult verify() const override {
    if (!check_) throw std::logic_error("output '" + name() + "' was declared without a reference (expect or judge)");
    if (!fresh_) throw std::logic_error("output '" + name() + "' checked before it was downloaded");
    const T* got = host_.data() + guard_elements<T>() + offset_;
    std::map<std::int64_t, VerifyResult> parts;  // by first index, so mismatches stay in order
    std::mutex mu;
    parallel_chunks(n_, [&](int, std::int64_t b, std::int64_t e) {
      VerifyResult part;
      part.checked = e - b;
      if (e > b) check_(got + b, b, e, part);
      std::lock_guard<std::mutex> lock(mu);
      parts.emplace(b, std::move(part));
    });
    VerifyResult total;
    for (const auto& [first, part] : parts) total.merge(part);
    check_guards(total);
    return total;
  }

 private:
  void check_guards(VerifyResult& r) const {
    unsigned char poison[sizeof(T)];
    std::memset(poison, kPoisonByte, sizeof(T));
    const std::int64_t begin = guard_elements<T>() + offset_, len = static_cast<std::int64_t>(buf_.size());
    for (std::int64_t j = 0; j < len; ++j) {
      if (j == begin) j += n_;
      if (j >= len) break;
      if (std::memcmp(&host_[static_cast<std::size_t>(j)], poison, sizeof(T)) != 0)
        r.add(j - begin, "a write outside [0, n)", "the poison left untouched");
    }
  }

  std::int64_t n_;
  int offset_;
  Random rng_;
  InputSpec spec_;
  Rule rule_;
  DeviceBuffer<T> buf_;
  PinnedBuffer<T> host_;  // kept between checks: pinning a multi-gigabyte buffer is paid once
  bool fresh_ = false;    // host_ holds what the device held at the last download, since no poison or refill
  BlockCheck check_;
};

// An input outside any instance (the chapters' tools that time one kernel by hand): n elements
// drawn from (seed, index) by `spec`, `offset` elements past the aligned position.
template <class T>
Array<T> random_input(std::int64_t n, std::uint64_t seed, InputSpec spec, int offset = 0) {
  return Array<T>("x", Role::input, n, offset, seed, spec, Rule::exact());
}

template <class T>
Array<T>& Instance::input(std::string name, std::int64_t count, InputSpec spec) {
  const auto s = spec.with_specials(spec.specials && opt_.specials);
  const int off = opt_.offset(name);
  const std::uint64_t seed = opt_.seed_of(name);
  return static_cast<Array<T>&>(add(std::make_unique<Array<T>>(std::move(name), Role::input, count, off, seed, s, Rule::exact())));
}

template <class T>
Array<T>& Instance::saved(std::string name, std::int64_t count) {
  const int off = opt_.offset(name);
  return static_cast<Array<T>&>(add(std::make_unique<Array<T>>(std::move(name), Role::saved, count, off, 0, InputSpec{}, Rule::exact())));
}

template <class T>
Array<T>& Instance::output(std::string name, std::int64_t count, Rule rule) {
  const int off = opt_.offset(name);
  return static_cast<Array<T>&>(add(std::make_unique<Array<T>>(std::move(name), Role::output, count, off, 0, InputSpec{}, rule)));
}

template <class T>
Array<T>& Instance::state(std::string name, std::int64_t count, InputSpec spec, Rule rule) {
  const auto s = spec.with_specials(spec.specials && opt_.specials);
  const int off = opt_.offset(name);
  const std::uint64_t seed = opt_.seed_of(name);
  return static_cast<Array<T>&>(add(std::make_unique<Array<T>>(std::move(name), Role::state, count, off, seed, s, rule)));
}

}  // namespace tut
