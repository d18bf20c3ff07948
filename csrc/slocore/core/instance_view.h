// What a router can know about one engine (docs/design.md "Contracts"): role, running and
// waiting requests with their progress, KV blocks, limits, and the engine's latency model.
// The simulator keeps one view per instance as the engine's own state, so policies read
// it by const reference without copies; the live router fills it from engine metrics.
#pragma once
#include <cmath>
#include <memory>
#include <vector>

#include "slocore/core/latency_model.h"
#include "slocore/core/prefix.h"
#include "slocore/core/request.h"
#include "slocore/core/request_state.h"
#include "slocore/core/waiting_queue.h"

namespace slocore {

// What an engine changed in a view's `running` and `waiting` since it last asked its scheduler
// for a plan (the simulator's engine fills it; batch/batch_scheduler.h), so that a scheduler
// keeping state across calls follows these few requests instead of reading the batch.
// Requests that left the engine since (on_finished) are in no list; arrivals are the queue's
// new tail. since_epoch 0: not known (a view no engine keeps); the lists are then empty.
struct ViewChanges {
  uint64_t since_epoch = 0;    // the view's epoch when the engine last called schedule()
  std::vector<Id> preempted;   // running then; now the front of `waiting`, in order
  std::vector<Id> admitted;    // waiting then; now the back of `running`, in order
  std::vector<Id> progressed;  // running now and then (or admitted since), more tokens computed
};

// A fresh InstanceView::epoch, never 0, unique in the process (thread-safe).
uint64_t next_view_epoch();

// Every change to a view's `waiting` other than an append, in order, since the log's stream
// began: for a reader that follows the queue across many of the engine's steps (a router's
// per-instance memo, stack/slo_predict.h PendingQueue), which ViewChanges, cleared at each
// schedule() call, cannot serve. The engine starts a new stream when it changes a waiting
// request in place or when the log grows long; a reader of another stream reads the queue
// whole. stream 0: not kept (a view no engine keeps, or a copy: copies are not followed).
struct WaitingLog {
  enum class Kind : uint8_t {
    Left,       // admitted or cancelled
    Prepended,  // put back at the queue's front (preempted); the front holds them, latest first
  };
  struct Event {
    Id id;
    Kind kind;
  };
  uint64_t stream = 0;
  std::vector<Event> events;

  WaitingLog() = default;
  WaitingLog(const WaitingLog&) {}
  WaitingLog(WaitingLog&&) noexcept = default;
  WaitingLog& operator=(const WaitingLog& o) {
    if (this != &o) stream = 0, events.clear();
    return *this;
  }
  WaitingLog& operator=(WaitingLog&&) noexcept = default;
  void restart() { stream = next_view_epoch(), events.clear(); }
  // Logs e; a log longer than `keep` starts a new stream (its readers read the queue once more).
  void add(Event e, size_t keep) {
    if (stream == 0) return;
    if (events.size() >= keep) restart();
    events.push_back(e);
  }
};

struct InstanceView {
  Id id = 0;
  Role role = Role::Colocated;
  bool accepting = true;  // false while draining or starting
  RunningBatch running;   // holds KV (prefilling in chunks or decoding)
  WaitingQueue waiting;   // admitted to the engine, no KV yet (in order; O(1) at both ends)
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_free = 0;
  int block_size = 16;
  Tokens max_batch_tokens = 8192;  // per-iteration token budget (chunked prefill)
  int max_num_seqs = 256;
  LatencyModel model;
  Time busy_until = 0.0;  // end of the iteration in flight (== now when idle)
  // P/D (set on every instance of the deployment): a handed-off request's first token reaches
  // the client with its first decode step, not at the prefill's end (vLLM's P/D proxy
  // protocol, which `slocore serve` speaks; the simulator's pd_first_token="decode"), so its
  // TTFT still runs while it waits for a decode slot.
  bool first_token_at_decode = false;
  // A stamp the owner changes whenever `running` or `waiting` change other than by appending
  // to `waiting`; stamps are unique in the process (next_view_epoch()), so (id, epoch) names
  // one state and a reader may keep a per-instance sum and add only the appended requests.
  // 0: not tracked (the live router's views), readers rescan.
  uint64_t epoch = 0;
  ViewChanges changes;     // since the engine's last schedule() call (see above)
  WaitingLog waiting_log;  // see above
  // Prefix caching (core/prefix.h): the engine's real block cache (precise; the simulator's
  // engine, live from KV events) and the router's index of what it sent here (approximate).
  // Either may be null: no information, 0 tokens cached.
  std::shared_ptr<const PrefixLookup> prefix_cache;
  std::shared_ptr<const PrefixLookup> prefix_index;

  size_t num_requests() const { return running.size() + waiting.size(); }
  // f(state, is_running) for every running, then every waiting request.
  template <class F>
  void for_each_request(F&& f) const {
    for (const RequestState& s : running) f(s, true);
    for (const RequestState& s : waiting) f(s, false);
  }
  double kv_utilization() const {
    return kv_blocks_total > 0 ? 1.0 - double(kv_blocks_free) / double(kv_blocks_total) : 0.0;
  }
  int64_t blocks_for(Tokens tokens) const { return (tokens + block_size - 1) / block_size; }
  // Free KV blocks taken to compute `k` more tokens of s: a running request holds its own
  // blocks; a waiting request holds none, and its `shared` cached ones are in use already.
  int64_t blocks_needed(const RequestState& s, Tokens k, bool is_running) const {
    return blocks_for(s.computed + k) - (is_running ? blocks_for(s.computed) : s.shared / block_size);
  }
  // Leading prompt tokens of r this instance holds: full blocks, at most prompt_len - 1
  // (`chain` = prompt_block_hashes(r, block_size), computed once per request by the caller).
  Tokens precise_prefix_tokens(const std::vector<uint64_t>& chain) const {
    return prefix_cache ? prefix_cache->match_blocks(chain) * block_size : 0;
  }
  Tokens approx_prefix_tokens(const std::vector<uint64_t>& chain) const {
    return prefix_index ? prefix_index->match_blocks(chain) * block_size : 0;
  }
  // The precise answer when the engine's cache is known, else the approximate one.
  Tokens cached_prefix_tokens(const std::vector<uint64_t>& chain) const {
    return prefix_cache ? precise_prefix_tokens(chain) : approx_prefix_tokens(chain);
  }
  void validate() const;  // InvalidArgument naming the field
};

}  // namespace slocore
