#include "slocore/policy/push_policy.h"

namespace slocore {

void PushPolicy::submit(const Request& r, Time now, Time expected_handoff) { queue_.push_back(r); }

void PushPolicy::on_cancelled(Id request, Time) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (it->id == request) {
      queue_.erase(it);
      return;
    }
}

int64_t PushPolicy::placed_requests(Id id) const {
  auto it = placed_.find(id);
  return it == placed_.end() ? 0 : it->second.first;
}

int64_t PushPolicy::placed_tokens(Id id) const {
  auto it = placed_.find(id);
  return it == placed_.end() ? 0 : it->second.second;
}

std::vector<Assignment> PushPolicy::poll(Time now, const std::vector<InstanceView>& views) {
  std::vector<Assignment> out;
  placed_.clear();
  while (!queue_.empty()) {
    const Request& r = queue_.front();
    const int i = choose(r, now, views);
    if (i < 0) break;  // nothing accepts now; keep order and retry at the next poll
    const Id inst = views[size_t(i)].id;
    auto& p = placed_[inst];
    p.first += 1;
    p.second += r.prompt_len;
    out.push_back({r.id, inst});
    queue_.pop_front();
  }
  return out;
}

}  // namespace slocore
