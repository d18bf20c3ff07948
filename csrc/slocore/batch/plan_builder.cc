#include "slocore/batch/plan_builder.h"

#include <algorithm>

namespace slocore {

namespace {
// The id tables of finished builders, for the next ones (a few, for builders alive at once).
// A scheduler builds a plan per engine iteration: a table grown from empty to the batch's
// size took an allocation, a fill and a rehash per doubling each time. Shared by every
// engine of the thread, the table is the one the last builder used, still in cache; one kept
// per scheduler was cold at every call of a burst's 16 engines and cost more than the
// allocations (tried on 2026-11-29).
thread_local std::vector<IdIndex> spare_ids;
thread_local std::vector<BatchPlan> spare_plans;  // recycle()'s, empty
}  // namespace

void recycle(BatchPlan&& spent) {
  if (spare_plans.size() >= 4 || spent.items.capacity() == 0) return;
  spent.items.clear(), spent.preempt.clear();
  spare_plans.push_back(std::move(spent));
}

PlanBuilder::PlanBuilder(const InstanceView& v, Tokens token_budget)
    : view_(v), budget_(std::min(token_budget, v.max_batch_tokens)), blocks_(v.kv_blocks_free) {
  if (!spare_ids.empty()) ids_ = std::move(spare_ids.back()), spare_ids.pop_back();
  if (!spare_plans.empty()) plan_ = std::move(spare_plans.back()), spare_plans.pop_back();
  ids_.clear(v.running.size());
  // One allocation for the plan: a decode-first scheduler names every running request.
  plan_.items.reserve(std::min(v.running.size(), size_t(std::max(v.max_num_seqs, 0))) + 16);
}

PlanBuilder::~PlanBuilder() {
  if (spare_ids.size() < 4) spare_ids.push_back(std::move(ids_));
}

bool PlanBuilder::planned(Id id) const { return ids_.contains(id); }

Tokens PlanBuilder::add(const RequestState& s, bool running, Tokens want, bool allow_partial) {
  if (seq_full() || budget_ <= 0) return 0;
  // Tokens in blocks s takes no free block for: its own when running, else the cached ones
  // running requests share. A waiting request gets a token only if blocks_for(computed + 1) -
  // shared / block_size <= blocks_ (the chunking loop below would end at 0 otherwise).
  const Tokens held = running ? view_.blocks_for(s.computed) * view_.block_size : s.shared;
  if (!running && s.computed - held >= blocks_ * view_.block_size) return 0;
  Tokens k = std::min(want, s.to_compute());
  if (k > budget_) {
    if (!allow_partial) return 0;
    k = budget_;
  }
  while (k > 0 && view_.blocks_needed(s, k, running) > blocks_) {
    if (!allow_partial) return 0;
    // Largest chunk whose blocks fit: the tokens left in held blocks plus whole free blocks.
    const Tokens fit = held + blocks_ * view_.block_size - s.computed;
    k = std::min(k - 1, fit);
  }
  if (k <= 0) return 0;
  blocks_ -= view_.blocks_needed(s, k, running);
  budget_ -= k;
  plan_.items.push_back({s.request.id, k});
  ids_.insert(s.request.id, 0);
  return k;
}

Tokens PlanBuilder::add_next(const RequestState& s, bool running, bool allow_partial) {
  return add(s, running, s.in_prefill() ? s.to_compute() : 1, allow_partial);
}

void PlanBuilder::preempt(const RequestState& s) {
  blocks_ += view_.blocks_for(s.computed) - s.shared / view_.block_size;  // shared blocks stay in use
  plan_.preempt.push_back(s.request.id);
  ids_.insert(s.request.id, 0);  // neither schedule nor preempt it twice
}

void run_with_preemption(PlanBuilder& b, size_t i, std::vector<size_t>& victims) {
  const auto& run = b.view().running;
  run_with_preemption(b, run[i], [&]() -> const RequestState* {
    while (!victims.empty() && b.planned(run[victims.back()].request.id)) victims.pop_back();
    if (victims.empty()) return nullptr;
    const RequestState* x = &run[victims.back()];
    victims.pop_back();
    return x;
  });
}

void run_with_preemption(PlanBuilder& b, const std::vector<size_t>& order, std::vector<size_t>& victims) {
  for (size_t i : order) run_with_preemption(b, i, victims);
}

void plan_in_order(PlanBuilder& b, const std::vector<Candidate>& order, std::vector<size_t> victims) {
  for (const Candidate& x : order) {
    if (b.seq_full() || b.budget_left() <= 0) break;
    if (b.planned(x.s->request.id)) continue;
    if (x.running)
      run_with_preemption(b, x.index, victims);
    else
      b.add_next(*x.s, false, true);
  }
  ensure_progress(b);
}

void ensure_progress(PlanBuilder& b) {
  const auto& run = b.view().running;
  if (b.planned_count() > 0 || run.empty()) return;
  std::vector<size_t> all(run.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  run_with_preemption(b, size_t(0), all);
}

}  // namespace slocore
