// RAII owners for device memory and pinned host memory. Chapter code never calls
// cudaMalloc/cudaFree itself. Both are move-only and typed; sizes are in elements.
#pragma once

#include "tut/check.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tut {

// The byte every benchmark and test writes into an output before a kernel runs: an element
// the kernel never wrote then reads back as 0xCDCD... (float -4.3e8, half -23.2, int32
// -842150451), which fails the comparison with the reference.
inline constexpr unsigned char kPoisonByte = 0xCD;

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) TUT_CUDA(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() { reset(); }

  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }

  void upload(const T* host, std::size_t count, std::size_t offset = 0) {
    check_range(offset, count);
    if (count) TUT_CUDA(cudaMemcpy(ptr_ + offset, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }

  void download(T* host, std::size_t count, std::size_t offset = 0) const {
    check_range(offset, count);
    if (count) TUT_CUDA(cudaMemcpy(host, ptr_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  std::vector<T> to_host() const {
    std::vector<T> out(count_);
    download(out.data(), count_);
    return out;
  }

  void fill_bytes(unsigned char byte, cudaStream_t stream = nullptr) {
    if (count_) TUT_CUDA(cudaMemsetAsync(ptr_, byte, bytes(), stream));
  }
  void poison(cudaStream_t stream = nullptr) { fill_bytes(kPoisonByte, stream); }

 private:
  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);  // cannot throw from a destructor; a failure here is reported by the next call
    ptr_ = nullptr;
    count_ = 0;
  }
  void check_range(std::size_t offset, std::size_t count) const {
    if (offset > count_ || count > count_ - offset)
      throw std::out_of_range("DeviceBuffer: range exceeds the allocation");
  }

  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) TUT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T)));
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }

  T* data() noexcept { return ptr_; }
  const T* data() const noexcept { return ptr_; }
  std::size_t size() const noexcept { return count_; }
  T& operator[](std::size_t i) noexcept { return ptr_[i]; }
  const T& operator[](std::size_t i) const noexcept { return ptr_[i]; }
  T* begin() noexcept { return ptr_; }
  T* end() noexcept { return ptr_ + count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace tut
