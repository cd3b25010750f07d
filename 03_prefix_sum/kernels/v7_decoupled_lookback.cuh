// v7_decoupled_lookback: a device-wide scan in one pass (Merrill and Garland, "Single-pass Parallel
// Prefix Scan with Decoupled Look-back", 2016).
//
// What changed from v6: no second read of x. Each tile reads its elements once, scans them, and
// learns the sum of everything before it from the tiles before it, while they are running:
//   1. thread 0 takes a ticket from a counter (atomicAdd): tiles are numbered in the order blocks
//      start, not by blockIdx. Every tile a block waits for below its own number belongs to a block
//      that has already started, so the waiting always ends, whatever order the hardware runs
//      blocks in.
//   2. the block loads and scans its tile, then publishes its total as an AGGREGATE;
//   3. a warp looks back: its 32 lanes read the flags of the 32 tiles before it at once. While any
//      is not published yet, it reads again. If some hold an inclusive PREFIX, the nearest one ends
//      the walk: the sum of the aggregates up to it and its prefix is this tile's offset. Otherwise
//      it adds the 32 aggregates and moves 32 tiles back;
//   4. the block publishes its own PREFIX (offset + total) and writes its results.
//
// Who looks back, and when (Config::own_warp). In the paper's order (own_warp = false), warp 0
// looks back after step 2, while the other warps wait at a barrier holding the scanned tile: the
// look-back's L2 round trips are added to every tile's time. With own_warp, the block has one more
// warp after the data warps; it holds no data and starts looking back as soon as the block has its
// ticket, while the data warps still wait for their loads. The scan's own barriers are a named
// barrier that leaves it out (FirstThreads in warp_scan.cuh). Steps 2 and 4 stay with thread 0: the
// tile's total is published the moment it exists, never held back by the look-back (a tile that
// waited for its own look-back before publishing anything would chain every tile behind the one
// before it). tune_lookback measures both orders, and its --timeline where a tile's time goes; the
// lesson shows both tables.
//
// Memory ordering. A flag is one 64-bit word: the status and the tile's epoch in the high half,
// the 32-bit value in the low half, written and read with single device-scope atomic accesses
// (cuda::atomic_ref, relaxed). A reader therefore sees either the whole old word or the whole new
// one, never a new status with an old value, and no fence is needed, because no other data passes
// through the flag. Two things would break it: a plain load (the compiler may hoist it out of the
// spin loop, and L1 may keep serving a stale line), and a value stored apart from its flag (then a
// release store of the flag and an acquire load are needed, or a reader can see the flag first).
// The AGGREGATE and the PREFIX of one tile are stored by the same thread, in that order, so no
// reader can see the aggregate after the prefix.
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
#include <type_traits>

namespace ch03 {

inline constexpr std::size_t kFlagsOffset = 128;  // the counter has its own cache line

// The tile shape and the look-back, as chosen by tune_lookback (./build/tune_lookback; the lesson
// shows its table): ROWS 16-byte packs per lane, at least MIN_BLOCKS blocks per SM (1: as many as
// the registers allow), SLEEP_NS of __nanosleep between two reads of flags not ready, FLAGS flags
// read by each lane per look-back step (a step covers 32 x FLAGS predecessors), OWN_WARP: a warp
// of its own that looks back from the start (true), or warp 0 after the scan (false),
// DATA_WARPS, the warps that load, scan and store the tile, and SMEM_TILE: the tile waits for its
// prefix in shared memory (true) instead of registers, so a block needs few registers and more
// tiles fit an SM at once (tiles.cuh, stage_rows).
//
// MARKS records the moments of a tile's life for tune_lookback's timeline (NoMarks: nothing).
struct NoMarks {
  enum : int { kStart, kTotal, kBefore, kPrefix, kStored, kRounds, kCount };
  __device__ static void mark(int, std::int64_t, unsigned = 0) {}
};

template <int ROWS, int MIN_BLOCKS, int SLEEP_NS, int FLAGS = 1, bool OWN_WARP = false, int DATA_WARPS = 8,
          bool SMEM_TILE = false, class MARKS = NoMarks>
struct LookbackConfig {
  using Marks = MARKS;
  static constexpr int rows = ROWS, min_blocks = MIN_BLOCKS, sleep_ns = SLEEP_NS, flags = FLAGS;
  static constexpr bool own_warp = OWN_WARP;
  static constexpr int data_warps = DATA_WARPS;
  static constexpr int data_threads = DATA_WARPS * 32;
  static constexpr int threads = data_threads + (OWN_WARP ? 32 : 0);
  static constexpr std::int64_t tile = tile_elements<ROWS, data_threads>();
  static constexpr bool smem_tile = SMEM_TILE;
  template <class T>
  static constexpr std::size_t smem_bytes() {
    return SMEM_TILE ? static_cast<std::size_t>(tile) * sizeof(T) : 0;
  }
};
using V7Config = LookbackConfig<32, 1, 512, 1, true, 7>;  // 128 elements per thread, 28672 (112 KiB) per tile

template <class Config = V7Config>
std::int64_t v7_tile_count(std::int64_t n) {
  return tile_count<Config::rows, Config::data_threads>(n);
}

template <class Config = V7Config>
std::size_t v7_scratch_bytes(std::int64_t n) {
  return kFlagsOffset +
         static_cast<std::size_t>(std::max<std::int64_t>(1, v7_tile_count<Config>(n))) * sizeof(unsigned long long);
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

// The sum of everything before tile `tile` (> 0), read from the flags of the tiles before it by
// all 32 lanes of one warp. Each step reads 32 x FLAGS predecessors at once: lane l the FLAGS of
// them at distances l*FLAGS ... .
template <int SLEEP_NS, int FLAGS, class T>
__device__ __forceinline__ T sum_before(unsigned long long* flags, std::int64_t tile, unsigned epoch,
                                        unsigned& reads) {
  const int lane = threadIdx.x & 31;
  T before{};
  reads = 0;  // rounds of flag reads, for the timeline
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
      ++reads;
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
      return before + warp_sum(lane <= stop ? mine : T{});
    }
    before = before + warp_sum(mine);
  }
}

}  // namespace lookback

template <class Config, bool VEC, bool EXCLUSIVE, class T>
__global__ __launch_bounds__(Config::threads, Config::min_blocks) void decoupled_lookback_kernel(
    const T* __restrict__ x, T* __restrict__ y, std::int64_t n, std::int64_t tiles, unsigned long long* ticket,
    unsigned long long* flags) {
  using lookback::kAggregate;
  using lookback::kPrefix;
  using Marks = typename Config::Marks;
  constexpr std::int64_t kTileLen = Config::tile;
  constexpr int kDataWarps = Config::data_warps;
  __shared__ BlockScanStorage<T> storage;
  __shared__ std::int64_t s_tile;
  __shared__ unsigned s_epoch;
  __shared__ T s_before;
  if (threadIdx.x == 0) {
    const unsigned long long t = atomicAdd(ticket, 1ull);
    s_tile = static_cast<std::int64_t>(t % static_cast<unsigned long long>(tiles));
    s_epoch = static_cast<unsigned>(t / static_cast<unsigned long long>(tiles) + 1) & lookback::kEpochMask;
    Marks::mark(Marks::kStart, s_tile);
  }
  __syncthreads();
  const std::int64_t tile = s_tile;
  const unsigned epoch = s_epoch;
  const std::int64_t base = tile * kTileLen;
  const std::int64_t len = min64(kTileLen, n - base);
  const int warp = threadIdx.x >> 5;
  T v[Config::smem_tile ? 1 : Config::rows * kPack<T>];  // the tile, unless it waits in shared memory
  extern __shared__ __align__(16) unsigned char smem_tile_bytes[];
  T* const parked = reinterpret_cast<T*>(smem_tile_bytes);
  T in_tile{}, tile_total{};
  if (warp < kDataWarps) {
    T warp_total;
    if constexpr (Config::smem_tile) {
      stage_rows<Config::rows, VEC>(x + base, len, parked);
      warp_total = scan_rows_shared<Config::rows, EXCLUSIVE>(parked);
    } else {
      load_rows<Config::rows, VEC>(x + base, len, v);
      warp_total = scan_rows<Config::rows, EXCLUSIVE>(v);
    }
    // Without a look-back warp the block has only the data warps, and __syncthreads is theirs.
    using Barrier = std::conditional_t<Config::own_warp, FirstThreads<Config::data_threads>, WholeBlock>;
    in_tile = warp_offset_in_block<Barrier>(warp_total, tile_total, storage);
    if (threadIdx.x == 0) {
      lookback::publish(&flags[tile], lookback::pack(epoch, tile == 0 ? kPrefix : kAggregate, tile_total));
      Marks::mark(Marks::kTotal, tile);
    }
  }
  // Warp 0 after the scan, or the look-back warp from the start: the sum of all tiles before this
  // one. Thread 0 publishes the tile's prefix as soon as it can: at once in warp 0, after the
  // barrier that brings the look-back warp's sum.
  if (warp == (Config::own_warp ? kDataWarps : 0)) {
    unsigned reads = 0;
    const T before =
        tile == 0 ? T{} : lookback::sum_before<Config::sleep_ns, Config::flags, T>(flags, tile, epoch, reads);
    if ((threadIdx.x & 31) == 0) {
      s_before = before;
      Marks::mark(Marks::kBefore, tile);
      Marks::mark(Marks::kRounds, tile, reads);
    }
    if (!Config::own_warp && threadIdx.x == 0 && tile != 0)
      lookback::publish(&flags[tile], lookback::pack(epoch, kPrefix, before + tile_total));
  }
  __syncthreads();
  if (warp < kDataWarps) {
    if (Config::own_warp && threadIdx.x == 0 && tile != 0)
      lookback::publish(&flags[tile], lookback::pack(epoch, kPrefix, s_before + tile_total));
    if (threadIdx.x == 0) Marks::mark(Marks::kPrefix, tile);
    if constexpr (Config::smem_tile) {
      store_rows_shared<Config::rows, VEC>(y + base, len, parked, s_before + in_tile);
    } else {
      add_to_all(v, s_before + in_tile);
      store_rows<Config::rows, VEC>(y + base, len, v);
    }
    if (threadIdx.x == 0) Marks::mark(Marks::kStored, tile);
  }
}

template <class T, class Config = V7Config>
void v7_decoupled_lookback(cudaStream_t stream, std::int64_t n, bool exclusive, T* y, const T* x, void* scratch,
                           std::size_t scratch_bytes) {
  check_scan(n);
  if (n == 0) return;
  check_scratch("v7_decoupled_lookback", scratch_bytes, v7_scratch_bytes<Config>(n));
  const std::int64_t tiles = v7_tile_count<Config>(n);
  auto* ticket = static_cast<unsigned long long*>(scratch);
  auto* flags = reinterpret_cast<unsigned long long*>(static_cast<char*>(scratch) + kFlagsOffset);
  with_tile_flags(x, y, exclusive, [&](auto vec, auto excl) {
    const auto kernel = decoupled_lookback_kernel<Config, decltype(vec)::value, decltype(excl)::value, T>;
    constexpr std::size_t smem = Config::template smem_bytes<T>();
    if constexpr (smem > 0) {  // past 48 KiB of dynamic shared memory a kernel must ask for it
      static const bool raised = (TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                                static_cast<int>(smem))),
                                  true);
      (void)raised;
    }
    kernel<<<static_cast<unsigned>(tiles), Config::threads, smem, stream>>>(x, y, n, tiles, ticket, flags);
    TUT_CHECK_LAUNCH("decoupled_lookback_kernel");
  });
}

}  // namespace ch03
