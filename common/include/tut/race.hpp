// A chapter's problems behind a small C interface, so that one process can time our version and
// the library a user would call instead, on the same GPU context and with the same timer. Two
// processes differ by about half a percent in what they measure (the copy ceiling moved that much
// between the bench and the PyTorch script), which is as large as the gaps a chapter's last step
// is about; in one process, with the two timed in alternating rounds, that noise cancels.
//
// A chapter builds it as a shared module from three lines (race.cu), linked with problems.cu:
//   #include "tut/race.hpp"
//   #include "problems.hpp"
//   TUT_RACE_LIBRARY(ch01::problems)
// and common/tools/torch_peers.py loads it with ctypes. The interface, all `extern "C"`:
//
//   const char* tut_race_list()          the problems and versions, as JSON (what
//                                        bench --list-json prints), or "null"; needs no GPU
//   int  tut_race_open(problem, n, version, void** handle)
//                                        builds the case of n elements (n < 0: the problem's
//                                        default case), its inputs as the bench fills them
//                                        (the seed from $TUT_SEED, else the default), and the
//                                        version's scratch memory
//   int  tut_race_before(handle, stream) the untimed resets the bench runs before each launch
//   int  tut_race_launch(handle, stream) enqueues the version: the timed region
//   int  tut_race_check(handle)          one checked run against the CPU reference; nonzero if
//                                        the output is wrong
//   void tut_race_close(handle)
//   const char* tut_race_error()         why the last call that returned nonzero failed (this
//                                        thread), or the check's summary
//
// Streams are cudaStream_t passed as void* (PyTorch's torch.cuda.current_stream().cuda_stream);
// 0 is the legacy default stream. Every function catches its exceptions: nothing throws across
// the C boundary.
#pragma once

#include "tut/problem.hpp"

#include <vector>

namespace tut::race {

using Problems = std::vector<ProblemEntry>;
using GetProblems = const Problems& (*)();  // called inside each function's guard: it may throw

const char* list(GetProblems problems);
int open(GetProblems problems, const char* problem, long long n, const char* version, void** handle);
int before(void* handle, void* stream);
int launch(void* handle, void* stream);
int check(void* handle);
void close(void* handle);
const char* error();

}  // namespace tut::race

// `problems` names a function returning the chapter's problems (std::vector<tut::ProblemEntry>);
// it is called once, on first use.
#define TUT_RACE_LIBRARY(problems)                                                                              \
  namespace {                                                                                                   \
  const tut::race::Problems& tut_race_problems() {                                                              \
    static const tut::race::Problems all = problems();                                                          \
    return all;                                                                                                 \
  }                                                                                                             \
  }                                                                                                             \
  extern "C" {                                                                                                  \
  const char* tut_race_list() { return tut::race::list(&tut_race_problems); }                                   \
  int tut_race_open(const char* problem, long long n, const char* version, void** handle) {                     \
    return tut::race::open(&tut_race_problems, problem, n, version, handle);                                    \
  }                                                                                                             \
  int tut_race_before(void* handle, void* stream) { return tut::race::before(handle, stream); }                 \
  int tut_race_launch(void* handle, void* stream) { return tut::race::launch(handle, stream); }                 \
  int tut_race_check(void* handle) { return tut::race::check(handle); }                                         \
  void tut_race_close(void* handle) { tut::race::close(handle); }                                               \
  const char* tut_race_error() { return tut::race::error(); }                                                   \
  }
