#include "slocore/sim/engine.h"

#include <algorithm>
#include <cmath>

#include "slocore/batch/plan_builder.h"
#include "slocore/core/errors.h"

namespace slocore::sim {

Engine::Engine(InstanceView* view, const HardwareProfile& truth, std::shared_ptr<BatchScheduler> sched,
               bool processor_sharing, double noise_sigma, uint64_t seed, int correction_window, bool prefix_caching)
    : v_(view),
      truth_(truth),
      truth_model_(truth.coeffs),
      sched_(std::move(sched)),
      processor_sharing_(processor_sharing),
      noise_sigma_(noise_sigma),
      rng_(seed),
      correction_window_(correction_window) {
  require(sched_ != nullptr, "batch_scheduler", "must not be None");
  v_->epoch = next_view_epoch();
  v_->waiting_log.restart();
  waiting_at_.rebuild(v_->waiting);
  running_at_.rebuild(v_->running);
  if (processor_sharing_) {
    require(truth.tps.has_value(), "profile.tps", "processor_sharing needs a TPS(N) curve in the profile");
    tps_ = std::make_unique<ThroughputCurve>(truth.tps->a, truth.tps->b, truth.tps->c);
  }
  if (prefix_caching) {
    cache_ = std::make_shared<PrefixCache>();
    v_->prefix_cache = cache_;
    arrival_counts_.assign(kArrivalMask + 1, 0);
    arrival_bits_.assign((kArrivalMask + 1) / 64, 0);
  }
}

Engine::Hold* Engine::hold_of(const RequestState& s) {
  if (!cache_ || s.request.prefix.empty()) return nullptr;
  if (Hold* h = find_hold(s.request.id)) return h;
  Hold& h = *holds_.emplace(s.request.id, Hold{});
  h.chain = prefix_block_hashes(s.request, v_->block_size, s.request.prompt_len + s.request.output_len.value_or(0));
  held_blocks_ += int64_t(h.chain.size());
  return &h;
}

Engine::Hold& Engine::hold(Id request) {
  Hold* h = find_hold(request);
  require(h != nullptr, "engine", "a request the KV accounting names has no hold");
  return *h;
}

void Engine::drop_hold(Id request) {
  refresh_.erase(uint64_t(request));  // refresh_list_ keeps it: refresh_hits skips it
  const Hold* h = find_hold(request);
  if (!h) return;
  held_blocks_ -= int64_t(h->chain.size());
  holds_.erase(request);
}

void Engine::count_arrivals(uint64_t block, int64_t n) {
  const size_t k = size_t(block & kArrivalMask);
  arrival_counts_[k] = uint32_t(int64_t(arrival_counts_[k]) + n);
  const uint64_t bit = uint64_t(1) << (k & 63);
  if (arrival_counts_[k] != 0)
    arrival_bits_[k >> 6] |= bit;
  else
    arrival_bits_[k >> 6] &= ~bit;
}

Engine::Block& Engine::cached(uint64_t block) {
  Block* b = cache_->find(block);
  require(b != nullptr, "engine", "a block the KV accounting holds is not cached");
  return *b;
}

void Engine::on_evicted(Block& block) {
  for (const auto& [id, pos] : block.watchers) {
    Hold* h = find_hold(id);
    if (h && h->memo > pos) {
      h->memo = h->watched = pos, h->stale = true;
      to_refresh(id, *h);
    }
  }
  watcher_entries_ -= int64_t(block.watchers.size());
  block.watchers.clear();
}

void Engine::on_cached(uint64_t block) {
  const size_t k = size_t(block & kArrivalMask);
  if (!(arrival_bits_[k >> 6] >> (k & 63) & 1)) return;  // most new blocks: nobody waits for them
  auto a = arrivals_.find(block);
  if (a == arrivals_.end()) return;
  for (Id id : a->second)
    if (Hold* h = find_hold(id)) h->stale = true, h->awaits = -1, to_refresh(id, *h);
  watcher_entries_ -= int64_t(a->second.size());
  count_arrivals(block, -int64_t(a->second.size()));
  arrivals_.erase(a);
}

void Engine::on_in_use(const Block& block) {
  for (const auto& [id, pos] : block.watchers)
    if (Hold* h = find_hold(id); h && h->in_use == pos) to_refresh(id, *h);
}

void Engine::on_unused(const Block& block) {
  for (const auto& [id, pos] : block.watchers)
    if (Hold* h = find_hold(id); h && h->in_use > pos) h->in_use = pos, to_refresh(id, *h);
}

// The cache counts a block's references; the XOR of its holders' ids names the one holder
// left whenever that count is 1.
void Engine::hold_block(Id who, Block& block) {  // after who's acquire or insert
  const Id before = block.holders;
  block.holders ^= who;
  if (block.refs() == 2) ++hold(before).shared_run;  // its one holder shares it from now on
  if (block.refs() >= 2) ++hold(who).shared_run;
}

void Engine::drop_block(Id who, Block& block) {  // before who's release
  block.holders ^= who;
  if (block.refs() == 2) --hold(block.holders).shared_run;  // the one holder left holds it alone
}

int64_t Engine::shared_blocks(const RequestState& s) {
  if (s.computed != s.cached || s.cached == 0) return 0;
  const Hold* h = hold_of(s);
  return h ? std::min(h->in_use, s.cached / v_->block_size) : 0;
}

void Engine::rebuild_watchers() {
  cache_->clear_watchers();
  arrivals_.clear();
  std::fill(arrival_counts_.begin(), arrival_counts_.end(), 0);
  std::fill(arrival_bits_.begin(), arrival_bits_.end(), 0);
  watcher_entries_ = 0;
  holds_.for_each([&](Id id, Hold& h) {
    for (int64_t j = 0; j < h.memo; ++j) cached(h.chain[size_t(j)]).watchers.emplace_back(id, j);
    h.watched = h.memo;
    watcher_entries_ += h.memo;
    h.awaits = -1;
    h.stale = true;  // re-registers its next block at its next refresh
    to_refresh(id, h);
  });
}

void Engine::refresh_hits() {
  // vLLM looks a waiting request up when it schedules it; here every waiting request whose
  // computed tokens came from the cache only (fresh or preempted) shows its hit now, so the
  // batch scheduler plans just the uncached tokens. Full blocks, at most num_tokens - 1.
  // refresh_ names waiting requests only, found by their positions, taken in queue order.
  positions_.clear();
  for (Id id : refresh_list_)
    if (refresh_.erase(uint64_t(id)))
      if (const size_t i = waiting_at_.find(v_->waiting, id); i != WaitingPositions::npos) positions_.push_back(i);
  refresh_list_.clear();
  std::sort(positions_.begin(), positions_.end());
  for (size_t i : positions_) {
    RequestState& s = v_->waiting[i];
    if (s.computed != s.cached) continue;  // e.g. a P/D handoff arriving with its KV
    Hold* h = hold_of(s);
    if (!h) continue;
    const int64_t cap = std::min<int64_t>((s.num_tokens() - 1) / v_->block_size, int64_t(h->chain.size()));
    if (h->stale) {  // [0, memo) is still cached: only growth to check
      h->memo = cache_->match_from(h->chain, h->memo);
      h->stale = false;
      for (; h->watched < h->memo; ++h->watched, ++watcher_entries_)
        cached(h->chain[size_t(h->watched)]).watchers.emplace_back(s.request.id, h->watched);
      if (h->memo < int64_t(h->chain.size()) && h->awaits != h->memo) {
        arrivals_[h->chain[size_t(h->memo)]].push_back(s.request.id);
        count_arrivals(h->chain[size_t(h->memo)], 1);
        h->awaits = h->memo;
        ++watcher_entries_;
      }
    }
    const int64_t hit = std::min(h->memo, cap);
    if (s.computed != hit * v_->block_size) v_->waiting_log.restart();  // changed in place
    s.cached = s.computed = hit * v_->block_size;
    h->in_use = std::min(h->in_use, hit);
    while (h->in_use < hit && cache_->refs(h->chain[size_t(h->in_use)]) > 0) ++h->in_use;
    s.shared = h->in_use * v_->block_size;
  }
  if (watcher_entries_ > 2 * held_blocks_ + 65536) rebuild_watchers();  // entries of requests gone
}

void Engine::take_blocks(int64_t n) {
  v_->kv_blocks_free -= n;
  if (cache_)  // cached free blocks are free KV: evict the least recently freed as space runs out
    for (Block* b; cache_->cached_free() > v_->kv_blocks_free && (b = cache_->lru());) {
      on_evicted(*b);
      cache_->evict_lru();
    }
}

void Engine::release_kv(RequestState& s) {
  Hold* h = prefixed_ ? hold_of(s) : nullptr;
  if (!h) {
    v_->kv_blocks_free += v_->blocks_for(s.computed);
    return;
  }
  h->running = false;
  v_->kv_blocks_free += v_->blocks_for(s.computed) - int64_t(h->pinned.size());  // its own blocks
  for (auto it = h->pinned.rbegin(); it != h->pinned.rend(); ++it) {             // tail first: evicted first
    Block& b = cached(*it);
    drop_block(s.request.id, b);
    if (cache_->release(b)) ++v_->kv_blocks_free, on_unused(b);
  }
  h->pinned.clear();
  h->shared_run = 0;
  h->next_block = 0;
}

void Engine::promote(RequestState& s) {
  Hold* h = hold_of(s);
  if (!h) return;
  const int64_t full = std::min<int64_t>(s.computed / v_->block_size, int64_t(h->chain.size()));
  for (int64_t j = h->next_block; j < full; ++j)
    if (Block* b = cache_->insert_block(h->chain[size_t(j)])) {
      h->pinned.push_back(h->chain[size_t(j)]);
      hold_block(s.request.id, *b);
      on_cached(h->chain[size_t(j)]);
    }
  h->next_block = std::max(h->next_block, full);
}

double Engine::truth_time(const std::vector<BatchItem>& items, size_t decodes) const {
  double t;
  if (processor_sharing_ && decodes == items.size()) {
    t = double(decodes) / tps_->total(double(decodes));  // N tokens at TPS(N) tokens/s
  } else {
    t = truth_model_.batch_time(items);
  }
  return std::max(t, 1e-6);
}

template <class F>
void Engine::remove_running(const std::vector<size_t>& gone, F&& take) {
  v_->running.take_boxes(gone, [&](Box b) {
    running_at_.removed(b->request.id);
    take(std::move(b));
  });
}

BatchPlan Engine::ask(Time now) {
  ViewChanges& c = v_->changes;
  c.since_epoch = asked_epoch_;
  if (!left_.empty()) {  // requests that left since are in no list
    auto left = [&](Id id) { return std::find(left_.begin(), left_.end(), id) != left_.end(); };
    auto drop_left = [&](std::vector<Id>& l) { l.erase(std::remove_if(l.begin(), l.end(), left), l.end()); };
    drop_left(c.admitted);  // an iteration's departures may have been admitted since, no more
    if (cancelled_) drop_left(c.preempted), drop_left(c.progressed);
  }
  BatchPlan plan = sched_->schedule(*v_, now);
  asked_epoch_ = v_->epoch;
  c.preempted.clear(), c.admitted.clear(), c.progressed.clear();
  left_.clear();
  cancelled_ = false;
  return plan;
}

bool Engine::planned(Id id) const { return planned_.contains(id); }

Tokens Engine::planned_tokens(Id id) const {
  const int64_t* k = planned_.find(id);
  return k ? Tokens(*k) : 0;
}

// Per iteration the work is O(plan x log(queue)), plus the moves of the queue between the
// first and the last waiting request admitted and of the batch after the first request that
// leaves it; never a pass over the waiting queue (a burst leaves thousands waiting on each
// engine, and EDF's plans take fresh requests from behind the preempted ones at the front),
// and a pass over the batch only when the plan names a quarter of it or more (decode-first
// schedulers name all of it; EDF in a burst ~10 of ~300).
void Engine::sanitize(BatchPlan& plan) {
  // Every distinct planned id -> its slot in where_ (where it is: running, or waiting).
  planned_.clear(plan.items.size());
  where_.clear();
  for (const ScheduledItem& it : plan.items)
    if (planned_.insert(it.request, int64_t(where_.size()))) where_.push_back({});
  // Preemptions: only running requests not scheduled in the same plan (each once).
  std::vector<Id>& preempt = preempt_;
  preempt.clear();
  gone_.clear();
  for (Id id : plan.preempt) {
    const size_t at = planned(id) ? npos : running_pos(id);
    if (at == npos)
      ++violations_;
    else if (std::find(preempt.begin(), preempt.end(), id) == preempt.end())
      preempt.push_back(id), gone_.push_back(at);
  }
  if (!preempt.empty()) {
    // The evicted ones leave `running` in running order (the rest keep their order).
    std::sort(gone_.begin(), gone_.end());
    evicted_.clear();
    remove_running(gone_, [&](Box b) { evicted_.push_back(std::move(b)); });
    for (Box& b : evicted_) {
      RequestState& s = *b;
      release_kv(s);
      s.computed = s.cached = s.shared = 0;  // recompute later (vLLM's recompute preemption)
      if (prefixed_ && !s.request.prefix.empty()) mark_refresh(s.request.id);
      ++preemptions_;
    }
    std::vector<Id>& front = v_->changes.preempted;  // the queue's front, in order
    front.insert(front.begin(), evicted_.size(), 0);
    for (size_t j = 0; j < evicted_.size(); ++j) front[j] = evicted_[j]->request.id;
    const size_t n = evicted_.size();
    for (const Box& b : evicted_) log_waiting(b->request.id, WaitingLog::Kind::Prepended);
    v_->waiting.prepend(evicted_);
    waiting_at_.prepended(v_->waiting, n);
  }
  plan.preempt.swap(preempt);  // preempt_ keeps the raw plan's storage for the next iteration

  // Where each planned id is: running, or waiting (by its position).
  auto find = [&](Id id) -> Where* {
    const int64_t* k = planned_.find(id);
    return k ? &where_[size_t(*k)] : nullptr;
  };
  // A plan that names much of the batch (decode-first schedulers name all of it) is cheaper
  // to place by one pass over the batch than by an index lookup per item.
  auto& running = v_->running;
  const bool by_pass = by_pass_ = 4 * where_.size() >= running.size();
  if (by_pass)
    for (size_t i = 0; i < running.size(); ++i)
      if (Where* w = find(running[i].request.id)) w->s = &running[i], w->at = i, w->running = true;
  for (const ScheduledItem& it : plan.items)
    if (Where* w = find(it.request); w && !w->s) {
      if (const size_t at = by_pass ? npos : running_pos(it.request); at != npos)
        w->s = &running[at], w->at = at, w->running = true;
      else if (const size_t i = waiting_at_.find(v_->waiting, it.request); i != WaitingPositions::npos)
        w->s = &v_->waiting[i], w->at = i;
    }

  // Items: known, unique, tokens in [1, to_compute], within budget, seqs and KV.
  ok_.clear();
  plan_at_.clear();
  admit_at_.clear();
  Tokens budget = v_->max_batch_tokens;
  int64_t blocks = v_->kv_blocks_free;
  for (const ScheduledItem& it : plan.items) {
    Where* w = find(it.request);
    bool good = w != nullptr && w->s != nullptr && !w->seen && int(ok_.size()) < v_->max_num_seqs && it.tokens >= 1 &&
                it.tokens <= budget;
    if (good) {
      const RequestState& s = *w->s;
      good = it.tokens <= s.to_compute();
      // A waiting request's shared blocks as they are now: this plan's preemptions may
      // have released some of them since the scheduler read s.shared.
      const int64_t need = !good        ? 0
                           : w->running ? v_->blocks_needed(s, it.tokens, true)
                                        : v_->blocks_for(s.computed + it.tokens) - shared_blocks(s);
      good = good && need <= blocks;
      if (good) blocks -= need;
    }
    if (!good) {
      ++violations_;
      continue;
    }
    w->seen = true;
    budget -= it.tokens;
    ok_.push_back(it);
    if (!w->running)
      admit_at_.push_back(w->at);
    else if (!by_pass)
      plan_at_.push_back({w->at, it.tokens});
  }
  plan.items.swap(ok_);  // ok_ keeps the raw plan's storage for the next iteration
  planned_.clear(plan.items.size());
  for (const ScheduledItem& it : plan.items) planned_.insert(it.request, it.tokens);
}

double Engine::queued_prefill_cost() {
  if (!queued_valid_ || queued_n_ > v_->waiting.size()) queued_valid_ = true, queued_n_ = 0, queued_sum_ = 0.0;
  for (; queued_n_ < v_->waiting.size(); ++queued_n_)
    queued_sum_ += v_->model.prefill_cost(v_->waiting[queued_n_].to_compute(), 0);
  return queued_sum_;
}

double Engine::start(Time now) {
  if (busy_ || !has_work() || state == EngineState::Starting || state == EngineState::Stopped) return -1.0;
  // A plan's items may not fit after its preemptions (with prefix caching, a waiting request
  // may count as in use blocks only its victim held, or a scheduler may count a victim's
  // shared blocks as freed), so that none of them fits any more. The engine then asks again
  // on the view after those preemptions, as vLLM's scheduler tries its allocation again after
  // each preemption; every retry follows at least one preemption, so the loop ends (without
  // it the engine idled with work until the next arrival, or for good).
  BatchPlan plan;
  do {
    v_->epoch = next_view_epoch();  // refresh_hits and the plan change requests in place
    if (prefixed_) {
      refresh_hits();
      for (RequestState& s : v_->running) {  // what preempting each would leave in use
        Hold* h = hold_of(s);
        if (h) h->running = true;  // admitted before the first request with prefix identity came
        s.shared = h ? h->shared_run * v_->block_size : 0;
      }
    }
    queued_valid_ = false;  // the plan may preempt or admit
    plan = ask(now);
    sanitize(plan);
  } while (plan.items.empty() && !plan.preempt.empty());
  if (plan.items.empty()) return -1.0;

  // Move scheduled waiting requests to running (in waiting order) and allocate their KV;
  // found by their positions (sanitize's), so only the queue between the first and the last
  // of them moves.
  const size_t old_running = v_->running.size();
  auto& waiting = v_->waiting;
  auto& admitted = admit_at_;
  std::sort(admitted.begin(), admitted.end());
  if (prefixed_) {  // admitted requests reference their cached blocks before anything is allocated
    for (size_t i : admitted) {
      RequestState& s = waiting[i];
      if (s.computed != s.cached) continue;
      query_tokens_ += s.num_tokens();
      hit_tokens_ += s.cached;
      Hold* h = hold_of(s);
      if (!h) continue;
      const int64_t n = s.cached / v_->block_size;
      for (int64_t j = 0; j < n; ++j) {
        h->pinned.push_back(h->chain[size_t(j)]);
        Block& b = cached(h->chain[size_t(j)]);
        if (cache_->acquire(b)) --v_->kv_blocks_free, on_in_use(b);
        hold_block(s.request.id, b);
      }
      h->next_block = n;
    }
  }
  waiting.take_boxes(admitted, [&](Box b) {
    RequestState& s = *b;
    const Tokens k = planned_tokens(s.request.id);
    Hold* h = prefixed_ ? hold_of(s) : nullptr;
    if (h) h->running = true;
    const int64_t pinned = h ? int64_t(h->pinned.size()) : 0;
    take_blocks(v_->blocks_for(s.computed + k) - pinned);  // the shared ones are pinned
    s.shared = 0;
    waiting_at_.removed(s.request.id);
    log_waiting(s.request.id, WaitingLog::Kind::Left);
    v_->changes.admitted.push_back(s.request.id);
    v_->running.push_back(std::move(b));
    running_at_.appended(v_->running);
  });
  // The plan's running requests in running order: those that ran before, then the admitted
  // (when the plan names much of the batch, every running request is checked instead).
  if (by_pass_) {
    plan_at_.clear();
    for (size_t j = 0; j < old_running; ++j)
      if (const Tokens k = planned_tokens(v_->running[j].request.id)) plan_at_.push_back({j, k});
  } else {
    std::sort(plan_at_.begin(), plan_at_.end());
  }
  for (size_t j = old_running; j < v_->running.size(); ++j)
    plan_at_.push_back({j, planned_tokens(v_->running[j].request.id)});
  std::vector<BatchItem>& items = items_;
  items.clear();
  size_t decodes = 0;
  for (const auto& [j, k] : plan_at_) {
    RequestState& s = v_->running[j];
    if (j < old_running) take_blocks(v_->blocks_needed(s, k, true));
    const bool prefill = s.in_prefill();
    decodes += !prefill;
    items.push_back(BatchItem{k, s.computed, prefill});
  }
  predicted_ = v_->model.batch_time(items);
  if (fit_) fit_x_ = OnlineFit::features(items);
  double t = truth_time(items, decodes);
  if (noise_sigma_ > 0) {
    std::normal_distribution<double> n(-0.5 * noise_sigma_ * noise_sigma_, noise_sigma_);
    t *= std::exp(n(rng_));  // log-normal with mean 1
  }
  actual_ = t;
  recycle(std::move(plan_));  // the last plan's storage, for the next one built on this thread
  plan_ = std::move(plan);
  busy_ = true;
  v_->busy_until = now + t;
  ++iterations_;
  return t;
}

IterationOutcome& Engine::finish(Time now) {
  IterationOutcome& out = out_;
  out.tokens.clear(), out.finished.clear(), out.handed_off.clear();
  queued_valid_ = false;  // the model may be corrected
  v_->epoch = next_view_epoch();
  auto& running = v_->running;
  // Only the plan's requests change (plan_at_: their running positions, in running order);
  // those that finish or hand off leave running, the others keep their order.
  gone_.clear();
  std::vector<bool>& handoff = handoff_;
  handoff.clear();
  for (const auto& [j, k] : plan_at_) {
    RequestState& s = running[j];
    s.computed += k;
    if (prefixed_) promote(s);
    if (s.computed != s.num_tokens()) {
      v_->changes.progressed.push_back(s.request.id);
      continue;
    }
    s.generated += 1;  // all known tokens computed: sample one
    if (s.generated == 1) s.first_token = now;
    s.last_token = now;
    out.tokens.push_back({s.request.id, s.generated});
    const bool done = s.generated >= s.request.output_len.value_or(1);
    if (!done && v_->role != Role::Prefill) {
      v_->changes.progressed.push_back(s.request.id);
      continue;
    }
    left_.push_back(s.request.id);
    release_kv(s);
    drop_hold(s.request.id);
    if (!done) s.cached = 0;  // prefill instance: the decode instance receives its KV by transfer
    gone_.push_back(j);
    handoff.push_back(!done);
  }
  size_t g = 0;
  remove_running(gone_, [&](Box b) { (handoff[g++] ? out.handed_off : out.finished).push_back(std::move(*b)); });
  busy_ = false;
  v_->busy_until = now;
  if (fit_ && correction_window_ > 0 && actual_ > 0) {  // online refit of the coefficients
    fit_->observe(fit_x_, actual_);
    if (iterations_ % correction_window_ == 0) v_->model.set_coeffs(fit_->solve());
  } else if (correction_window_ > 0 && predicted_ > 0) {  // ProServe 4.1 online correction
    v_->model.observe(actual_, predicted_);
    if (iterations_ % correction_window_ == 0) v_->model.update();
  }
  sched_->on_batch_done(*v_, plan_, predicted_, actual_, now);
  for (const RequestState& s : out.finished) sched_->on_finished(s.request.id, now);
  for (const RequestState& s : out.handed_off) sched_->on_finished(s.request.id, now);
  return out;
}

void Engine::enable_online_fit() {
  // The prior is the belief as it stands (its correction factor folded into the coefficients).
  const LatencyCoeffs& c = v_->model.coeffs();
  const double b = v_->model.correction();
  fit_ = std::make_unique<OnlineFit>(LatencyCoeffs{b * c.t_c, b * c.a_p, b * c.b_p, b * c.c_p, b * c.a_d, b * c.b_d});
  v_->model.set_coeffs(fit_->solve());
  v_->model.set_correction(1.0);
}

bool Engine::cancel(Id request, Time now) {
  v_->epoch = next_view_epoch();
  if (const size_t w = waiting_at_.find(v_->waiting, request); w != WaitingPositions::npos) {
    v_->waiting.erase(v_->waiting.begin() + std::ptrdiff_t(w));
    waiting_at_.removed(request);
    log_waiting(request, WaitingLog::Kind::Left);
  } else {
    const size_t at = running_pos(request);
    if (at == npos) return false;
    RequestState& r = v_->running[at];
    r.computed += busy_ ? planned_tokens(request) : 0;  // the iteration in flight allocated its blocks too
    release_kv(r);
    running_at_.removed(request);
    v_->running.erase(v_->running.begin() + std::ptrdiff_t(at));
    if (busy_) {  // the plan in flight's positions after `at` move down by one
      plan_at_.erase(std::remove_if(plan_at_.begin(), plan_at_.end(), [&](const auto& x) { return x.first == at; }),
                     plan_at_.end());
      for (auto& x : plan_at_) x.first -= x.first > at;
    }
  }
  drop_hold(request);
  left_.push_back(request);
  cancelled_ = true;
  queued_valid_ = false;
  sched_->on_finished(request, now);
  return true;
}

}  // namespace slocore::sim
