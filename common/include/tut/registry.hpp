// The shape of every chapter's version registry. A chapter lists its versions once, as a Ladder
// per problem; the benchmark, the GPU tests and the exercise grader all iterate that one list,
// so a new version is one new entry.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tut {

// A problem and its floor: the fewest bytes it must move through device memory (each input
// read once, each output written once) and the arithmetic it must do, for problem size n.
// The same for every version of the problem.
struct Problem {
  const char* name;         // "relu_f32": the key in results JSON
  const char* description;  // one line for the table header
  std::function<std::uint64_t(std::int64_t n)> bytes;
  std::function<std::uint64_t(std::int64_t n)> flops;
};

// The model of an element-wise problem: a fixed number of bytes and operations per element.
inline Problem per_element(const char* name, const char* description, std::uint64_t bytes_per_element,
                           std::uint64_t flops_per_element) {
  return {name, description, [=](std::int64_t n) { return static_cast<std::uint64_t>(n) * bytes_per_element; },
          [=](std::int64_t n) { return static_cast<std::uint64_t>(n) * flops_per_element; }};
}

template <class Launch>
struct Version {
  const char* name;        // "v2_waves": the order is in the prefix
  const char* summary;     // what changed since the previous version, in one line
  Launch launch;           // enqueues the work on a stream; throws tut::CudaError on failure
  const void* kernel;      // the kernel whose registers/thread the table shows (null: none)
  bool any_alignment;      // correct for pointers offset from the vector alignment
};

template <class Launch>
struct Ladder {
  Problem problem;
  std::vector<Version<Launch>> versions;

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& v : versions) out.emplace_back(v.name);
    return out;
  }
};

}  // namespace tut

// The address of a kernel (template instantiations included) for Version::kernel:
//   TUT_KERNEL(v0_naive_kernel<Relu, float, float>)
#define TUT_KERNEL(...) reinterpret_cast<const void*>(&__VA_ARGS__)
