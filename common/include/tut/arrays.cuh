// Device arrays for instances: a problem's inputs and outputs.
//
// Every array sits 512 bytes into its allocation (so with offset 0 it keeps cudaMalloc's 256-byte
// alignment: a kernel is timed on the alignment a framework's tensors have), plus `offset` (0..7)
// elements more, so a test can hand a kernel a pointer that is off its 16-byte alignment. The spare
// elements on both sides hold the poison byte; an output's check proves they still do, so a write
// outside [0, n) is caught even when it lands inside the allocation.
//
// Inputs are filled on the device from (seed, index) by the same function the host uses to
// regenerate them (tut/random.hpp): no host copy of a multi-gigabyte input exists, and the CPU
// reference reads input element i as `in.at(i)`.
#pragma once

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/parallel.hpp"
#include "tut/random.hpp"
#include "tut/verify.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tut {

inline constexpr int kGuardBytes = 512;
inline constexpr int kMaxOffset = 8;  // offsets 0..7

template <class T>
constexpr std::int64_t guard_elements() {
  static_assert(sizeof(T) <= kGuardBytes, "element too large for the guard");
  return kGuardBytes / sizeof(T);
}

namespace detail {
inline void check_layout(std::int64_t n, int offset) {
  if (n < 0) throw std::invalid_argument("an array needs a non-negative length, got " + std::to_string(n));
  if (offset < 0 || offset >= kMaxOffset)
    throw std::invalid_argument("an operand's offset must be in [0, " + std::to_string(kMaxOffset) + "), got " +
                                std::to_string(offset));
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
class InputArray {
 public:
  InputArray(std::int64_t n, std::uint64_t seed, InputSpec spec, int offset = 0)
      : n_(n), offset_(offset), rng_(seed), spec_(spec), buf_((detail::check_layout(n, offset), detail::alloc_len<T>(n))) {
    buf_.poison();  // a kernel that reads outside [0, n) computes garbage from it
    if (n_ > 0) {
      const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>((n_ + 255) / 256, 65536));
      detail::fill_random_kernel<T><<<blocks, 256>>>(data(), n_, rng_, spec_);
      TUT_CHECK_LAUNCH("fill_random_kernel");
    }
  }
  T* data() { return buf_.data() + guard_elements<T>() + offset_; }
  const T* data() const { return buf_.data() + guard_elements<T>() + offset_; }
  std::int64_t size() const { return n_; }
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(T); }
  // Element i, regenerated on the host: what the device holds unless a kernel overwrote it.
  T at(std::int64_t i) const { return rng_.template value<T>(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(n_), spec_); }

 private:
  std::int64_t n_;
  int offset_;
  Random rng_;
  InputSpec spec_;
  DeviceBuffer<T> buf_;
};

template <class T>
class OutputArray {
 public:
  OutputArray(std::string name, std::int64_t n, Rule rule, int offset = 0)
      : name_(std::move(name)), n_(n), offset_(offset), rule_(rule), buf_((detail::check_layout(n, offset), detail::alloc_len<T>(n))) {}

  const std::string& name() const { return name_; }
  T* data() { return buf_.data() + guard_elements<T>() + offset_; }
  const T* data() const { return buf_.data() + guard_elements<T>() + offset_; }
  std::int64_t size() const { return n_; }
  std::size_t bytes() const { return static_cast<std::size_t>(n_) * sizeof(T); }
  const Rule& rule() const { return rule_; }
  void poison(cudaStream_t stream) { buf_.poison(stream); }

  // Downloads the output and compares element i with ref_at(i) (built from terms_at(i) values),
  // then checks that every guard element still holds the poison. The download goes in chunks into
  // pinned host memory, and each chunk is compared (on every core) while the next ones are in
  // transit: a check of a multi-gigabyte output costs about what computing its reference does.
  template <class RefAt, class TermsAt>
  VerifyResult check(RefAt&& ref_at, TermsAt&& terms_at) const {
    const std::int64_t len = static_cast<std::int64_t>(buf_.size());
    if (static_cast<std::int64_t>(host_.size()) != len) host_ = PinnedBuffer<T>(static_cast<std::size_t>(len));
    const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / static_cast<std::int64_t>(sizeof(T)));
    const std::int64_t chunks = (len + chunk - 1) / chunk;
    std::vector<cudaEvent_t> ready(static_cast<std::size_t>(chunks));
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t a = c * chunk, e = std::min(len, a + chunk);
      TUT_CUDA(cudaEventCreateWithFlags(&ready[c], cudaEventDisableTiming));
      TUT_CUDA(cudaMemcpyAsync(host_.data() + a, buf_.data() + a, static_cast<std::size_t>(e - a) * sizeof(T),
                               cudaMemcpyDeviceToHost, nullptr));
      TUT_CUDA(cudaEventRecord(ready[c], nullptr));
    }
    const std::int64_t begin = guard_elements<T>() + offset_;
    const T* got = host_.data() + begin;
    VerifyResult total;
    for (std::int64_t c = 0; c < chunks; ++c) {
      TUT_CUDA(cudaEventSynchronize(ready[c]));
      // This chunk's part of [0, n), in output indices.
      const std::int64_t lo = std::max<std::int64_t>(0, c * chunk - begin);
      const std::int64_t hi = std::min<std::int64_t>(n_, std::min(len, (c + 1) * chunk) - begin);
      if (hi <= lo) continue;
      std::map<std::int64_t, VerifyResult> parts;  // by first index, so mismatches stay in order
      std::mutex mu;
      parallel_chunks(hi - lo, [&](int, std::int64_t b, std::int64_t e) {
        auto part = verify_with(got + lo + b, e - b, [&](std::int64_t i) { return ref_at(lo + b + i); }, rule_,
                                [&](std::int64_t i) { return terms_at(lo + b + i); });
        std::lock_guard<std::mutex> lock(mu);
        parts.emplace(lo + b, std::move(part));
      });
      for (const auto& [first, part] : parts) total.merge(part, first);
    }
    for (cudaEvent_t e : ready) cudaEventDestroy(e);
    check_guards(host_.data(), total);
    return total;
  }
  template <class RefAt>
  VerifyResult check(RefAt&& ref_at) const {
    return check(ref_at, [](std::int64_t) { return 0; });
  }

 private:
  void check_guards(const T* all, VerifyResult& r) const {
    unsigned char poison[sizeof(T)];
    std::memset(poison, kPoisonByte, sizeof(T));
    const std::int64_t begin = guard_elements<T>() + offset_, len = static_cast<std::int64_t>(buf_.size());
    for (std::int64_t j = 0; j < len; ++j) {
      if (j == begin) j += n_;
      if (j >= len) break;
      if (std::memcmp(&all[j], poison, sizeof(T)) != 0)
        r.add(j - begin, "a write outside [0, n)", "the poison left untouched");
    }
  }

  std::string name_;
  std::int64_t n_;
  int offset_;
  Rule rule_;
  DeviceBuffer<T> buf_;
  mutable PinnedBuffer<T> host_;  // kept between checks: pinning a multi-gigabyte buffer is paid once
};

}  // namespace tut
