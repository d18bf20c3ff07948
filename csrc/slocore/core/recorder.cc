#include "slocore/core/recorder.h"

#include <algorithm>
#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

void Recorder::add(const Request& r) {
  validate(r);
  if (!index_.emplace(r.id, records_.size()).second) fail("id", "duplicate request id " + std::to_string(r.id));
  RequestRecord rec;
  rec.request = r;
  records_.push_back(std::move(rec));
}

RequestRecord& Recorder::mut(Id id) {
  // Ids are usually 0..n-1 in arrival order (the simulator's workloads): the record at that
  // position is then the one, without a hash lookup.
  if (id >= 0 && size_t(id) < records_.size() && records_[size_t(id)].request.id == id) return records_[size_t(id)];
  auto it = index_.find(id);
  if (it == index_.end()) throw UnknownId("unknown request id " + std::to_string(id));
  return records_[it->second];
}

const RequestRecord& Recorder::get(Id id) const {
  if (id >= 0 && size_t(id) < records_.size() && records_[size_t(id)].request.id == id) return records_[size_t(id)];
  auto it = index_.find(id);
  if (it == index_.end()) throw UnknownId("unknown request id " + std::to_string(id));
  return records_[it->second];
}

void Recorder::token(Id id, Time t, Id instance) {
  RequestRecord& r = mut(id);
  if (r.outcome != Outcome::Pending) fail("id", "request " + std::to_string(id) + " already ended");
  require(std::isfinite(t) && t >= r.request.arrival, "t", "token time must be finite and >= arrival");
  if (t < r.last_token_time) fail("t", "token times of request " + std::to_string(id) + " must not decrease");
  if (r.token_times.empty())  // one allocation for a known length (capped)
    r.token_times.reserve(size_t(std::min<Tokens>(r.request.output_len.value_or(1), 1 << 16)));
  r.token_times.push_back(t);
  r.last_token_time = t;
  r.instance = instance;
  ++total_tokens_;
}

void Recorder::finish(Id id, Time t) {
  RequestRecord& r = mut(id);
  if (r.outcome != Outcome::Pending) fail("id", "request " + std::to_string(id) + " already ended");
  if (r.token_times.empty()) fail("id", "request " + std::to_string(id) + " finished with no token");
  require(std::isfinite(t) && t >= r.last_token_time, "t", "finish time before last token");
  r.outcome = Outcome::Finished;
  r.end_time = t;
}

void Recorder::reject(Id id, Time t, const std::string& reason) {
  RequestRecord& r = mut(id);
  if (r.outcome != Outcome::Pending) fail("id", "request " + std::to_string(id) + " already ended");
  require(std::isfinite(t), "t", "must be finite");
  r.outcome = Outcome::Rejected;
  r.end_time = t;
  r.reason = reason;
}

void Recorder::add_instance_time(double seconds) {
  require_nonneg(seconds, "seconds");
  instance_seconds_ += seconds;
}

}  // namespace slocore
