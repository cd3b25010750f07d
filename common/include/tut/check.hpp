// Error checking for every CUDA runtime call and every kernel launch.
//
//   TUT_CUDA(cudaMalloc(&p, bytes));          // throws tut::CudaError on failure
//   kernel<<<grid, block, 0, stream>>>(...);
//   TUT_CHECK_LAUNCH("relu_v0");              // launch-configuration errors
//
// The message names the failing expression, the file and line, and CUDA's own description,
// e.g. "cudaMalloc(&ptr, bytes) failed at common/src/buffer.cu:14: out of memory
// (cudaErrorMemoryAllocation)". Errors are thrown, never printed-and-ignored or exit()ed,
// so a test can assert on them and a benchmark can report them.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tut {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

std::string describe_cuda_error(cudaError_t code, const char* expr, const char* file, int line);

inline void check_cuda(cudaError_t code, const char* expr, const char* file, int line) {
  if (code != cudaSuccess) {
    cudaGetLastError();  // clear a non-sticky error so the next call starts clean
    throw CudaError(code, describe_cuda_error(code, expr, file, line));
  }
}

}  // namespace tut

#define TUT_CUDA(expr) ::tut::check_cuda((expr), #expr, __FILE__, __LINE__)

// After a <<<...>>> launch: reports an invalid configuration (grid of 0, too many threads,
// too much shared memory) at the launch site. Faults inside the kernel surface at the next
// synchronising call, which is itself checked.
#define TUT_CHECK_LAUNCH(kernel_name) \
  ::tut::check_cuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__)
