// One simulated engine (docs/design.md "The simulator"): its InstanceView is its state; a local
// BatchScheduler picks each iteration; the iteration lasts the *truth* time of the batch
// (hardware profile, optional log-normal noise) while the view's model is the policies'
// *belief*. Continuous batching with chunked prefill on colocated instances; prefill-only
// and decode-only work on P/D instances; SIBYL's processor-sharing decode (appendix I:
// each of N requests decodes at TPS(N)/N, so a step of N tokens lasts N/TPS(N)).
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "slocore/batch/batch_scheduler.h"
#include "slocore/core/flat_index.h"
#include "slocore/core/id_index.h"
#include "slocore/core/id_slab.h"
#include "slocore/core/online_fit.h"
#include "slocore/core/profile.h"
#include "slocore/sim/prefix_cache.h"
#include "slocore/sim/waiting_positions.h"

namespace slocore::sim {

enum class EngineState { Starting, Active, Draining, Stopped };

// What one finished iteration produced, for the simulator to record and route.
struct IterationOutcome {
  struct Token {
    Id request;
    Tokens generated;  // count after this token
  };
  std::vector<Token> tokens;
  std::vector<RequestState> finished;    // reached their output length
  std::vector<RequestState> handed_off;  // prefill instance: prefill done, go to decode
};

class Engine {
 public:
  // `view` is owned by the simulator (a pool of views the policies read); rebind() when it moves.
  // prefix_caching: keep a block-level prefix cache (vLLM's automatic prefix caching); only
  // requests with prefix identity (Request::prefix) ever hit or fill it.
  Engine(InstanceView* view, const HardwareProfile& truth, std::shared_ptr<BatchScheduler> sched,
         bool processor_sharing, double noise_sigma, uint64_t seed, int correction_window, bool prefix_caching = false);

  // Refit the belief's coefficients from the iterations run (core/online_fit.h) in place of
  // ProServe's single correction factor, every correction_window iterations (0: neither).
  void enable_online_fit();
  bool online_fit() const { return fit_ != nullptr; }

  InstanceView& view() { return *v_; }
  const InstanceView& view() const { return *v_; }
  void rebind(InstanceView* v) { v_ = v; }
  const HardwareProfile& profile() const { return truth_; }
  const PrefixCache* prefix_cache() const { return cache_.get(); }
  Id id() const { return v_->id; }
  bool busy() const { return busy_; }
  bool has_work() const { return !v_->running.empty() || !v_->waiting.empty(); }
  BatchScheduler& scheduler() { return *sched_; }

  // Asks the scheduler for a plan, applies its preemptions and KV allocation, and returns
  // the iteration's truth duration; < 0 when there is nothing to run.
  double start(Time now);
  // Applies the plan in flight at its end time `now`. The outcome is the engine's, valid
  // until its next finish() (its lists keep their storage: no allocation per iteration).
  IterationOutcome& finish(Time now);

  void enqueue(RequestState s) {
    if (cache_ && !s.request.prefix.empty()) prefixed_ = true, mark_refresh(s.request.id);
    v_->waiting.push_back(std::move(s));
    waiting_at_.appended(v_->waiting);
  }
  // The sanitised plan of the iteration in flight (or of the last one).
  const BatchPlan& plan() const { return plan_; }
  // Removes a request that left early (the emulated engine's client went away): frees its
  // KV (with the tokens of the iteration in flight) and tells the scheduler on_finished.
  bool cancel(Id request, Time now);
  // Sum of the belief's prefill cost of every waiting request, in queue order (SIBYL's
  // handoff estimate). Kept as a running sum over appends, recomputed after an iteration
  // starts or ends (the queue's front or the model changed): O(1) amortised per arrival.
  double queued_prefill_cost();
  size_t violations() const { return violations_; }
  int64_t iterations() const { return iterations_; }
  int64_t preemptions() const { return preemptions_; }
  int64_t prefix_hit_tokens() const { return hit_tokens_; }      // prompt tokens served from the cache
  int64_t prefix_query_tokens() const { return query_tokens_; }  // prompt tokens of admitted requests

  EngineState state = EngineState::Starting;
  Time started_at = 0.0;  // when its cost began (cold start included)
  Time stopped_at = -1.0;
  Role next_role = Role::Colocated;  // for a role switch after draining
  bool switching = false;

 private:
  void log_waiting(Id id, WaitingLog::Kind kind) {  // InstanceView::waiting_log, kept to ~2 queues' length
    v_->waiting_log.add({id, kind}, 1024 + 2 * v_->waiting.size());
  }
  BatchPlan ask(Time now);             // the scheduler's plan, told the view's changes since it was last asked
  void sanitize(BatchPlan& plan);      // drops infeasible items, counting violations
  bool planned(Id id) const;           // in the plan in flight (planned_)
  Tokens planned_tokens(Id id) const;  // its tokens there, 0 when not planned
  double truth_time(const std::vector<BatchItem>& items, size_t decodes) const;
  // KV accounting with prefix caching (no-ops for requests without prefix identity).
  struct Hold {
    std::vector<uint64_t> chain;   // block hashes of the request's known tokens
    std::vector<uint64_t> pinned;  // cached blocks it references (the rest of its blocks are its own)
    int64_t next_block = 0;        // blocks [0, next_block) are pinned or known duplicates
    int64_t memo = 0;              // blocks [0, memo) of chain are cached (on_evicted lowers it)
    int64_t watched = 0;           // blocks [0, watched) have an entry in their Block::watchers
    int64_t awaits = -1;           // chain[awaits] is absent and has an entry in arrivals_
    bool stale = true;             // memo may have grown (chain[memo] was cached since the walk)
    // Blocks [0, in_use) of chain are referenced by running requests: admitting the request
    // takes no free block for them (vLLM charges only new and evictable cached blocks).
    // Lowered when one is released (on_unused); refresh_hits walks it forward.
    int64_t in_use = 0;
    // Running: of its pinned blocks, those other requests reference too. Preempting it frees
    // blocks_for(computed) - shared_run blocks (a shared one stays in use).
    int64_t shared_run = 0;
    bool running = false;  // in the engine's running set (else waiting)
  };
  // A Hold* is valid until the next hold is made (hold_of of a request without one).
  Hold* hold_of(const RequestState& s);                         // s's, made on first use
  Hold* find_hold(Id request) { return holds_.find(request); }  // nullptr when it has none
  Hold& hold(Id request);                                       // one that must exist
  void drop_hold(Id request);
  void mark_refresh(Id request) {
    if (refresh_.insert(uint64_t(request), 0) == IdMap::kNone) refresh_list_.push_back(request);
  }
  void to_refresh(Id request, const Hold& h) {  // a running request's waiting state needs none
    if (!h.running) mark_refresh(request);
  }
  using Block = PrefixCache::Block;
  Block& cached(uint64_t block);                 // a block known to be cached
  void on_evicted(Block& block);                 // lowers the memo of every request whose memo covered it
  void on_cached(uint64_t block);                // marks stale every request whose memo ended before it
  void on_in_use(const Block& block);            // a cached block left the free queue: in_use may grow
  void on_unused(const Block& block);            // a cached block joined the free queue: in_use may shrink
  int64_t shared_blocks(const RequestState& s);  // waiting s: leading cached blocks in use now
  void hold_block(Id who, Block& block);         // `who` references a cached block now
  void drop_block(Id who, Block& block);         // `who` no longer references it
  void rebuild_watchers();
  void refresh_hits();               // waiting requests: computed = cached prefix now
  void take_blocks(int64_t n);       // n new blocks; evicts cached free ones as needed
  void release_kv(RequestState& s);  // frees s's blocks (shared ones only when unreferenced)
  void promote(RequestState& s);     // caches s's newly full blocks

  InstanceView* v_;
  HardwareProfile truth_;
  LatencyModel truth_model_;
  std::shared_ptr<BatchScheduler> sched_;
  bool processor_sharing_;
  std::unique_ptr<ThroughputCurve> tps_;
  double noise_sigma_;
  std::mt19937_64 rng_;
  int correction_window_;  // fold observed/predicted ratios into the belief every N iterations (0: off)
  bool busy_ = false;
  BatchPlan plan_;
  std::shared_ptr<PrefixCache> cache_;  // null: prefix caching off
  bool prefixed_ = false;               // a request with prefix identity came here (else no cache work at all)
  IdSlab<Hold> holds_;
  using IdMap = FlatIndex<KeyBits::Sequential>;
  // A waiting request's cached prefix, kept between iterations: its memo changes only when a
  // block it covers is evicted (Block::watchers: (request, position) of the memos that cover
  // that cached block) or when the block after it is cached (arrivals_: absent block ->
  // requests whose memo ends there). Other requests need no lookup. Entries of requests gone
  // or moved on only cost a walk, never a wrong match; both are rebuilt when mostly such entries.
  std::unordered_map<uint64_t, std::vector<Id>> arrivals_;
  // Entries of arrivals_ by the low bits of their block, and a bit per count that is not
  // zero: a clear bit skips the lookup (8 KiB, where the counts would miss the cache).
  static constexpr uint64_t kArrivalMask = (1 << 16) - 1;
  std::vector<uint32_t> arrival_counts_;  // kArrivalMask + 1 of them with a cache, else none
  std::vector<uint64_t> arrival_bits_;
  void count_arrivals(uint64_t block, int64_t n);  // arrival_counts_ and arrival_bits_
  // Waiting requests whose state needs refresh_hits: new here, preempted, or a stale memo
  // (the others' computed = cached = their memo already).
  IdMap refresh_;                  // a set: the values are unused
  std::vector<Id> refresh_list_;   // refresh_'s ids as they came (and ids dropped from it since)
  std::vector<size_t> positions_;  // refresh_hits() scratch: queue positions
  IterationOutcome out_;           // finish()'s
  std::vector<size_t> admit_at_;   // sanitize() -> start(): the plan's waiting requests' queue positions
  WaitingPositions waiting_at_;    // where each waiting request is
  // A running request's shared_run counts its blocks with two or more references; the one
  // holder of a block referenced once is Block::holders, the XOR of its holders' ids.
  int64_t watcher_entries_ = 0, held_blocks_ = 0;  // entries in watchers and arrivals_; chain blocks of holds_
  int64_t hit_tokens_ = 0, query_tokens_ = 0;
  // InstanceView::changes is filled as the view changes; these two complete it when asked.
  uint64_t asked_epoch_ = 0;  // the view's epoch at the last schedule() call (0: none yet)
  std::vector<Id> left_;      // requests that left since: taken out of the lists when asked
  bool cancelled_ = false;    // one of them was cancelled (else none is in preempted or progressed)

  IdIndex planned_;  // plan_'s items: id -> tokens (while sanitising: the raw plan's ids -> slot in where_)
  struct Where {     // sanitize(): where a planned id is
    RequestState* s = nullptr;
    size_t at = 0;  // its position in view.running, or in view.waiting
    bool running = false, seen = false;
  };
  // Where each running request is in view.running (sim/waiting_positions.h), so a plan
  // reaches its ~10 running requests of several hundred without a pass over the batch.
  static constexpr size_t npos = size_t(-1);
  size_t running_pos(Id id) const { return running_at_.find(v_->running, id); }  // npos: not running
  using Box = RequestBox;  // a request in its own box (core/waiting_queue.h)
  // Takes the requests at `gone` (ascending positions) out of running, keeping the others'
  // order; `take(box)` receives each leaving request's box.
  template <class F>
  void remove_running(const std::vector<size_t>& gone, F&& take);
  RunningPositions running_at_;
  // The plan's running requests: (position, tokens), in running order after start().
  std::vector<std::pair<size_t, Tokens>> plan_at_;
  std::vector<size_t> gone_;        // sanitize() and finish() scratch: positions leaving running
  std::vector<bool> handoff_;       // finish() scratch: gone_[i] hands off (else it finished)
  bool by_pass_ = false;            // sanitize() found the plan's running requests by a pass
  std::vector<Where> where_;        // sanitize() scratch
  std::vector<ScheduledItem> ok_;   // sanitize() scratch
  std::vector<Id> preempt_;         // sanitize() scratch
  std::vector<Box> evicted_;        // sanitize() scratch: the plan's preempted requests
  std::vector<BatchItem> items_;    // start() scratch
  std::unique_ptr<OnlineFit> fit_;  // null: ProServe's correction factor
  OnlineFit::Vec fit_x_{};          // the features of the iteration in flight
  size_t queued_n_ = 0;             // waiting requests summed in queued_sum_ (a prefix)
  double queued_sum_ = 0.0;
  bool queued_valid_ = false;
  double predicted_ = 0.0, actual_ = 0.0;
  size_t violations_ = 0;
  int64_t iterations_ = 0, preemptions_ = 0;
};

}  // namespace slocore::sim
