// v7_decoupled_lookback: a device-wide scan in one pass (Merrill and Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016).
//
// What changed from v6: no second read of x. Each tile reads its 4096 elements once, scans them,
// and learns the sum of everything before it from the tiles before it, while they are running:
//   1. thread 0 takes a ticket from a counter (atomicAdd): tiles are numbered in the order blocks
//      start, not by blockIdx. Every tile a block waits for below its own number belongs to a block
//      that has already started, so the waiting always ends, whatever order the hardware runs
//      blocks in.
//   2. the block loads and scans its tile, then publishes its total as an AGGREGATE;
//   3. warp 0 looks back: its 32 lanes read the flags of the 32 tiles before it at once. While any
//      is not published yet, it reads again. If some hold an inclusive PREFIX, the nearest one ends
//      the walk: the sum of the aggregates up to it and its prefix is this tile's offset. Otherwise
//      it adds the 32 aggregates and moves 32 tiles back;
//   4. it publishes its own PREFIX (offset + total), and the block writes its results.
// Moves the 2n floor; expect close to the copy rate when enough tiles are in flight to hide the
// look-back's latency (a few L2 round trips per tile).
//
// Memory ordering. A flag is one 64-bit word: the status and the tile's epoch in the high half,
// the 32-bit value in the low half, written and read with single device-scope atomic accesses
// (cuda::atomic_ref, relaxed). A reader therefore sees either the whole old word or the whole new
// one, never a new status with an old value, and no fence is needed, because no other data passes
// through the flag. Two things would break it: a plain load (the compiler may hoist it out of the
// spin loop, and L1 may keep serving a stale line), and a value stored apart from its flag (then a
// release store of the flag and an acquire load are needed, or a reader can see the flag first).
//
// No reset between launches. The scratch is a ticket counter and one flag per tile, zeroed once
// when allocated. The counter is never reset: launch k hands out tickets k*tiles ... (k+1)*tiles - 1,
// so ticket / tiles + 1 is the launch's epoch and ticket % tiles its tile. A flag counts only when
// it carries the reader's epoch; flags from the previous launch read as not published. (So one
// scratch serves one n: allocate another for another n.)
#pragma once

#include "kernels/tiles.cuh"
#include "kernels/warp_scan.cuh"

#include <cuda/atomic>

#include <cstring>

namespace ch03 {

inline constexpr std::size_t kFlagsOffset = 128;  // the counter has its own cache line

// The tile shape and the look-back, as chosen by tune_lookback (./build/tune_lookback; the lesson
// shows its table): ROWS 16-byte packs per lane, at least MIN_BLOCKS blocks per SM (1: as many as
// the registers allow), SLEEP_NS of __nanosleep between two reads of flags not ready, and FLAGS
// flags read by each lane per look-back step (a step covers 32 x FLAGS predecessors).
template <int ROWS, int MIN_BLOCKS, int SLEEP_NS, int FLAGS = 1>
struct LookbackConfig {
  static constexpr int rows = ROWS, min_blocks = MIN_BLOCKS, sleep_ns = SLEEP_NS, flags = FLAGS;
};
using V7Config = LookbackConfig<16, 2, 0, 1>;  // 64 elements per thread, 16384 (64 KiB) per tile

template <class Config = V7Config>
std::size_t v7_scratch_bytes(std::int64_t n) {
  return kFlagsOffset +
         static_cast<std::size_t>(std::max<std::int64_t>(1, tile_count<Config::rows>(n))) * sizeof(unsigned long long);
}

namespace lookback {

enum : unsigned { kNotReady = 0, kAggregate = 1, kPrefix = 2 };
inline constexpr unsigned kEpochMask = 0x3fffffffu;

template <class T>
__device__ __forceinline__ unsigned long long pack(unsigned epoch, unsigned status, T value) {
  static_assert(sizeof(T) == 4, "a flag packs a 32-bit value");
  unsigned bits;
  memcpy(&bits, &value, sizeof bits);
  return (static_cast<unsigned long long>((epoch << 2) | status) << 32) | bits;
}

template <class T>
__device__ __forceinline__ T value_of(unsigned long long word) {
  const auto bits = static_cast<unsigned>(word);
  T v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

__device__ __forceinline__ unsigned status_of(unsigned long long word, unsigned epoch) {
  const auto high = static_cast<unsigned>(word >> 32);
  return (high >> 2) == epoch ? (high & 3u) : static_cast<unsigned>(kNotReady);
}

__device__ __forceinline__ void publish(unsigned long long* flag, unsigned long long word) {
  cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*flag).store(word, cuda::memory_order_relaxed);
}

__device__ __forceinline__ unsigned long long peek(unsigned long long* flag) {
  return cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*flag).load(cuda::memory_order_relaxed);
}

// Warp 0 of tile `tile` (all 32 lanes): publishes the tile's total, walks back to the sum of
// everything before the tile, publishes the tile's inclusive prefix, and returns that sum. Each step
// reads 32 x FLAGS predecessors at once: lane l the FLAGS of them at distances l*FLAGS ... .
template <int SLEEP_NS, int FLAGS, class T>
__device__ T look_back(unsigned long long* flags, std::int64_t tile, unsigned epoch, T tile_total) {
  const int lane = threadIdx.x & 31;
  if (tile == 0) {
    if (lane == 0) publish(&flags[0], pack(epoch, kPrefix, tile_total));
    return T{};
  }
  if (lane == 0) publish(&flags[tile], pack(epoch, kAggregate, tile_total));
  T before{};
  for (std::int64_t nearest = tile - 1;; nearest -= 32 * FLAGS) {
    unsigned long long word[FLAGS];
    unsigned status[FLAGS];
    for (;;) {
      bool waiting = false;
#pragma unroll
      for (int j = 0; j < FLAGS; ++j) {
        const std::int64_t q = nearest - lane * FLAGS - j;
        // Tile 0 always publishes a prefix, so no walk passes it; lanes past it stay quiet.
        word[j] = q >= 0 ? peek(&flags[q]) : pack(epoch, kPrefix, T{});
        status[j] = status_of(word[j], epoch);
        waiting = waiting || status[j] == kNotReady;
      }
      if (!__any_sync(kFullWarp, waiting)) break;
      if (SLEEP_NS > 0) __nanosleep(SLEEP_NS);
    }
    // This lane's part: its flags from the nearest on, up to and including its first prefix.
    T mine{};
    bool found = false;
#pragma unroll
    for (int j = 0; j < FLAGS; ++j) {
      if (!found) mine = mine + value_of<T>(word[j]);
      found = found || status[j] == kPrefix;
    }
    const unsigned prefixes = __ballot_sync(kFullWarp, found);
    if (prefixes != 0) {
      const int stop = __ffs(prefixes) - 1;  // the lane with the nearest prefix
      before = before + warp_sum(lane <= stop ? mine : T{});
      break;
    }
    before = before + warp_sum(mine);
  }
  if (lane == 0) publish(&flags[tile], pack(epoch, kPrefix, before + tile_total));
  return before;
}

}  // namespace lookback

template <class Config, bool VEC, bool EXCLUSIVE, class T>
__global__ __launch_bounds__(kTileThreads, Config::min_blocks) void decoupled_lookback_kernel(
    const T* __restrict__ x, T* __restrict__ y, std::int64_t n, std::int64_t tiles, unsigned long long* ticket,
    unsigned long long* flags) {
  constexpr std::int64_t kTileLen = tile_elements<Config::rows>();
  __shared__ BlockScanStorage<T> storage;
  __shared__ std::int64_t s_tile;
  __shared__ unsigned s_epoch;
  __shared__ T s_before;
  if (threadIdx.x == 0) {
    const unsigned long long t = atomicAdd(ticket, 1ull);
    s_tile = static_cast<std::int64_t>(t % static_cast<unsigned long long>(tiles));
    s_epoch = static_cast<unsigned>(t / static_cast<unsigned long long>(tiles) + 1) & lookback::kEpochMask;
  }
  __syncthreads();
  const std::int64_t tile = s_tile;
  const std::int64_t base = tile * kTileLen;
  const std::int64_t len = min64(kTileLen, n - base);
  T v[Config::rows * kPack<T>];
  load_rows<Config::rows, VEC>(x + base, len, v);
  const T warp_total = scan_rows<Config::rows, EXCLUSIVE>(v);
  T tile_total;
  const T in_tile = warp_offset_in_block(warp_total, tile_total, storage);
  if (threadIdx.x < 32) {
    const T before = lookback::look_back<Config::sleep_ns, Config::flags>(flags, tile, s_epoch, tile_total);
    if (threadIdx.x == 0) s_before = before;
  }
  __syncthreads();
  add_to_all(v, s_before + in_tile);
  store_rows<Config::rows, VEC>(y + base, len, v);
}

template <class T, class Config = V7Config>
void v7_decoupled_lookback(cudaStream_t stream, std::int64_t n, bool exclusive, T* y, const T* x, void* scratch,
                           std::size_t scratch_bytes) {
  check_scan(n);
  if (n == 0) return;
  check_scratch("v7_decoupled_lookback", scratch_bytes, v7_scratch_bytes<Config>(n));
  const std::int64_t tiles = tile_count<Config::rows>(n);
  auto* ticket = static_cast<unsigned long long*>(scratch);
  auto* flags = reinterpret_cast<unsigned long long*>(static_cast<char*>(scratch) + kFlagsOffset);
  with_tile_flags(x, y, exclusive, [&](auto vec, auto excl) {
    decoupled_lookback_kernel<Config, decltype(vec)::value, decltype(excl)::value, T>
        <<<static_cast<unsigned>(tiles), kTileThreads, 0, stream>>>(x, y, n, tiles, ticket, flags);
    TUT_CHECK_LAUNCH("decoupled_lookback_kernel");
  });
}

}  // namespace ch03
