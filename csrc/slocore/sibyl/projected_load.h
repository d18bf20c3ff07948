// SIBYL projected load at the handoff time tau (SIBYL Sec. 4.3, Eq. 1, 5-8,
// Alg. 1). The table tracks every request assigned to a decode instance:
//  * active (decoding): Type 1, Eq. 6: (l_in + l(tau)) * S(l(tau)) / S(l(now)),
//    l(tau) = l(now) + v_k (tau - now), v_k the request's observed decode rate;
//  * pending (prefilling) with tau_k <= tau: Type 2, Eq. 7: (l_in + g) * S(g), g = v_sys (tau - tau_k);
//  * pending with tau_k > tau: Type 3, Eq. 8: ReLU(l_in - v_sys (tau_k - tau)).
//    (Alg. 1 line 17 writes l_in - gap with gap < 0, i.e. l_in + |gap|, which contradicts
//    Eq. 8 and appendix D; we follow Eq. 8.)
// v_sys is the token-weighted mean decode rate of the active requests observed so far
// (sum of tokens decoded / sum of decode time), `v_sys_init` before any observation.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "slocore/core/id_slab.h"
#include "slocore/core/params.h"
#include "slocore/core/types.h"
#include "slocore/sibyl/survival.h"

namespace slocore::sibyl {

struct Options {
  Tokens bucket = 64;                             // survival bucket width Delta, tokens (the paper leaves it open)
  double alpha = 0.99;                            // EMA factor of Eq. 4
  Tokens max_len = 32768;                         // longest output the estimator resolves
  double v_sys_init = 30.0;                       // tokens/s before any rate is observed
  bool prob = true;                               // false: PROB@1 ablation (P = 1 in Eq. 6-7)
  bool type1 = true, type2 = true, type3 = true;  // "w/o Type k" ablations
  bool reqlevel = false;                          // REQLEVEL ablation: count requests (M = 1) instead of tokens
  template <class V>
  void visit(V& v) {
    v.field("bucket", bucket, "survival bucket width Delta, tokens", Range::at_least(1));
    v.field("alpha", alpha, "EMA factor of the survival estimator (Eq. 4)", Range::open(0, 1));
    v.field("max_len", max_len, "longest output the estimator resolves, tokens (>= bucket)",
            Range::closed(1, double(Tokens(1) << 30)));
    v.field("v_sys_init", v_sys_init, "decode rate before any is observed, tokens/s", Range::above(0));
    v.field("prob", prob, "survival-weighted projection; 0: the PROB@1 ablation (P = 1 in Eq. 6-7)");
    v.field("type1", type1, "count active requests (Eq. 6); 0: the w/o Type 1 ablation");
    v.field("type2", type2, "count pending requests handed off before tau (Eq. 7); 0: w/o Type 2");
    v.field("type3", type3, "count pending requests handed off after tau (Eq. 8); 0: w/o Type 3");
    v.field("reqlevel", reqlevel, "the REQLEVEL ablation: count requests (M = 1) instead of tokens");
  }
  void validate() const;
};

struct Tracked {
  Id id = 0;
  Tokens prompt_len = 0;
  Time tau = 0;         // predicted (pending) handoff time
  bool active = false;  // decoding (seen a token from the decode instance)
  Tokens g0 = 0, generated = 0;
  Time t0 = 0, t_last = 0;  // first and last decode-token times
};

// Per-term breakdown of one instance's projected load (for tests and studies).
struct LoadTerms {
  double type1 = 0, type2 = 0, type3 = 0;
  double total() const { return type1 + type2 + type3; }
};

class ProjectedLoad {
 public:
  explicit ProjectedLoad(const Options& o = {});
  // where_ points into by_instance_'s nodes: a move keeps them, a copy would not.
  ProjectedLoad(const ProjectedLoad&) = delete;
  ProjectedLoad& operator=(const ProjectedLoad&) = delete;
  ProjectedLoad(ProjectedLoad&&) = default;
  ProjectedLoad& operator=(ProjectedLoad&&) = default;

  const Options& options() const { return opt_; }
  SurvivalEstimator& estimator() { return est_; }
  const SurvivalEstimator& estimator() const { return est_; }

  // Bookkeeping (the paper's RequestTable). Unknown ids raise UnknownId.
  void assign(Id request, Id instance, Tokens prompt_len, Time tau);  // pending on `instance`
  void set_handoff(Id request, Time tau);                             // prefill done: tau_k known
  void token(Id request, Tokens generated, Time now);                 // a decode token
  Tokens finish(Id request);  // forget; feeds the final length to Eq. 4; returns it
  void forget(Id request);    // forget without an observation
  void drop_instance(Id instance);
  bool tracks(Id request) const { return where_.find(request) != nullptr; }
  size_t size() const { return where_.size(); }
  Id instance_of(Id request) const;

  double v_sys() const;
  double rate(const Tracked& k) const;                     // v_k, or v_sys before two tokens were seen
  LoadTerms terms(Id instance, Time now, Time tau) const;  // Eq. 1 on one instance
  double load(Id instance, Time now, Time tau) const { return terms(instance, now, tau).total(); }
  // Alg. 1: index into `instances` of the least projected load (ties: lowest index).
  int argmin(const std::vector<Id>& instances, Time now, Time tau, std::vector<double>* loads = nullptr) const;

 private:
  // Per instance, the tracked requests and, slot for slot, what a decision reads of each:
  // a decision sums over every request on every instance (Alg. 1), so the loop walks 16
  // bytes a request (and 8 more for an active one) instead of a whole Tracked.
  //  * lin: l_in as a double for a pending request, -(l_in + 1) for an active one (exact:
  //    l_in < 2^53), so its sign says which;
  //  * x: tau_k while pending; l(now) = generated once active (tau_k is no longer read);
  //  * rate[slot]: v_k as rate() computes it, or -1 while rate() falls back to v_sys.
  struct Lite {
    double x;
    double lin;
  };
  static_assert(sizeof(Lite) == 16);
  struct Instance {
    std::vector<Tracked> full;
    std::vector<Lite> lite;
    std::vector<double> rate;
  };
  struct Where {
    Id instance;
    Instance* in;  // by_instance_[instance]: a node of the map, stable until erased
    size_t slot;
  };
  const Where& where(Id request) const;  // raises UnknownId
  Tracked& get(Id request);
  std::pair<Instance*, size_t> slot_of(Id request);
  void unobserve(const Tracked& k);
  template <bool kProb, bool kReqlevel>
  LoadTerms sum_terms(const Instance& in, Time now, Time tau, double stop_at) const;
  // terms(), summed only until the partial total reaches stop_at (NaN: in full).
  LoadTerms terms_until(Id instance, Time now, Time tau, double stop_at) const;

  Options opt_;
  SurvivalEstimator est_;
  std::unordered_map<Id, Instance> by_instance_;
  IdSlab<Where> where_;                // request -> its instance and slot (looked up at every decode token)
  double tok_sum_ = 0, time_sum_ = 0;  // v_sys accumulators over active requests
};

}  // namespace slocore::sibyl
