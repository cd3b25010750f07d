// Every chapter's race module: its problems (tut::chapter(), from problems.cu) behind a small C
// interface, so that one process can time our version and the library a user would call instead,
// on the same GPU context and with the same timer. Two processes differ by about half a percent in
// what they measure (the copy ceiling moved that much between the bench and the PyTorch script),
// which is as large as the gaps a chapter's last step is about; in one process, with the two timed
// in alternating rounds, that noise cancels. common/tools/torch_peers.py loads it with ctypes.
//
//   const char* tut_race_list()          the problems, their parameters, cases (with floors) and
//                                        versions as JSON (what bench --list-json prints), or
//                                        "null"; needs no GPU
//   const char* tut_race_case(problem, case)
//                                        one case as JSON: name, shape, params, floor; "null" on
//                                        error. `case` is "" (the default case), a case's name, or
//                                        a shape and parameters: "n=1000 segment=256",
//                                        "2x64x16x56x56 kernel=3x3x3 stride=2"
//   int  tut_race_open(problem, case, version, void** handle)
//                                        builds the case, its inputs as the bench fills them (the
//                                        seed from $TUT_SEED, else the default), and the version's
//                                        workspace and setup
//   int  tut_race_before(handle, stream) the untimed resets the bench runs before each launch
//   int  tut_race_launch(handle, stream) enqueues the version: the timed region
//   int  tut_race_check(handle)          one checked run against the CPU reference; 2 if the
//                                        output is wrong
//   void tut_race_close(handle)
//   const char* tut_race_error()         why the last call that failed did (this thread), or the
//                                        check's summary
//
// Streams are cudaStream_t passed as void* (PyTorch's torch.cuda.current_stream().cuda_stream);
// 0 is the legacy default stream. Every function catches its exceptions: nothing throws across
// the C boundary.
#include "json.hpp"
#include "tut/chapter.hpp"
#include "tut/device.hpp"
#include "tut/random.hpp"

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

thread_local std::string g_message;

// One version on one case: the session owns the buffers, the trial the version's workspace.
struct Handle {
  std::unique_ptr<tut::CaseSession> session;
  tut::Trial trial;
};

template <class F>
int guarded(const char* what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    g_message = std::string(what) + ": " + e.what();
  } catch (...) {
    g_message = std::string(what) + ": an exception that is not a std::exception";
  }
  return 1;
}

Handle& as_handle(void* handle) {
  if (handle == nullptr) throw std::invalid_argument("a null handle (tut_race_open failed or was not called)");
  return *static_cast<Handle*>(handle);
}

const tut::ProblemEntry& find_problem(const char* problem) {
  const std::string name = problem ? problem : "";
  for (const auto& p : tut::chapter().problems)
    if (p.name == name) return p;
  throw std::invalid_argument("no problem '" + name + "' in " + tut::chapter().name);
}

}  // namespace

extern "C" {

const char* tut_race_list() {
  thread_local std::string text;
  if (guarded("tut_race_list", [&] {
        text = tut::problems_json(tut::chapter().problems);
        return 0;
      }) != 0)
    text = "null";
  return text.c_str();
}

const char* tut_race_case(const char* problem, const char* case_text) {
  thread_local std::string text;
  if (guarded("tut_race_case", [&] {
        const tut::ProblemEntry& p = find_problem(problem);
        text = tut::case_json(p, tut::parse_case_text(p, case_text ? case_text : ""));
        return 0;
      }) != 0)
    text = "null";
  return text.c_str();
}

int tut_race_open(const char* problem, const char* case_text, const char* version, void** handle) {
  return guarded("tut_race_open", [&] {
    if (handle == nullptr) throw std::invalid_argument("no place for the handle");
    *handle = nullptr;
    const tut::ProblemEntry& p = find_problem(problem);
    const std::size_t v = p.version_index(version ? version : "");
    const tut::Case c = tut::parse_case_text(p, case_text ? case_text : "");
    if (!tut::has_cuda_device()) throw std::runtime_error("no CUDA device");
    tut::InstanceOptions opt;
    opt.seed = tut::test_seed();
    auto h = std::make_unique<Handle>();
    h->session = p.open(c, opt);
    h->trial = h->session->trial(v);
    *handle = h.release();
    return 0;
  });
}

int tut_race_before(void* handle, void* stream) {
  return guarded("tut_race_before", [&] {
    as_handle(handle).trial.before(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

int tut_race_launch(void* handle, void* stream) {
  return guarded("tut_race_launch", [&] {
    as_handle(handle).trial.launch(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

int tut_race_check(void* handle) {
  return guarded("tut_race_check", [&] {
    const tut::CheckResult r = tut::checked_run(as_handle(handle).trial);
    g_message = r.summary();
    return r.ok() ? 0 : 2;
  });
}

void tut_race_close(void* handle) { delete static_cast<Handle*>(handle); }

const char* tut_race_error() { return g_message.c_str(); }

}  // extern "C"
