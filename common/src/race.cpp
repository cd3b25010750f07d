#include "tut/race.hpp"

#include "tut/device.hpp"
#include "tut/random.hpp"

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

namespace tut::race {

namespace {

thread_local std::string g_message;

// One version on one case: the session owns the buffers, the trial the version's scratch.
struct Handle {
  std::unique_ptr<CaseSession> session;
  Trial trial;
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

}  // namespace

const char* list(GetProblems problems) {
  thread_local std::string text;
  if (guarded("tut_race_list", [&] {
        text = problems_json(problems());
        return 0;
      }) != 0)
    text = "null";
  return text.c_str();
}

int open(GetProblems get, const char* problem, long long n, const char* version, void** handle) {
  return guarded("tut_race_open", [&] {
    const Problems& problems = get();
    if (handle == nullptr) throw std::invalid_argument("no place for the handle");
    *handle = nullptr;
    const std::string p_name = problem ? problem : "", v_name = version ? version : "";
    const ProblemEntry* p = nullptr;
    for (const auto& e : problems)
      if (e.name == p_name) p = &e;
    if (p == nullptr) throw std::invalid_argument("no problem '" + p_name + "' in this chapter");
    std::size_t v = p->versions.size();
    for (std::size_t k = 0; k < p->versions.size(); ++k)
      if (p->versions[k].name == v_name) v = k;
    if (v == p->versions.size()) throw std::invalid_argument("no version '" + v_name + "' of " + p_name);
    if (!has_cuda_device()) throw std::runtime_error("no CUDA device");
    const Case c = n < 0 ? p->default_case : p->case_for_shape({static_cast<std::int64_t>(n)});
    auto h = std::make_unique<Handle>();
    h->session = p->open(c, test_seed());
    h->trial = h->session->trial(v);
    *handle = h.release();
    return 0;
  });
}

int before(void* handle, void* stream) {
  return guarded("tut_race_before", [&] {
    as_handle(handle).trial.before(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

int launch(void* handle, void* stream) {
  return guarded("tut_race_launch", [&] {
    as_handle(handle).trial.launch(static_cast<cudaStream_t>(stream));
    return 0;
  });
}

int check(void* handle) {
  return guarded("tut_race_check", [&] {
    const CheckResult r = checked_run(as_handle(handle).trial);
    g_message = r.summary();
    return r.ok() ? 0 : 2;
  });
}

void close(void* handle) { delete static_cast<Handle*>(handle); }

const char* error() { return g_message.c_str(); }

}  // namespace tut::race
