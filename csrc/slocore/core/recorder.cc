#include "slocore/core/recorder.h"

#include <cmath>

#include "slocore/core/errors.h"

namespace slocore {

void Recorder::add(const Request& r) {
  validate(r);
  require(index_.count(r.id) == 0, "id", "duplicate request id " + std::to_string(r.id));
  index_.emplace(r.id, records_.size());
  records_.push_back(RequestRecord{r, {}, Outcome::Pending, kNever, kNoInstance, {}});
}

RequestRecord& Recorder::mut(Id id) {
  auto it = index_.find(id);
  if (it == index_.end()) throw UnknownId("unknown request id " + std::to_string(id));
  return records_[it->second];
}

const RequestRecord& Recorder::get(Id id) const {
  auto it = index_.find(id);
  if (it == index_.end()) throw UnknownId("unknown request id " + std::to_string(id));
  return records_[it->second];
}

void Recorder::token(Id id, Time t, Id instance) {
  RequestRecord& r = mut(id);
  require(r.outcome == Outcome::Pending, "id", "request " + std::to_string(id) + " already ended");
  require(std::isfinite(t) && t >= r.request.arrival, "t", "token time must be finite and >= arrival");
  require(r.token_times.empty() || t >= r.token_times.back(), "t",
          "token times of request " + std::to_string(id) + " must not decrease");
  r.token_times.push_back(t);
  r.instance = instance;
  ++total_tokens_;
}

void Recorder::finish(Id id, Time t) {
  RequestRecord& r = mut(id);
  require(r.outcome == Outcome::Pending, "id", "request " + std::to_string(id) + " already ended");
  require(!r.token_times.empty(), "id", "request " + std::to_string(id) + " finished with no token");
  require(std::isfinite(t) && t >= r.token_times.back(), "t", "finish time before last token");
  r.outcome = Outcome::Finished;
  r.end_time = t;
}

void Recorder::reject(Id id, Time t, const std::string& reason) {
  RequestRecord& r = mut(id);
  require(r.outcome == Outcome::Pending, "id", "request " + std::to_string(id) + " already ended");
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
