// ProServe SlideBatching (ProServe Alg. 1, Sec. 4.2): a latency budget
// t_budget = max(min_r remain_r, eta) (lines 6-7); requests whose remaining time is below
// gamma * phi (load judgment, Eq. 8 phi_a / Eq. 9 phi_c / phi_p for P/D prefill) are URGENT
// and go first by gain density w_r(i)/exec (line 13); NORMAL ones follow by remaining time.
// The batch is filled until the estimated time (Eq. 7, with the online-corrected model of
// the view) reaches the budget, prefills chunked by GETMAXCHUNK (lines 14-18).
// Ablations of Fig. 15: order = "deadline" (all NORMAL), "density" (all URGENT);
// latency_aware = false replaces the latency budget with a token budget.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "slocore/batch/kept_order.h"
#include "slocore/batch/plan_builder.h"
#include "slocore/batch/queue_positions.h"
#include "slocore/proserve/tdg.h"

namespace slocore::proserve {

enum class SlideOrder { Slide, Deadline, Density };  // Fig. 15 ablations: all NORMAL / all URGENT
inline const EnumNames<Phi> kSlidePhis = {{"a", Phi::Aggressive}, {"c", Phi::Conservative}, {"p", Phi::Prefill}};
inline const EnumNames<SlideOrder> kSlideOrders = {
    {"slide", SlideOrder::Slide}, {"deadline", SlideOrder::Deadline}, {"density", SlideOrder::Density}};

struct SlideParams {
  Phi phi = Phi::Aggressive;  // the paper reports phi_a (section 4.4)
  double gamma = 1.0;         // aggressiveness coefficient (line 9)
  double eta = 0.05;          // lower bound of t_budget, s (line 7); keep it above t_c
  TdgWeights weights{};       // w_p, w_d of Eq. 3
  SlideOrder order = SlideOrder::Slide;
  bool latency_aware = true;  // false: token budget instead of latency budget
  Tokens token_budget = 512;  // used when !latency_aware
  template <class V>
  void visit(V& v) {
    v.field("phi", phi, "load judgment: phi_a (Eq. 8), phi_c (Eq. 9) or phi_p (P/D prefill)", kSlidePhis);
    v.field("gamma", gamma, "aggressiveness: URGENT when remaining time < gamma * phi (line 9)", Range::at_least(0));
    v.field("eta", eta, "lower bound of the latency budget, s (line 7)", Range::above(0));
    v.field("w_prefill", weights.w_prefill, "Eq. 3 weight w_p of a first token", Range::at_least(0));
    v.field("w_decode", weights.w_decode, "Eq. 3 weight w_d of a decode token", Range::at_least(0));
    v.field("order", order, "slide (Alg. 1), or the Fig. 15 ablations deadline (all NORMAL), density (all URGENT)",
            kSlideOrders);
    v.field("latency_aware", latency_aware, "latency budget (Alg. 1); 0: a token budget instead");
    v.field("token_budget", token_budget, "tokens per iteration when latency_aware is 0", Range::at_least(1));
  }
  void validate() const;
};

// One candidate of Alg. 1 lines 2-5.
struct SlideCandidate : Candidate {  // s, running, index (into view.running or view.waiting)
  double exec = 0.0;                 // T~_pd(r): the whole remaining prefill, or one decode (Eq. 5/6)
  double remain = 0.0;               // deadline of its next token - now
  double density = 0.0;              // w_r(next) / exec
  bool urgent = false;
};

// Alg. 1 lines 1-13: metrics, budget, urgency and the order (returned sorted).
std::vector<SlideCandidate> slide_order(const InstanceView& v, Time now, const SlideParams& p, double* t_budget);

// Largest prefill chunk of s whose estimated time fits `time_left` (GETMAXCHUNK), 0 if none.
Tokens max_chunk(const LatencyModel& m, const RequestState& s, double time_left);

class SlideBatchingScheduler : public BatchScheduler {
 public:
  explicit SlideBatchingScheduler(SlideParams p) : p_(std::move(p)) { p_.validate(); }
  std::string name() const override { return "slide_batching"; }
  ParamMap params() const override;
  BatchPlan schedule(const InstanceView& v, Time now) override;
  void on_finished(Id request, Time now) override;
  // Urgent / normal counts of the last call (Fig. 17 timelines).
  size_t last_urgent() const { return urgent_; }
  size_t last_normal() const { return normal_; }

 private:
  BatchPlan schedule_full(const InstanceView& v, Time now);  // every request's metrics, each call
  // The kept queue (schedule()): an engine's waiting requests' metrics (lines 2-5; fixed
  // while a request waits and the model holds), followed across calls.
  struct Kept {
    double exec = 0.0, deadline = 0.0, density = 0.0;  // of its next token
    int64_t seq = 0;  // queue position order: the front's inserts count down, appends up
    bool running = false;
  };
  struct DensityKey {  // line 13 among URGENT waiting requests: density down, then position
    double density;
    int64_t seq;
    Id id;
    double deadline;
    bool operator<(const DensityKey& o) const { return density != o.density ? density > o.density : seq < o.seq; }
  };
  struct DeadlineKey {  // among NORMAL ones: deadline (remaining time) up, then position
    double deadline;
    int64_t seq;
    Id id;
    double density;
    bool operator<(const DeadlineKey& o) const { return deadline != o.deadline ? deadline < o.deadline : seq < o.seq; }
  };
  bool sync(const InstanceView& v);
  void rebuild(const InstanceView& v);
  bool wait_metrics(const InstanceView& v, const RequestState& s, Kept& k) const;
  void add_waiting(Id id, Kept& k);
  void remove_waiting(Id id, const Kept& k);
  bool plan_kept(const InstanceView& v, Time now, BatchPlan& plan);

  SlideParams p_;
  size_t urgent_ = 0, normal_ = 0;
  std::vector<SlideCandidate> q_, running_, decodes_;  // schedule() scratch
  IdSlab<Kept> kept_;
  std::set<DensityKey> by_density_;
  std::set<DeadlineKey> by_deadline_;
  QueuePositions positions_;
  std::vector<double> exec_at_;  // by positions_.slot(seq): a waiting request's exec, 0.0 where none
  size_t waiting_known_ = 0;
  LatencyCoeffs model_coeffs_{};
  double model_correction_ = 0.0;
  std::vector<Id> last_running_, preempted_;
  bool synced_ = false, never_kept_ = false;
  EngineCalls calls_;
};

}  // namespace slocore::proserve
