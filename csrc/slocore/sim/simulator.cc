#include "slocore/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>
#include <unordered_map>

#include "slocore/core/errors.h"
#include "slocore/sim/belief_noise.h"

namespace slocore::sim {

void SimConfig::validate() const {
  profile.validate();
  for (const auto* list : {&instance_profiles, &prefill_profiles, &decode_profiles, &scale_profiles})
    for (const HardwareProfile& p : *list) p.validate();
  require(instance_profiles.empty() || int(instance_profiles.size()) == instances, "instance_profiles",
          "needs one profile per instance (" + std::to_string(instances) + ")");
  require(prefill_profiles.empty() || int(prefill_profiles.size()) == prefill_instances, "prefill_profiles",
          "needs one profile per prefill instance (" + std::to_string(prefill_instances) + ")");
  require(decode_profiles.empty() || int(decode_profiles.size()) == decode_instances, "decode_profiles",
          "needs one profile per decode instance (" + std::to_string(decode_instances) + ")");
  if (belief) belief->validate();
  require_positive(belief_scale, "belief_scale");
  require_nonneg(noise_sigma, "noise_sigma");
  require(noise_sigma <= 2.0, "noise_sigma", "must be <= 2");
  if (disaggregated) {
    require(prefill_instances >= 1, "prefill_instances", "must be >= 1");
    require(decode_instances >= 1, "decode_instances", "must be >= 1");
    require(prefill_policy != nullptr, "prefill_policy", "required in P/D mode");
    require(decode_policy != nullptr, "decode_policy", "required in P/D mode");
  } else {
    require(instances >= 1, "instances", "must be >= 1");
    require(global_policy != nullptr, "global_policy", "required in colocated mode");
  }
  require(max_instances >= 0, "max_instances", "must be >= 0");
  require(min_instances >= 1, "min_instances", "must be >= 1");
  require(max_batch_tokens >= 1, "max_batch_tokens", "must be >= 1");
  require(max_num_seqs >= 1, "max_num_seqs", "must be >= 1");
  require(bool(batch_scheduler), "batch_scheduler", "required");
  require_nonneg(cold_start_s, "cold_start_s");
  require_nonneg(role_switch_s, "role_switch_s");
  require_positive(timeline_interval_s, "timeline_interval_s");
  require_positive(stall_timeout_s, "stall_timeout_s");
  require(correction_window >= 0, "correction_window", "must be >= 0");
  if (processor_sharing) {
    require(profile.tps.has_value(), "profile.tps", "processor_sharing needs TPS(N)");
    for (const HardwareProfile& p : decode_profiles)
      require(p.tps.has_value(), "decode_profiles.tps", "processor_sharing needs TPS(N) (profile " + p.name + ")");
  }
}

namespace {

enum class Kind { IterationDone, TransferDone, InstanceReady, Wakeup, ScalerTick, Sample };

struct Event {
  Time t;
  uint64_t seq;
  Kind kind;
  Id a = 0, b = 0;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

int pool_of(Role r) { return int(r); }

class Simulation {
 public:
  Simulation(const std::vector<Request>& reqs, const SimConfig& cfg) : reqs_(reqs), cfg_(cfg) {}

  SimResult run();

 private:
  // --- cluster ---
  Engine& add_engine(Role role, Time now, bool ready, const HardwareProfile& prof);
  const HardwareProfile& initial_profile(Role role, int i) const;
  const HardwareProfile& scale_out_profile(Role role, const std::string& name) const;
  bool fits_somewhere(const Request& r) const;
  void make_ready(Engine& e, Time now);
  void remove_from_pool(Engine& e, Time now);
  void rebind(int pool);
  std::vector<ScaleDecision> decide_scale(Time now);  // the scaler's decisions on every view
  GlobalPolicy* policy_for(Role role) const;
  SchedulerFactory factory_for(Role role) const;
  int64_t live_instances() const;
  // --- flow ---
  void on_arrival(const Request& r, Time now);
  void poll(GlobalPolicy* p, Role role, Time now);
  void place(const Assignment& a, Role role, Time now);
  void kick(Engine& e, Time now);
  void on_iteration_done(Engine& e, Time now);
  // An iteration's token and finished request, told to the recorder, the policies and the
  // scaler (on_iteration_done's, and the replay's of a step computed ahead).
  void emit_token(Engine& e, const IterationOutcome::Token& tok, Time now);
  void emit_finished(Engine& e, Id request, Time now);
  // --- engines run ahead ---
  bool can_run_ahead() const;
  void replay_iteration(Engine& e, Time now);
  struct Ahead;
  void run_ahead(Engine& e, Ahead& a, Time now);
  bool record_pd_token(Id request, Tokens generated, Id instance, Role role, Time now);
  void handoff(RequestState s, Id from, Time now);
  void start_transfer(RequestState s, Id decode_instance, Time now);
  void apply(const ScaleDecision& d, Time now);
  void maybe_retire(Engine& e, Time now);
  void sample(Time now);
  static bool periodic(Kind k) { return k == Kind::Sample || k == Kind::ScalerTick; }
  void push(Time t, Kind k, Id a = 0, Id b = 0) {
    events_.push(Event{t, seq_++, k, a, b});
    real_events_ += !periodic(k);
  }
  // Periodic events re-arm while something can still move: arrivals to come, real events
  // queued, or (for a scaler that may rescue a stuck queue) a bounded stall window.
  bool work_left(Time now) const {
    if (in_system_ == 0 && next_arrival_ >= reqs_.size()) return false;
    return next_arrival_ < reqs_.size() || real_events_ > 0 || now - last_work_ < cfg_.stall_timeout_s;
  }

  const std::vector<Request>& reqs_;
  const SimConfig& cfg_;
  std::unordered_map<Id, std::shared_ptr<ApproxPrefixIndex>> sent_;  // what the router sent where
  SimResult res_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t real_events_ = 0;  // queued events other than Sample/ScalerTick
  size_t next_arrival_ = 0;
  int64_t in_system_ = 0;  // arrived and neither finished nor rejected
  Id next_instance_ = 0;
  std::map<Id, std::unique_ptr<Engine>> engines_;         // every engine ever made, by id
  std::map<Id, InstanceView> staged_;                     // views of starting / switching engines
  std::vector<InstanceView> pools_[3];                    // what policies see, per role
  std::vector<InstanceView> scaler_views_;                // decide_scale(): every pool's, moved here and back
  std::unordered_map<Id, Request> pending_;               // submitted to a policy, not yet placed
  std::unordered_map<Id, RequestState> awaiting_decode_;  // prefill done, no decode target yet
  std::unordered_map<Id, Id> early_target_;               // request -> decode instance (early assignment)
  // pd_first_token_at_decode: handed-off requests whose token 1 the recorder has not dated yet.
  std::unordered_map<Id, Id> undated_first_;  // request -> the prefill instance that made it
  std::unordered_map<Id, Id> prefill_of_;     // request -> prefill instance
  Time wakeup_at_[3] = {kNever, kNever, kNever};
  int max_instances_ = 0;
  Time last_work_ = 0.0;  // the last event that moved a request (cost stops there)
  // Engines run ahead (run()): once every request is placed on a colocated engine and nothing
  // but its own engine can change it (no arrival to come, nothing pending in the policy, no
  // scaler, built-in schedulers), each engine computes its next iterations in a row, up to
  // kAheadSteps of them, where the event loop took one step of each engine in turn: an engine's
  // requests, queues and scheduler state stay in cache across its steps. The event loop then
  // replays each step at its time, as it would have made it: the same events in the same
  // order (the same sequence numbers), the same recorder and policy calls, the same timeline.
  struct Step {
    Time end;             // the iteration's end (its IterationDone)
    double next;          // the next iteration's duration, < 0: the engine went idle
    size_t tokens_end;    // its tokens: Ahead::tokens[previous step's tokens_end, tokens_end)
    size_t finished_end;  // its finished requests, likewise
    int64_t waiting, running;
  };
  struct Ahead {
    std::vector<Step> steps;  // computed, steps[replayed..] not replayed yet
    size_t replayed = 0;
    std::vector<IterationOutcome::Token> tokens;
    std::vector<Id> finished;
    int64_t waiting = 0, running = 0;  // the view as the event loop stands (after the last replayed step)
    bool ahead = false;                // the engine's view is ahead of the event loop
  };
  static constexpr size_t kAheadSteps = 4096, kAheadTokens = 1 << 15;
  bool running_ahead_ = false;
  std::unordered_map<Id, Ahead> ahead_;
  // The last event other than a policy's wake-up that placed nothing: a pull policy that keeps
  // asking to be polled and never places (a request no engine can take) stops being woken
  // after stall_timeout_s, so the run ends with that request stalled instead of never.
  Time last_progress_ = 0.0;
};

GlobalPolicy* Simulation::policy_for(Role role) const {
  if (role == Role::Colocated) return cfg_.global_policy.get();
  return role == Role::Prefill ? cfg_.prefill_policy.get() : cfg_.decode_policy.get();
}

const HardwareProfile& Simulation::initial_profile(Role role, int i) const {
  const auto& list = role == Role::Colocated ? cfg_.instance_profiles
                     : role == Role::Prefill ? cfg_.prefill_profiles
                                             : cfg_.decode_profiles;
  return list.empty() ? cfg_.profile : list[size_t(i)];
}

const HardwareProfile& Simulation::scale_out_profile(Role role, const std::string& name) const {
  if (name.empty()) return initial_profile(role, 0);  // the pool's default: its first profile
  for (const auto* list :
       {&cfg_.instance_profiles, &cfg_.prefill_profiles, &cfg_.decode_profiles, &cfg_.scale_profiles})
    for (const HardwareProfile& p : *list)
      if (p.name == name) return p;
  require(cfg_.profile.name == name, "decision.profile", "scale-out names unknown profile '" + name + "'");
  return cfg_.profile;
}

bool Simulation::fits_somewhere(const Request& r) const {
  // Some instance of the arrival pool could hold the whole request's KV.
  const Role role = cfg_.disaggregated ? Role::Prefill : Role::Colocated;
  const int n = cfg_.disaggregated ? cfg_.prefill_instances : cfg_.instances;
  for (int i = 0; i < n; ++i) {
    const HardwareProfile& p = initial_profile(role, i);
    const Tokens need = (r.prompt_len + r.output_len.value_or(1) + p.block_size - 1) / p.block_size;
    if (need <= p.kv_blocks) return true;
  }
  return false;
}

SchedulerFactory Simulation::factory_for(Role role) const {
  return role == Role::Decode && cfg_.decode_batch_scheduler ? cfg_.decode_batch_scheduler : cfg_.batch_scheduler;
}

int64_t Simulation::live_instances() const {
  int64_t n = 0;
  for (const auto& kv : engines_) n += kv.second->state != EngineState::Stopped;
  return n;
}

// The scaler reads every pool's views as one list (scale/scaler.h). They are moved into it and
// back, the same objects at the same addresses before and after (engines and schedulers keep
// pointers to them); a copy was a deep copy of every queued request at every tick, ~15% of a
// P/D burst's run.
std::vector<ScaleDecision> Simulation::decide_scale(Time now) {
  std::vector<InstanceView>& views = scaler_views_;
  views.clear();
  for (auto& pool : pools_)
    for (InstanceView& v : pool) views.push_back(std::move(v));
  struct Back {
    std::vector<InstanceView>& views;
    std::vector<InstanceView>* pools;
    ~Back() {
      size_t k = 0;
      for (int p = 0; p < 3; ++p)
        for (InstanceView& v : pools[p]) v = std::move(views[k++]);
      views.clear();
    }
  } back{views, pools_};
  return cfg_.scaler->decide(now, views);
}

void Simulation::rebind(int pool) {
  for (InstanceView& v : pools_[pool]) engines_.at(v.id)->rebind(&v);
}

Engine& Simulation::add_engine(Role role, Time now, bool ready, const HardwareProfile& prof) {
  InstanceView v;
  v.id = next_instance_++;
  v.role = role;
  v.accepting = false;
  v.kv_blocks_total = v.kv_blocks_free = prof.kv_blocks;
  v.block_size = prof.block_size;
  v.max_batch_tokens = cfg_.max_batch_tokens;
  v.max_num_seqs = cfg_.max_num_seqs;
  v.first_token_at_decode = cfg_.pd_first_token_at_decode && cfg_.disaggregated;
  LatencyCoeffs belief = prof.coeffs;  // each instance's own profile, unless one belief is forced
  if (cfg_.belief) {
    belief = *cfg_.belief;
  } else {
    for (double* c : {&belief.t_c, &belief.a_p, &belief.b_p, &belief.c_p, &belief.a_d, &belief.b_d})
      *c *= cfg_.belief_scale;
  }
  v.model = LatencyModel(perturbed_belief(belief, cfg_.belief_noise, cfg_.seed, v.id));
  v.busy_until = now;
  auto sent = std::make_shared<ApproxPrefixIndex>(prof.kv_blocks);
  v.prefix_index = sent;
  const Id id = v.id;
  sent_.emplace(id, std::move(sent));
  auto sched = factory_for(role)();
  require(sched != nullptr, "batch_scheduler", "factory returned None");
  auto it = staged_.emplace(id, std::move(v)).first;
  auto e = std::make_unique<Engine>(&it->second, prof, std::move(sched), cfg_.processor_sharing && role == Role::Decode,
                                    cfg_.noise_sigma, cfg_.seed * 1000003ULL + uint64_t(id), cfg_.correction_window,
                                    cfg_.prefix_caching);
  if (cfg_.online_fit) e->enable_online_fit();
  e->started_at = now;
  Engine& ref = *e;
  engines_.emplace(id, std::move(e));
  if (ready)
    make_ready(ref, now);
  else
    push(now + (prof.cold_start_s >= 0 ? prof.cold_start_s : cfg_.cold_start_s), Kind::InstanceReady, id);
  res_.stats.max_instances = std::max<int>(res_.stats.max_instances, int(live_instances()));
  return ref;
}

void Simulation::make_ready(Engine& e, Time now) {
  auto node = staged_.extract(e.id());
  InstanceView& v = node.mapped();
  if (e.switching) {
    v.role = e.next_role;
    e.switching = false;
  }
  v.accepting = true;
  v.busy_until = now;
  const int pool = pool_of(v.role);
  pools_[pool].push_back(std::move(v));
  rebind(pool);
  e.state = EngineState::Active;
  if (GlobalPolicy* p = policy_for(e.view().role)) p->on_instance_added(e.id(), e.view().role, now);
}

void Simulation::remove_from_pool(Engine& e, Time now) {
  const Role role = e.view().role;
  const int pool = pool_of(role);
  auto& vec = pools_[pool];
  auto it = std::find_if(vec.begin(), vec.end(), [&](const InstanceView& v) { return v.id == e.id(); });
  auto st = staged_.emplace(e.id(), std::move(*it)).first;
  vec.erase(it);
  rebind(pool);
  e.rebind(&st->second);
  if (GlobalPolicy* p = policy_for(role)) p->on_instance_removed(e.id(), now);
}

void Simulation::maybe_retire(Engine& e, Time now) {
  if (e.state != EngineState::Draining || e.busy() || e.has_work()) return;
  remove_from_pool(e, now);
  if (e.switching) {  // role switch: the engine stays up and rejoins the other pool
    e.state = EngineState::Starting;
    ++res_.stats.role_switches;
    push(now + cfg_.role_switch_s, Kind::InstanceReady, e.id());
  } else {
    e.state = EngineState::Stopped;
    e.stopped_at = now;
    ++res_.stats.scale_ins;
  }
  sample(now);
}

void Simulation::on_arrival(const Request& r, Time now) {
  res_.recorder.add(r);
  ++in_system_;
  if (cfg_.scaler) cfg_.scaler->on_arrival(r, now);
  if (!fits_somewhere(r)) {  // could never fit on any instance: refuse, don't stall
    res_.recorder.reject(r.id, now, "request needs more KV blocks than an instance has");
    ++res_.stats.rejected_capacity;
    --in_system_;
    return;
  }
  const Role role = cfg_.disaggregated ? Role::Prefill : Role::Colocated;
  pending_.emplace(r.id, r);
  policy_for(role)->submit(r, now, std::nan(""));
}

void Simulation::place(const Assignment& a, Role role, Time now) {
  auto& vec = pools_[pool_of(role)];
  auto it = std::find_if(vec.begin(), vec.end(), [&](const InstanceView& v) { return v.id == a.instance; });
  if (it == vec.end() || !it->accepting)
    fail("assignment.instance", policy_for(role)->name() + " placed request " + std::to_string(a.request) +
                                    " on instance " + std::to_string(a.instance) + ", which does not accept requests");
  Engine& e = *engines_.at(a.instance);
  if (role == Role::Decode) {
    auto w = awaiting_decode_.find(a.request);
    if (w != awaiting_decode_.end()) {  // handoff already happened: move the KV now
      RequestState s = std::move(w->second);
      awaiting_decode_.erase(w);
      start_transfer(std::move(s), a.instance, now);
    } else {
      if (!early_target_.emplace(a.request, a.instance).second)
        fail("assignment.request", "decode policy placed request " + std::to_string(a.request) + " twice");
    }
    return;
  }
  auto p = pending_.find(a.request);
  if (p == pending_.end())
    fail("assignment.request",
         policy_for(role)->name() + " placed unknown or already placed request " + std::to_string(a.request));
  RequestState s;
  s.request = std::move(p->second);
  pending_.erase(p);
  if (!s.request.prefix.empty())  // the router's approximate index: full prompt blocks sent here
    sent_.at(a.instance)->record(prefix_block_hashes(s.request, e.view().block_size, s.request.prompt_len));
  if (role == Role::Prefill) {
    prefill_of_[s.request.id] = a.instance;
    GlobalPolicy* d = cfg_.decode_policy.get();
    if (d->early_assignment()) {  // SIBYL: pick the decode instance at prefill start
      d->submit(s.request, now, expected_handoff(e.view(), s.request, now, e.queued_prefill_cost()));
      poll(d, Role::Decode, now);
    }
  }
  e.enqueue(std::move(s));
  kick(e, now);
}

void Simulation::poll(GlobalPolicy* p, Role role, Time now) {
  const int pool = pool_of(role);
  if (p->pending() == 0) return;
  ++res_.stats.polls;
  const std::vector<Assignment> out = p->poll(now, pools_[pool]);
  if (!out.empty()) last_progress_ = now;
  for (const Assignment& a : out) place(a, role, now);
  const Time w = p->pending() > 0 ? p->next_wakeup() : kNever;
  if (w < kNever && now - last_progress_ < cfg_.stall_timeout_s && (w < wakeup_at_[pool] || wakeup_at_[pool] <= now)) {
    wakeup_at_[pool] = std::max(w, now + 1e-6);
    push(wakeup_at_[pool], Kind::Wakeup, pool);
  }
}

void Simulation::kick(Engine& e, Time now) {
  const double t = e.start(now);
  if (t >= 0) push(now + t, Kind::IterationDone, e.id());
}

void Simulation::start_transfer(RequestState s, Id decode_instance, Time now) {
  const Id id = s.request.id;
  const double t =
      kv_transfer_time(engines_.at(prefill_of_.at(id))->profile(), engines_.at(decode_instance)->profile(), s.computed);
  awaiting_decode_.emplace(id, std::move(s));
  push(now + t, Kind::TransferDone, id, decode_instance);
}

void Simulation::handoff(RequestState s, Id from, Time now) {
  const Id id = s.request.id;
  cfg_.prefill_policy->on_prefill_done(id, from, now);  // event contract: done, then it leaves
  cfg_.prefill_policy->on_finished(id, from, now);
  GlobalPolicy* d = cfg_.decode_policy.get();
  auto t = early_target_.find(id);
  if (t != early_target_.end()) {
    const Id target = t->second;
    early_target_.erase(t);
    d->on_prefill_done(id, from, now);
    start_transfer(std::move(s), target, now);
    return;
  }
  const bool early = d->early_assignment();
  awaiting_decode_.emplace(id, std::move(s));
  if (!early) d->submit(awaiting_decode_.at(id).request, now, std::nan(""));
  d->on_prefill_done(id, from, now);
  poll(d, Role::Decode, now);
}

// pd_first_token_at_decode: a handed-off request's token 1 is dated with its token 2, at the
// decode instance's first step; false when the recorder must not date this token now.
bool Simulation::record_pd_token(Id request, Tokens generated, Id instance, Role role, Time now) {
  if (generated == 1 && role == Role::Prefill) {
    if (res_.recorder.get(request).request.output_len.value_or(1) == 1) return true;  // done at prefill
    undated_first_.emplace(request, instance);
    return false;
  }
  if (generated == 2)
    if (auto u = undated_first_.find(request); u != undated_first_.end()) {
      res_.recorder.token(request, now, u->second);
      undated_first_.erase(u);
    }
  return true;
}

void Simulation::emit_token(Engine& e, const IterationOutcome::Token& tok, Time now) {
  const Role role = e.view().role;
  if (!(cfg_.pd_first_token_at_decode && cfg_.disaggregated) ||
      record_pd_token(tok.request, tok.generated, e.id(), role, now))
    res_.recorder.token(tok.request, now, e.id());
  if (tok.generated == 1 && cfg_.scaler) cfg_.scaler->on_first_token(tok.request, now);
  policy_for(role)->on_token(tok.request, e.id(), tok.generated, now);
}

void Simulation::emit_finished(Engine& e, Id request, Time now) {
  const Role role = e.view().role;
  res_.recorder.finish(request, now);
  --in_system_;
  if (cfg_.disaggregated && role == Role::Prefill) {  // one-token output: done at prefill
    cfg_.prefill_policy->on_prefill_done(request, e.id(), now);
    auto t = early_target_.find(request);
    if (t != early_target_.end()) {  // release the decode reservation it will not use
      cfg_.decode_policy->on_finished(request, t->second, now);
      early_target_.erase(t);
    } else if (cfg_.decode_policy->early_assignment()) {  // early-submitted, not placed yet
      cfg_.decode_policy->on_cancelled(request, now);
    }
  }
  policy_for(role)->on_finished(request, e.id(), now);
  if (cfg_.scaler) cfg_.scaler->on_finished(request, now);
}

void Simulation::on_iteration_done(Engine& e, Time now) {
  IterationOutcome& out = e.finish(now);
  for (const auto& tok : out.tokens) emit_token(e, tok, now);
  for (const RequestState& s : out.finished) emit_finished(e, s.request.id, now);
  for (RequestState& s : out.handed_off) handoff(std::move(s), e.id(), now);
  res_.stats.iterations += 1;
  kick(e, now);
  maybe_retire(e, now);
}

bool Simulation::can_run_ahead() const {
  if (cfg_.disaggregated || cfg_.scaler || next_arrival_ < reqs_.size() || cfg_.global_policy->pending() > 0 ||
      !staged_.empty())
    return false;
  for (const auto& kv : engines_)
    if (kv.second->state != EngineState::Active || !kv.second->scheduler().engine_local()) return false;
  return true;
}

// What on_iteration_done and the poll after it do, from the step computed ahead: no handoff
// (colocated), and the policy has nothing pending, so the poll returns at once.
void Simulation::replay_iteration(Engine& e, Time now) {
  Ahead& a = ahead_[e.id()];
  if (a.replayed == a.steps.size()) run_ahead(e, a, now);
  const Step& st = a.steps[a.replayed];
  require(st.end == now, "simulator", "a step computed ahead is replayed at another time");
  const size_t t0 = a.replayed > 0 ? a.steps[a.replayed - 1].tokens_end : 0;
  const size_t f0 = a.replayed > 0 ? a.steps[a.replayed - 1].finished_end : 0;
  ++a.replayed;
  for (size_t i = t0; i < st.tokens_end; ++i) emit_token(e, a.tokens[i], now);
  for (size_t i = f0; i < st.finished_end; ++i) emit_finished(e, a.finished[i], now);
  res_.stats.iterations += 1;
  a.waiting = st.waiting, a.running = st.running;
  if (st.next >= 0) push(now + st.next, Kind::IterationDone, e.id());  // kick()'s
}

// The engine's iterations from the one that ends at `now`, each finished and the next started
// as on_iteration_done does, until it goes idle, the next would end after max_time (the event
// loop stops before it), or kAheadSteps of them (kAheadTokens tokens), whichever comes first.
void Simulation::run_ahead(Engine& e, Ahead& a, Time now) {
  a.steps.clear(), a.tokens.clear(), a.finished.clear();
  a.replayed = 0;
  a.ahead = true;
  for (Time t = now; a.steps.size() < kAheadSteps && a.tokens.size() < kAheadTokens;) {
    IterationOutcome& out = e.finish(t);
    require(out.handed_off.empty(), "simulator", "a colocated engine handed a request off");
    for (const auto& tok : out.tokens) a.tokens.push_back(tok);
    for (const RequestState& s : out.finished) a.finished.push_back(s.request.id);
    const double d = e.start(t);
    const InstanceView& v = e.view();
    a.steps.push_back(
        Step{t, d, a.tokens.size(), a.finished.size(), int64_t(v.waiting.size()), int64_t(v.running.size())});
    ++res_.stats.steps_ahead;
    if (d < 0 || t + d > cfg_.max_time) break;
    t = t + d;
  }
}

void Simulation::apply(const ScaleDecision& d, Time now) {
  if (d.action == ScaleAction::ScaleOut) {
    const Role role = cfg_.disaggregated ? d.role : Role::Colocated;
    require(!(cfg_.disaggregated && role == Role::Colocated), "decision.role", "P/D scale-out needs prefill or decode");
    if (live_instances() >= max_instances_) return;
    add_engine(role, now, false, scale_out_profile(role, d.profile));
    ++res_.stats.scale_outs;
    sample(now);
    return;
  }
  auto it = engines_.find(d.instance);
  if (it == engines_.end() || it->second->state != EngineState::Active) return;  // stale decision
  Engine& e = *it->second;
  const Role role = e.view().role;
  int active = 0;
  for (const InstanceView& v : pools_[pool_of(role)]) active += v.accepting;
  if (active <= cfg_.min_instances) return;  // never drain a pool below its floor
  if (d.action == ScaleAction::SwitchRole) {
    if (!cfg_.disaggregated || d.role == role || d.role == Role::Colocated) return;
    e.switching = true;
    e.next_role = d.role;
  }
  e.state = EngineState::Draining;
  e.view().accepting = false;
  maybe_retire(e, now);
}

void Simulation::sample(Time now) {
  TimelinePoint p;
  p.t = now;
  p.colocated = int(pools_[0].size());
  p.prefill = int(pools_[1].size());
  p.decode = int(pools_[2].size());
  p.starting = int(staged_.size());
  for (int r = 0; r < 3; ++r) {
    if (GlobalPolicy* g = policy_for(Role(r))) p.queued += int64_t(g->pending());
    for (const InstanceView& v : pools_[r]) {
      auto a = running_ahead_ ? ahead_.find(v.id) : ahead_.end();
      const bool ahead = a != ahead_.end() && a->second.ahead;  // its view is ahead: as replayed
      p.waiting += ahead ? a->second.waiting : int64_t(v.waiting.size());
      p.running += ahead ? a->second.running : int64_t(v.running.size());
    }
  }
  res_.stats.timeline.push_back(p);
}

SimResult Simulation::run() {
  cfg_.validate();
  for (size_t i = 0; i < reqs_.size(); ++i) {
    validate(reqs_[i]);
    if (!reqs_[i].output_len)
      fail("output_len", "request " + std::to_string(reqs_[i].id) + " needs a true output length to be simulated");
    require(i == 0 || reqs_[i].arrival >= reqs_[i - 1].arrival, "arrival", "requests must be sorted by arrival");
  }
  res_.recorder.reserve(reqs_.size());
  if (cfg_.disaggregated) {
    for (int i = 0; i < cfg_.prefill_instances; ++i)
      add_engine(Role::Prefill, 0.0, true, initial_profile(Role::Prefill, i));
    for (int i = 0; i < cfg_.decode_instances; ++i)
      add_engine(Role::Decode, 0.0, true, initial_profile(Role::Decode, i));
  } else {
    for (int i = 0; i < cfg_.instances; ++i)
      add_engine(Role::Colocated, 0.0, true, initial_profile(Role::Colocated, i));
  }
  max_instances_ = cfg_.max_instances > 0 ? cfg_.max_instances : int(live_instances());
  if (cfg_.scaler) push(cfg_.scaler->interval(), Kind::ScalerTick);
  push(0.0, Kind::Sample);

  Time now = 0.0;
  bool hit_time_limit = false;
  while (true) {
    const Time ta = next_arrival_ < reqs_.size() ? reqs_[next_arrival_].arrival : kNever;
    const Time te = events_.empty() ? kNever : events_.top().t;
    const Time t = std::min(ta, te);
    if (t == kNever) break;
    if (t > cfg_.max_time) {
      hit_time_limit = true;
      break;
    }
    now = t;
    ++res_.stats.events;
    if (ta < te) {
      const Request& r = reqs_[next_arrival_++];
      last_work_ = last_progress_ = now;
      on_arrival(r, now);
      poll(policy_for(cfg_.disaggregated ? Role::Prefill : Role::Colocated),
           cfg_.disaggregated ? Role::Prefill : Role::Colocated, now);
      continue;
    }
    const Event ev = events_.top();
    events_.pop();
    real_events_ -= !periodic(ev.kind);
    if (ev.kind != Kind::Sample && ev.kind != Kind::ScalerTick) last_work_ = now;
    if (ev.kind != Kind::Sample && ev.kind != Kind::ScalerTick && ev.kind != Kind::Wakeup) last_progress_ = now;
    switch (ev.kind) {
      case Kind::IterationDone: {
        Engine& e = *engines_.at(ev.a);
        const Role role = e.view().role;
        if (running_ahead_ || (running_ahead_ = can_run_ahead())) {
          replay_iteration(e, now);
          break;  // nothing is pending in the policy: no poll to make
        }
        on_iteration_done(e, now);
        poll(policy_for(role), role, now);  // the views changed: pull policies may release
        break;
      }
      case Kind::TransferDone: {
        RequestState s = std::move(awaiting_decode_.at(ev.a));
        awaiting_decode_.erase(ev.a);
        auto it = engines_.find(ev.b);
        // The target drained meanwhile, or switched roles (a decode instance picked at prefill
        // start that is a prefill instance now): ask the decode policy again.
        if (it == engines_.end() || it->second->state == EngineState::Stopped || !it->second->view().accepting ||
            it->second->view().role != Role::Decode) {
          cfg_.decode_policy->on_finished(ev.a, ev.b, now);  // event contract: a retry
          awaiting_decode_.emplace(ev.a, std::move(s));
          cfg_.decode_policy->submit(awaiting_decode_.at(ev.a).request, now, std::nan(""));
          poll(cfg_.decode_policy.get(), Role::Decode, now);
          break;
        }
        prefill_of_.erase(ev.a);
        it->second->enqueue(std::move(s));
        kick(*it->second, now);
        break;
      }
      case Kind::InstanceReady: {
        Engine& e = *engines_.at(ev.a);
        make_ready(e, now);
        sample(now);
        const Role role = e.view().role;
        poll(policy_for(role), role, now);
        break;
      }
      case Kind::Wakeup: {
        wakeup_at_[ev.a] = kNever;
        poll(policy_for(Role(ev.a)), Role(ev.a), now);
        break;
      }
      case Kind::ScalerTick: {
        for (const ScaleDecision& d : decide_scale(now)) apply(d, now);
        if (work_left(now)) push(now + cfg_.scaler->interval(), Kind::ScalerTick);
        break;
      }
      case Kind::Sample: {
        sample(now);
        if (work_left(now)) push(now + cfg_.timeline_interval_s, Kind::Sample);
        break;
      }
    }
  }
  for (; next_arrival_ < reqs_.size(); ++next_arrival_) {  // cut off by max_time before arriving
    res_.recorder.add(reqs_[next_arrival_]);
    res_.recorder.reject(reqs_[next_arrival_].id, now, "simulation time limit");
  }
  // Whatever is still in the system stalled (a policy that never placed it) or ran out of
  // time: report it rejected with the reason, never drop it silently.
  for (const RequestRecord& rec : res_.recorder.records()) {
    if (rec.outcome != Outcome::Pending) continue;
    const bool timed_out = hit_time_limit;
    res_.recorder.reject(rec.request.id, now, timed_out ? "simulation time limit" : "stalled: never completed");
    if (!timed_out) ++res_.stats.stalled;
  }
  for (auto& kv : engines_) {
    Engine& e = *kv.second;
    const Time end = e.state == EngineState::Stopped ? e.stopped_at : std::max(last_work_, e.started_at);
    res_.recorder.add_instance_time(std::max(0.0, end - e.started_at));
    res_.stats.preemptions += e.preemptions();
    res_.stats.plan_violations += int64_t(e.violations());
    res_.stats.prefix_hit_tokens += e.prefix_hit_tokens();
    res_.stats.prefix_query_tokens += e.prefix_query_tokens();
  }
  res_.stats.end_time = last_work_;
  return std::move(res_);
}

}  // namespace

SimResult simulate(const std::vector<Request>& requests, const SimConfig& cfg) {
  return Simulation(requests, cfg).run();
}

}  // namespace slocore::sim
