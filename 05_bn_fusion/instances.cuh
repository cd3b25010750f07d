// Chapter 05's instances (tut/problem.hpp): one case's operands, declared once, and how each is
// judged against the double-precision reference (reference.hpp).
//
// ForwardInstance<T, kAdd>   inputs x (and r), gamma, beta; state running_mean, running_var
//                            (drawn, updated in place by every launch, restored before every
//                            launch); outputs y, mask, saved_mean, saved_invstd.
// BackwardInstance<T, kAdd>  inputs dy, x, gamma (and beta, r: x, gamma, beta and r are drawn from
//                            the same names and seed as the forward's: the same values); saved inputs saved_mean,
//                            saved_invstd, mask and y, written by a forward version (the chain);
//                            outputs dx, dgamma, dbeta (and dr).
// InferenceInstance<T>       inputs x, gamma, beta, running_mean, running_var; output y.
//
// The mask is judged against the kernel's own y everywhere (bit == !(y <= 0)), and against the
// reference except where the reference's pre-activation lies within y's tolerance of 0. The
// backward is judged against the statistics and mask the forward saved (as the device held them),
// so it is graded on whatever forward wrote them.
#pragma once

#include "bn_shape.hpp"
#include "kernels/common.cuh"
#include "reference.hpp"
#include "tut/arrays.cuh"
#include "tut/bitmask.cuh"
#include "tut/problem.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ch05 {

inline Shape4 shape_of(const tut::Case& c) {
  Shape4 s;
  s.N = c.shape.at(0);
  s.C = c.shape.at(1);
  s.HW = c.shape.at(2) * c.shape.at(3);
  s.layout = c.params.get<std::string>("layout") == "NHWC" ? Layout::nhwc : Layout::nchw;
  return s;
}

// x is uniform in [shift - 3, shift + 3): mean about shift, variance 3.
inline tut::InputSpec x_spec(const tut::Case& c) {
  const double shift = c.params.get<double>("shift");
  return tut::InputSpec::uniform(shift - 3, shift + 3);
}
inline tut::InputSpec gamma_spec() { return tut::InputSpec::uniform(0.5, 1.5); }
inline tut::InputSpec beta_spec() { return tut::InputSpec::uniform(-0.5, 0.5); }
inline tut::InputSpec running_mean_spec() { return tut::InputSpec::uniform(-1, 1); }
inline tut::InputSpec running_var_spec() { return tut::InputSpec::uniform(0.5, 2); }

// The rule of an operand judged element by element with its own tolerance (judge()): only its kind
// matters, "not bitwise".
constexpr tut::Rule judged() { return tut::Rule::tolerance(0, 0); }

inline bool kept_ref(double s) { return !(s <= 0); }

template <class T, bool kAdd>
class ForwardInstance : public tut::Instance {
 public:
  ForwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        s_(shape_of(c)),
        eps_(c.params.get<double>("eps")),
        momentum_(c.params.get<double>("momentum")),
        x_(input<T>("x", s_.numel(), x_spec(c))),
        r_(kAdd ? &input<T>("r", s_.numel(), tut::InputSpec::uniform(-2, 2)) : nullptr),
        gamma_(input<float>("gamma", s_.C, gamma_spec())),
        beta_(input<float>("beta", s_.C, beta_spec())),
        running_mean_(state<float>("running_mean", s_.C, running_mean_spec(), judged()).judge([this](std::int64_t ch, float got) {
          const double m = momentum_, rm0 = running_mean_.at(ch), mean = ref_.mean[ch];
          const double want = (1 - m) * rm0 + m * mean;
          return within(got, want, m * chan_[static_cast<std::size_t>(ch)].mean_tol + 4 * kU * (std::fabs(rm0) + std::fabs(want)) + 1e-30);
        })),
        running_var_(state<float>("running_var", s_.C, running_var_spec(), judged()).judge([this](std::int64_t ch, float got) {
          const double m = momentum_, rv0 = running_var_.at(ch), M = static_cast<double>(s_.per_channel());
          const double unbiased = ref_.var[ch] * M / (M - 1), want = (1 - m) * rv0 + m * unbiased;
          return within(got, want, m * kVarTol * unbiased + 4 * kU * (std::fabs(rv0) + std::fabs(want)) + 1e-30);
        })),
        y_(output<T>("y", s_.numel(), judged()).judge([this](std::int64_t e, T got) {
          const Pre p = pre_at(e, channel_at(e));
          return within(as_double(got), p.s < 0 ? 0.0 : p.s, p.tol);
        })),
        mask_(output<Word>("mask", tut::bitmask::word_count(s_.numel()), tut::Rule::bitwise())
                  .judge([this](std::int64_t w, Word got) { return mask_verdict(w, got); })),
        saved_mean_(output<float>("saved_mean", s_.C, judged()).judge([this](std::int64_t ch, float got) {
          return within(got, ref_.mean[ch], chan_[static_cast<std::size_t>(ch)].mean_tol);
        })),
        saved_invstd_(output<float>("saved_invstd", s_.C, judged()).judge([this](std::int64_t ch, float got) {
          const double inv = chan_[static_cast<std::size_t>(ch)].invstd;
          return within(got, inv, kInvstdTol * inv + 1e-30);
        })),
        map_(s_) {}

  const Shape4& shape() const { return s_; }
  FwdArgs<T> args() {
    FwdArgs<T> a;
    a.s = s_;
    a.x = x_.data();
    a.r = r_ ? r_->data() : nullptr;
    a.gamma = gamma_.data();
    a.beta = beta_.data();
    a.running_mean = running_mean_.data();
    a.running_var = running_var_.data();
    a.y = y_.data();
    a.mask = mask_.data();
    a.saved_mean = saved_mean_.data();
    a.saved_invstd = saved_invstd_.data();
    a.eps = static_cast<float>(eps_);
    a.momentum = static_cast<float>(momentum_);
    return a;
  }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }

  // The pre-activation s of element e (channel ch) in double, from the exact statistics, and how far
  // a float kernel's s (and y) may be from it: the mean's and invstd's tolerances carried through
  // gamma * (x - mean) * invstd, four roundings of each term, and the rounding to T.
  struct Pre {
    double s, tol;
  };
  Pre pre_at(std::int64_t e, std::int64_t ch) const {
    const ChannelRef& k = chan_[static_cast<std::size_t>(ch)];
    const double gx = k.gamma * (as_double(x_.at(e)) - k.mean) * k.invstd;
    double s = gx + k.beta, r = 0;
    if constexpr (kAdd) {
      r = as_double(r_->at(e));
      s += r;
    }
    const double tol = k.tol0 + std::fabs(gx) * kInvstdTol + 4 * kU * (std::fabs(gx) + std::fabs(k.beta) + std::fabs(r) + std::fabs(s)) +
                       out_rel<T>() * std::fabs(s) + out_abs<T>();
    return {s, tol};
  }

 protected:
  // Once per instance (the inputs never change): the exact statistics, each channel's constants,
  // and the reference's side of every mask word, on every core. Judged word by word instead, the
  // mask (numel / 32 words, so two of parallel_chunks' chunks at 64x64x112x112) took seconds per check.
  void prepare_reference() override {
    if (!ref_.mean.empty()) return;
    ref_ = channel_stats(s_, [this](std::int64_t e) { return as_double(x_.at(e)); });
    for (std::size_t ch = 0; ch < ref_.mean.size(); ++ch) {
      const auto c = static_cast<std::int64_t>(ch);
      ChannelRef k;
      k.gamma = gamma_.at(c);
      k.beta = beta_.at(c);
      k.mean = ref_.mean[ch];
      k.invstd = 1 / std::sqrt(ref_.var[ch] + eps_);
      k.mean_tol = kMeanTol * (std::fabs(ref_.mean[ch]) + std::sqrt(ref_.var[ch])) + 1e-30;
      k.tol0 = std::fabs(k.gamma) * k.invstd * k.mean_tol;
      chan_.push_back(k);
    }
    const std::int64_t n = s_.numel(), words = tut::bitmask::word_count(n);
    ref_bits_.assign(static_cast<std::size_t>(words), 0);
    free_bits_.assign(static_cast<std::size_t>(words), 0);
    // Chunks of elements; a word goes to the chunk its first element is in.
    tut::parallel_chunks(n, [&](int, std::int64_t b, std::int64_t e) {
      for (std::int64_t w = (b + 31) / 32; w < (e + 31) / 32; ++w) {
        Word ref = 0, free = 0;
        for (int j = 0; j < 32 && 32 * w + j < n; ++j) {
          const Pre p = pre_at(32 * w + j, channel_at(32 * w + j));
          ref |= Word{kept_ref(p.s)} << j;
          free |= Word{!(std::fabs(p.s) > p.tol)} << j;
        }
        ref_bits_[static_cast<std::size_t>(w)] = ref;
        free_bits_[static_cast<std::size_t>(w)] = free;
      }
    });
  }

 private:
  std::int64_t channel_at(std::int64_t e) const {
    int c;
    std::int64_t pos;
    map_.locate(e, c, pos);
    return c;
  }

  // Word w against the kernel's own y and the reference's word; the message names the first wrong
  // bit, by the first rule it breaks: a padding bit set, a bit that disagrees with y, a bit that
  // disagrees with the reference where the reference's s is farther from 0 than its tolerance.
  std::string mask_verdict(std::int64_t w, Word got) const {
    const std::int64_t n = s_.numel(), first = 32 * w;
    const Word past = n - first >= 32 ? Word{0} : ~Word{0} << (n - first);
    Word from_y = 0;
    for (int j = 0; j < 32 && first + j < n; ++j) from_y |= Word{kept_ref(as_double(y_.host(first + j)))} << j;
    const std::size_t k = static_cast<std::size_t>(w);
    const Word wrong = (got & past) | ((got ^ from_y) & ~past) | ((got ^ ref_bits_[k]) & ~free_bits_[k] & ~past);
    if (wrong == 0) return "";
    int j = 0;
    while (!((wrong >> j) & 1u)) ++j;
    const std::int64_t e = first + j;
    const bool bit = (got >> j) & 1u;
    std::ostringstream why;
    if (e >= n) {
      why << "bit " << j << " (past the end) clear";
    } else if (bit != ((from_y >> j) & 1u)) {
      why << "bit " << j << " = " << !bit << ", as the kernel's y[" << e << "] = " << as_double(y_.host(e)) << " says";
    } else {
      const Pre p = pre_at(e, channel_at(e));
      why << "bit " << j << " = " << kept_ref(p.s) << " (pre-activation " << p.s << ", farther from 0 than " << p.tol << ")";
    }
    return why.str();
  }

  // A channel's reference values, in double.
  struct ChannelRef {
    double gamma = 0, beta = 0, mean = 0, invstd = 0, mean_tol = 0, tol0 = 0;  // tol0: the mean's tolerance carried to s
  };

  Shape4 s_;
  double eps_, momentum_;
  tut::Array<T>& x_;
  tut::Array<T>* r_;
  tut::Array<float>& gamma_;
  tut::Array<float>& beta_;
  tut::Array<float>& running_mean_;
  tut::Array<float>& running_var_;
  tut::Array<T>& y_;
  tut::Array<Word>& mask_;
  tut::Array<float>& saved_mean_;
  tut::Array<float>& saved_invstd_;
  ChannelMap map_;
  ChannelStats ref_;
  std::vector<ChannelRef> chan_;
  std::vector<Word> ref_bits_, free_bits_;  // per mask word: the reference's bits, and those within tolerance of 0
};

template <class T, bool kAdd>
class BackwardInstance : public tut::Instance {
 public:
  BackwardInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        s_(shape_of(c)),
        eps_(c.params.get<double>("eps")),
        dy_(input<T>("dy", s_.numel(), tut::InputSpec::uniform(-1, 1))),
        x_(input<T>("x", s_.numel(), x_spec(c))),
        gamma_(input<float>("gamma", s_.C, gamma_spec())),
        beta_(input<float>("beta", s_.C, beta_spec())),
        r_(kAdd ? &input<T>("r", s_.numel(), tut::InputSpec::uniform(-2, 2)) : nullptr),
        saved_mean_(saved<float>("saved_mean", s_.C)),
        saved_invstd_(saved<float>("saved_invstd", s_.C)),
        mask_(saved<Word>("mask", tut::bitmask::word_count(s_.numel()))),
        y_(saved<T>("y", s_.numel())),
        dx_(output<T>("dx", s_.numel(), judged()).judge([this](std::int64_t e, T got) { return dx_verdict(e, got); })),
        dgamma_(output<float>("dgamma", s_.C, judged()).judge([this](std::int64_t ch, float got) {
          const auto& t = sums_[static_cast<std::size_t>(ch)];
          return within(got, t[1], kSumTol * t[3] + 4 * kU * std::fabs(t[1]) + 1e-30);
        })),
        dbeta_(output<float>("dbeta", s_.C, judged()).judge([this](std::int64_t ch, float got) {
          const auto& t = sums_[static_cast<std::size_t>(ch)];
          return within(got, t[0], kSumTol * t[2] + 4 * kU * std::fabs(t[0]) + 1e-30);
        })),
        dr_(kAdd ? &output<T>("dr", s_.numel(), tut::Rule::bitwise()).expect([this](std::int64_t e) {
          return kept_at(e) ? dy_.at(e) : T(0.0f);
        })
                 : nullptr),
        map_(s_) {}

  const Shape4& shape() const { return s_; }
  BwdArgs<T> args() {
    BwdArgs<T> a;
    a.s = s_;
    a.dy = dy_.data();
    a.x = x_.data();
    a.gamma = gamma_.data();
    a.saved_mean = saved_mean_.data();
    a.saved_invstd = saved_invstd_.data();
    a.mask = mask_.data();
    a.y = y_.data();
    a.dx = dx_.data();
    a.dgamma = dgamma_.data();
    a.dbeta = dbeta_.data();
    a.dr = dr_ ? dr_->data() : nullptr;
    return a;
  }

  double eps() const { return eps_; }
  // beta and r are the forward's (same names, same seed); only cuDNN's fused backward, which runs
  // its own forward in its setup, reads them.
  const float* beta_data() { return beta_.data(); }
  const T* r_data() { return r_ ? r_->data() : nullptr; }

  // The saved mask's bit for element e (as the forward wrote it, checked when it was written).
  bool kept_at(std::int64_t e) const { return (mask_.host(tut::bitmask::word_of(e)) >> tut::bitmask::bit_of(e)) & 1u; }

 protected:
  // Per channel: sum g, sum g * x^, sum |g|, sum |g * x^|, with the saved statistics.
  void prepare_reference() override {
    sums_ = channel_sums<4>(s_, [this](std::int64_t e, std::int64_t ch) {
      const double g = kept_at(e) ? as_double(dy_.at(e)) : 0.0;
      const double xh = (as_double(x_.at(e)) - saved_mean_.host(ch)) * saved_invstd_.host(ch);
      return std::array<double, 4>{g, g * xh, std::fabs(g), std::fabs(g * xh)};
    });
  }

 private:
  // dx = A * (g - dbeta / M - x^ * dgamma / M), A = gamma * invstd. The tolerance carries the two
  // sums' tolerances (divided by M) and four roundings of each term, times A.
  std::string dx_verdict(std::int64_t e, T got) const {
    int ch;
    std::int64_t pos;
    map_.locate(e, ch, pos);
    const auto& t = sums_[static_cast<std::size_t>(ch)];
    const double M = static_cast<double>(s_.per_channel()), inv = saved_invstd_.host(ch);
    const double A = gamma_.at(ch) * inv;
    const double g = kept_at(e) ? as_double(dy_.at(e)) : 0.0;
    const double xh = (as_double(x_.at(e)) - saved_mean_.host(ch)) * inv;
    const double want = A * (g - t[0] / M - xh * t[1] / M);
    const double tol = std::fabs(A) * (4 * kU * (std::fabs(g) + (std::fabs(t[0]) + std::fabs(xh * t[1])) / M) +
                                       (kSumTol * t[2] + std::fabs(xh) * kSumTol * t[3]) / M) +
                       out_rel<T>() * std::fabs(want) + out_abs<T>();
    return within(as_double(got), want, tol);
  }

  Shape4 s_;
  double eps_;
  tut::Array<T>& dy_;
  tut::Array<T>& x_;
  tut::Array<float>& gamma_;
  tut::Array<float>& beta_;
  tut::Array<T>* r_;
  tut::Array<float>& saved_mean_;
  tut::Array<float>& saved_invstd_;
  tut::Array<Word>& mask_;
  tut::Array<T>& y_;
  tut::Array<T>& dx_;
  tut::Array<float>& dgamma_;
  tut::Array<float>& dbeta_;
  tut::Array<T>* dr_;
  std::vector<std::array<double, 4>> sums_;
  ChannelMap map_;
};

template <class T>
class InferenceInstance : public tut::Instance {
 public:
  InferenceInstance(const tut::Case& c, const tut::InstanceOptions& o)
      : Instance(o),
        s_(shape_of(c)),
        eps_(c.params.get<double>("eps")),
        x_(input<T>("x", s_.numel(), x_spec(c))),
        gamma_(input<float>("gamma", s_.C, gamma_spec())),
        beta_(input<float>("beta", s_.C, beta_spec())),
        running_mean_(input<float>("running_mean", s_.C, running_mean_spec())),
        running_var_(input<float>("running_var", s_.C, running_var_spec())),
        y_(output<T>("y", s_.numel(), judged()).judge([this](std::int64_t e, T got) {
          const std::int64_t ch = s_.channel_of(e);
          const double scale = gamma_.at(ch) / std::sqrt(running_var_.at(ch) + eps_);
          const double x = as_double(x_.at(e)), shift = beta_.at(ch) - running_mean_.at(ch) * scale;
          const double s = x * scale + shift;
          // The fold's cancellation: x * scale and running_mean * scale are each rounded.
          const double tol = 4 * kU * (std::fabs(x * scale) + 2 * std::fabs(running_mean_.at(ch) * scale) +
                                       std::fabs(beta_.at(ch)) + std::fabs(s)) +
                             out_rel<T>() * std::fabs(s) + out_abs<T>();
          return within(as_double(got), s < 0 ? 0.0 : s, tol);
        })) {}

  InferArgs<T> args() {
    InferArgs<T> a;
    a.s = s_;
    a.x = x_.data();
    a.gamma = gamma_.data();
    a.beta = beta_.data();
    a.running_mean = running_mean_.data();
    a.running_var = running_var_.data();
    a.y = y_.data();
    a.eps = static_cast<float>(eps_);
    return a;
  }
  const Shape4& shape() const { return s_; }

 private:
  Shape4 s_;
  double eps_;
  tut::Array<T>& x_;
  tut::Array<float>& gamma_;
  tut::Array<float>& beta_;
  tut::Array<float>& running_mean_;
  tut::Array<float>& running_var_;
  tut::Array<T>& y_;
};

}  // namespace ch05
