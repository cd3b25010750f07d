// Host-side parallel loop for generating and checking multi-gigabyte inputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace tut {

// Calls fn(chunk, begin, end) over [0, n) split into contiguous chunks, one per hardware thread
// (at least 1 Mi elements each). Returns the number of chunks; chunk k covers the k-th range.
// Rethrows the first exception a chunk threw.
template <class Fn>
int parallel_chunks(std::int64_t n, Fn&& fn) {
  const std::int64_t min_chunk = std::int64_t{1} << 20;
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  const int chunks = static_cast<int>(std::clamp<std::int64_t>((n + min_chunk - 1) / min_chunk, 1, hw));
  const std::int64_t per = (n + chunks - 1) / chunks;
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(chunks);
  for (int k = 0; k < chunks; ++k) {
    pool.emplace_back([&, k] {
      try {
        fn(k, std::min(n, k * per), std::min(n, (k + 1) * per));
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  }
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return chunks;
}

}  // namespace tut
