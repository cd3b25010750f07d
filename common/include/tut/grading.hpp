// doctest loops over a problem's versions, shared by every chapter's GPU tests and exercise grader.
//
//   check_cases(problem, cases)    every version on each case, inputs with NaN, ±inf and ±0
//   check_sizes(problem)           the same for a flat problem at the awkward sizes
//   check_offsets(problem, cases)  every version that claims any alignment, with each declared
//                                  operand moved by its own 0..7 elements off the vector alignment
//   check_chains(backward, cases)  every backward version on the saved state of every forward
//                                  version that writes what it reads (tut::Chain)
//   check_all_at(problem, c)       every version on one shared instance of case c (the > 2^31 tests)
//
// Each launch writes into poisoned outputs and is compared element by element, guards included. A
// version whose setup refuses a case (tut::Unsupported, a library's restriction) is reported as a
// message and skipped for that case.
#pragma once

#include "tut/buffer.hpp"
#include "tut/check.hpp"
#include "tut/problem.hpp"
#include "tut/random.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tut {

// Empty, single, around a warp, around a block, primes, 2^20+1, and one large size that is a
// multiple of no pack width. Under compute-sanitizer (TUT_SANITIZER set by the test setups), where
// every access is instrumented, the large size is left out.
inline std::vector<std::int64_t> grade_sizes() {
  std::vector<std::int64_t> sizes = {0, 1, 7, 31, 32, 33, 255, 1000, 4099, (1 << 20) + 1};
  const char* sanitizer = std::getenv("TUT_SANITIZER");
  if (!sanitizer || !*sanitizer) sizes.push_back((std::int64_t{1} << 26) + 3);
  return sizes;
}

// A seed per (problem, case, offsets), derived from the printed test seed.
inline std::uint64_t case_seed(const std::string& problem, const std::string& case_name,
                               const std::map<std::string, int>& offsets) {
  std::uint64_t h = splitmix64(test_seed());
  for (char ch : problem + "|" + case_name) h = splitmix64(h ^ static_cast<unsigned char>(ch));
  for (const auto& [name, o] : offsets) {
    for (char ch : name) h = splitmix64(h ^ static_cast<unsigned char>(ch));
    h = splitmix64(h ^ static_cast<std::uint64_t>(o + 1));
  }
  return h;
}

// Test options: special values on, and the given offsets by operand name.
inline InstanceOptions test_options(const std::string& problem, const Case& c, std::map<std::string, int> offsets = {}) {
  InstanceOptions o;
  o.seed = case_seed(problem, c.name, offsets);
  o.specials = true;
  o.offsets = std::move(offsets);
  return o;
}

// One checked launch of `v` on a fresh instance of `c` (saved inputs filled through the chain).
// Throws Unsupported when the version's setup refuses the case.
template <class Inst>
CheckResult grade(const Problem<Inst>& p, const Version<Inst>& v, const Case& c, const InstanceOptions& opt) {
  const auto inst = instantiate(p, c, opt);
  return checked_run(make_trial(v, *inst));
}
template <class Inst>
CheckResult grade(const Problem<Inst>& p, const Version<Inst>& v, const Case& c) {
  return grade(p, v, c, test_options(p.name, c));
}

namespace detail {
// f(), or nullopt with a message when a version refuses the case (tut::Unsupported).
template <class F>
auto unless_refused(const std::string& who, F&& f) -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const Unsupported& e) {
    MESSAGE(who, ": unsupported, not graded: ", std::string(e.what()));
    return std::nullopt;
  }
}
template <class Inst>
std::optional<CheckResult> graded(const Problem<Inst>& p, const Version<Inst>& v, const Case& c, const InstanceOptions& o) {
  return unless_refused(p.name + " " + v.name + " " + c.name, [&] { return grade(p, v, c, o); });
}
inline std::string offsets_text(const std::map<std::string, int>& offsets) {
  std::string s;
  for (const auto& [name, o] : offsets) s += " " + name + "+" + std::to_string(o);
  return s;
}
}  // namespace detail

template <class Inst>
void check_cases(const Problem<Inst>& p, const std::vector<Case>& cases) {
  for (const auto& v : p.versions) {
    for (const Case& c : cases) {
      const auto r = detail::graded(p, v, c, test_options(p.name, c));
      if (r) CHECK_MESSAGE(r->ok(), p.name, " ", v.name, " ", c.name, ": ", r->summary());
    }
  }
}

// The same for a flat problem at each size.
template <class Inst>
void check_sizes(const Problem<Inst>& p, const std::vector<std::int64_t>& sizes = grade_sizes()) {
  std::vector<Case> cases;
  for (std::int64_t n : sizes) cases.push_back(flat_case(n));
  check_cases(p, cases);
}

// Every version that claims any alignment, on each case, for each offset 0..7: every operand at that
// same offset (aligned to each other, not to 16 bytes), then operand k at (offset + 3k) % 8 (no two
// of the first eight aligned alike). The operands are the instance's declared ones: inputs, saved
// inputs, outputs and state.
template <class Inst>
void check_offsets(const Problem<Inst>& p, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    std::vector<std::string> names;
    const auto probe = p.make(c, InstanceOptions{});
    for (const auto& op : probe->operands()) names.push_back(op->name());
    for (const auto& v : p.versions) {
      if (!v.any_alignment) continue;
      for (int off = 0; off < 8; ++off) {
        for (bool apart : {false, true}) {
          std::map<std::string, int> offsets;
          for (std::size_t k = 0; k < names.size(); ++k)
            offsets[names[k]] = apart ? static_cast<int>((off + 3 * k) % 8) : off;
          const auto r = detail::graded(p, v, c, test_options(p.name, c, offsets));
          if (r) CHECK_MESSAGE(r->ok(), p.name, " ", v.name, " ", c.name, detail::offsets_text(offsets), ": ", r->summary());
        }
      }
    }
  }
}
template <class Inst>
void check_offsets(const Problem<Inst>& p, const std::vector<std::int64_t>& sizes = {33, 1000, 4099}) {
  std::vector<Case> cases;
  for (std::int64_t n : sizes) cases.push_back(flat_case(n));
  check_offsets(p, cases);
}

// Each own forward version of the backward's chain (or of `forward`, a forward problem with the
// same outputs: AddReLU's for ReLU's backward, say), then each backward version that reads only
// saved inputs this forward version writes, on the state it wrote: the saved inputs it does not
// write come from the chain's usual producers. A version that refuses the case (Unsupported) is
// reported and skipped. Returns the number of pairs graded.
//
// The backward's instance, its saved inputs filled from the forward version, is built once per case
// and forward version and shared by the backward versions: filling it builds, runs and checks two
// forward instances, work that does not depend on the backward version. The saved inputs' bytes are
// kept on the device and copied back before each backward version's setup, so each version sees
// what the forward wrote even where an earlier version's setup wrote over them (cuDNN's fused
// backward runs its own forward into them).
template <class Inst>
int check_chains(const Problem<Inst>& bwd, const std::vector<Case>& cases, const ProblemEntry* forward = nullptr) {
  REQUIRE_MESSAGE(static_cast<bool>(bwd.chain), bwd.name, " has no chain to a forward");
  const ProblemEntry& fwd = forward ? *forward : bwd.chain.forward();
  const auto writes = [](const VersionInfo& f, const std::string& out) {
    return f.writes.empty() || std::find(f.writes.begin(), f.writes.end(), out) != f.writes.end();
  };
  int pairs = 0;
  for (const Case& c : cases) {
    const InstanceOptions opt = test_options(fwd.name + "->" + bwd.name, c);
    for (std::size_t fv = 0; fv < fwd.versions.size(); ++fv) {
      if (fwd.versions[fv].kind != Kind::own) continue;  // an exercise is graded on its own
      std::unique_ptr<Inst> inst;  // built at the first backward version the pair applies to
      std::vector<std::pair<Operand*, DeviceBuffer<unsigned char>>> kept;  // its saved inputs' bytes as filled
      for (const auto& bv : bwd.versions) {
        bool applies = true, reads_saved = false;
        for (const auto& [saved, output] : bwd.chain.links) {
          const bool reads = bv.reads.empty() || std::find(bv.reads.begin(), bv.reads.end(), saved) != bv.reads.end();
          if (!reads) continue;
          reads_saved = true;
          applies = applies && writes(fwd.versions[fv], output);
        }
        if (!applies || !reads_saved) continue;
        const std::string who = fwd.name + " " + fwd.versions[fv].name + " -> " + bwd.name + " " + bv.name + " " + c.name;
        const auto r = detail::unless_refused(who, [&] {
          if (!inst) {  // held only once filled: a forward that refuses the case is asked again, and refuses again
            auto filled = instantiate(bwd, c, opt, &fwd);
            fill_saved_from(bwd.chain, fwd, fv, c, opt, *filled);
            for (const auto& name : filled->names(Role::saved)) {
              Operand& op = filled->operand(name);
              kept.emplace_back(&op, DeviceBuffer<unsigned char>(op.bytes()));
              if (op.bytes() > 0)
                TUT_CUDA(cudaMemcpy(kept.back().second.data(), op.device(), op.bytes(), cudaMemcpyDeviceToDevice));
            }
            inst = std::move(filled);
          } else {
            for (auto& [op, bytes] : kept)
              if (op->bytes() > 0) TUT_CUDA(cudaMemcpy(op->device(), bytes.data(), op->bytes(), cudaMemcpyDeviceToDevice));
          }
          return checked_run(make_trial(bv, *inst));
        });
        if (!r) continue;
        CHECK_MESSAGE(r->ok(), who, ": ", r->summary());
        ++pairs;
      }
    }
  }
  return pairs;
}

// Every version on one instance of `c` (built once: the > 2^31-element inputs are big). In each
// group of versions that write the same outputs, the first is compared with the CPU reference
// element by element. Where every output's rule is exact or bitwise and that comparison passed,
// each later version of the group is then compared with the first version's outputs byte for byte
// on the device: equal bytes to outputs that match the reference match it too, and the check costs
// milliseconds instead of a host pass over gigabytes. A version that differs anywhere gets the full
// comparison with the reference, which says where. Says how long each part took, since these are
// the slowest tests. A version that refuses the case is reported and skipped.
template <class Inst>
void check_all_at(const Problem<Inst>& p, const Case& c) {
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count();
  };
  auto t0 = clock::now();
  const auto inst = instantiate(p, c, test_options(p.name, c));
  TUT_CUDA(cudaDeviceSynchronize());
  MESSAGE(p.name, " ", c.name, ": instance built in ", ms(t0, clock::now()), " ms");
  struct Group {
    std::string first;
    std::vector<DeviceBuffer<unsigned char>> bytes;  // the first version's outputs, once they passed
  };
  std::map<std::vector<std::string>, Group> groups;
  for (const auto& v : p.versions) {
    t0 = clock::now();
    const auto trial = detail::unless_refused(p.name + " " + v.name + " " + c.name, [&] { return make_trial(v, *inst); });
    if (!trial) continue;
    const Trial& t = *trial;
    t.poison(nullptr);
    t.before(nullptr);
    t.launch(nullptr);
    TUT_CUDA(cudaDeviceSynchronize());
    const auto t1 = clock::now();
    Group& g = groups[t.writes];
    if (!g.bytes.empty()) {
      std::uint64_t differ = 0;
      for (std::size_t o = 0; o < t.writes.size(); ++o) {
        const Operand& op = inst->operand(t.writes[o]);
        differ += count_different_bytes(op.device(), g.bytes[o].data(), op.bytes());
      }
      if (differ == 0) {
        MESSAGE(p.name, " ", v.name, ": launch ", ms(t0, t1), " ms; every output byte equals ", g.first, "'s (",
                ms(t1, clock::now()), " ms on the device)");
        CHECK(differ == 0);
        continue;
      }
    }
    const CheckResult r = t.check();
    MESSAGE(p.name, " ", v.name, ": launch ", ms(t0, t1), " ms, compared with the reference in ", ms(t1, clock::now()),
            " ms");
    CHECK_MESSAGE(r.ok(), p.name, " ", v.name, " ", c.name, ": ", r.summary());
    bool exact = true;
    for (const auto& w : t.writes) exact = exact && inst->operand(w).rule().kind != Rule::Kind::tolerance;
    if (g.first.empty() && r.ok() && exact) {
      g.first = v.name;
      for (const auto& w : t.writes) {
        const Operand& op = inst->operand(w);
        g.bytes.emplace_back(op.bytes());
        TUT_CUDA(cudaMemcpy(g.bytes.back().data(), op.device(), op.bytes(), cudaMemcpyDeviceToDevice));
      }
    }
  }
}

}  // namespace tut
