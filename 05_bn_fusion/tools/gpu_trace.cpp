// What the GPU did, and when, in any CUDA program: a library the CUDA driver loads at its start
// (CUDA_INJECTION64_PATH) that asks CUPTI for the device's own timestamps of every kernel, memset and
// memcpy, and of every CUDA event recorded, and writes them as CSV when the program ends.
//
//   export TUT_TRACE_OUT=trace.csv CUDA_INJECTION64_PATH=$PWD/build/subprojects/05_bn_fusion/libgpu_trace.so
//   build/subprojects/05_bn_fusion/tut/bench_05_bn_fusion --problem ... --version ...
//   python3 05_bn_fusion/tools/trace_split.py trace.csv
//
// Why. The benchmark times a version with two CUDA events around its call; Nsight Compute times each
// kernel alone, at locked clocks. Where the two disagree, the events' interval holds something the
// kernels' durations do not: the wait before the first kernel starts, a memset or copy the call
// issues, a gap between kernels. The event's device timestamp and each operation's start and end,
// all on the GPU's clock, say which (trace_split.py splits each interval so).
//
// One row per record, in the order CUPTI delivers them (not sorted):
//   kind,stream,correlation,start_ns,end_ns,queued_ns,submitted_ns,grid,block,cluster,launch_type,what
// kind: kernel, memset, memcpy or event (an event's start_ns and end_ns are its device timestamp);
// queued and submitted: when the launch was queued and submitted (the latency timestamps; 0 where
// CUPTI gives none); grid, block and cluster: x*y*z; what: the kernel's name, a memset's or copy's
// bytes. Every CUPTI call is checked; a failure is reported on stderr with the call and its reason,
// and the trace is then not written.
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

bool g_failed = false;
std::mutex g_mutex;
std::vector<std::string> g_rows;

void check(CUptiResult r, const char* call, int line) {
  if (r == CUPTI_SUCCESS) return;
  const char* why = nullptr;
  cuptiGetResultString(r, &why);
  std::fprintf(stderr, "gpu_trace: %s failed at %s:%d: %s\n", call, __FILE__, line, why ? why : "unknown error");
  g_failed = true;
}
#define TRACE_CUPTI(call) check((call), #call, __LINE__)

constexpr std::size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

std::string row(const char* kind, uint32_t stream, uint32_t corr, uint64_t start, uint64_t end, uint64_t queued,
                uint64_t submitted, long long grid, long long block, long long cluster, int launch_type,
                const std::string& what) {
  char head[256];
  std::snprintf(head, sizeof head, "%s,%u,%u,%llu,%llu,%llu,%llu,%lld,%lld,%lld,%d,", kind, stream, corr,
                static_cast<unsigned long long>(start), static_cast<unsigned long long>(end),
                static_cast<unsigned long long>(queued), static_cast<unsigned long long>(submitted), grid, block,
                cluster, launch_type);
  std::string quoted = "\"";
  for (char c : what) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return head + quoted + "\"";
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::vector<std::string> rows;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        rows.push_back(row("kernel", k->streamId, k->correlationId, k->start, k->end, k->queued, k->submitted,
                           1LL * k->gridX * k->gridY * k->gridZ, 1LL * k->blockX * k->blockY * k->blockZ,
                           1LL * k->clusterX * k->clusterY * k->clusterZ, k->launchType, k->name ? k->name : "?"));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        rows.push_back(row("memset", m->streamId, m->correlationId, m->start, m->end, 0, 0, 0, 0, 0, 0,
                           std::to_string(m->bytes)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        rows.push_back(row("memcpy", m->streamId, m->correlationId, m->start, m->end, 0, 0, 0, 0, 0, m->copyKind,
                           std::to_string(m->bytes)));
        break;
      }
      case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
        const auto* e = reinterpret_cast<const CUpti_ActivityCudaEvent2*>(rec);
        rows.push_back(row("event", e->streamId, e->correlationId, e->deviceTimestamp, e->deviceTimestamp, 0, 0, 0,
                           0, 0, 0, std::to_string(e->eventId)));
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_rows.insert(g_rows.end(), rows.begin(), rows.end());
}

void write_trace() {
  TRACE_CUPTI(cuptiActivityFlushAll(1));
  const char* path = std::getenv("TUT_TRACE_OUT");
  if (g_failed) {
    std::fprintf(stderr, "gpu_trace: a CUPTI call failed (above); no trace written\n");
    return;
  }
  std::FILE* f = path ? std::fopen(path, "w") : stderr;
  if (!f) {
    std::fprintf(stderr, "gpu_trace: cannot write %s\n", path);
    return;
  }
  std::fprintf(f, "kind,stream,correlation,start_ns,end_ns,queued_ns,submitted_ns,grid,block,cluster,launch_type,what\n");
  const std::lock_guard<std::mutex> lock(g_mutex);
  for (const auto& r : g_rows) std::fprintf(f, "%s\n", r.c_str());
  if (f != stderr) std::fclose(f);
}

}  // namespace

// Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH).
extern "C" int InitializeInjection() {
  TRACE_CUPTI(cuptiActivityEnableLatencyTimestamps(1));
  TRACE_CUPTI(cuptiActivityEnableCudaEventDeviceTimestamps(1));
  TRACE_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  for (CUpti_ActivityKind k : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMSET,
                               CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_CUDA_EVENT})
    TRACE_CUPTI(cuptiActivityEnable(k));
  std::atexit(write_trace);
  return g_failed ? 0 : 1;
}
