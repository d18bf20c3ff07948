// The recorder keeps every token's time for every request (docs/design.md "The simulator"), so
// each metric is computed afterwards from one definition (metrics.h). The simulator and
// the live router both fill one.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "slocore/core/request.h"

namespace slocore {

enum class Outcome { Pending = 0, Finished = 1, Rejected = 2 };

struct alignas(64) RequestRecord {
  // What each token reads and writes first, then the request: in a burst a token's record is
  // a cache miss, and these fields with the request's id and arrival share its first line
  // (64-aligned: in a vector of unaligned records, three in four of them spanned two lines).
  // token_times.back() is last_token_time (-inf before the first), kept so that a token's
  // order check reads no token (reading the list's end was a second miss per token).
  Time last_token_time = -kNever;
  Outcome outcome = Outcome::Pending;
  Id instance = kNoInstance;      // where the last token was produced
  std::vector<Time> token_times;  // absolute times of output tokens 1..n
  Request request;
  Time end_time = kNever;  // finish or rejection time
  std::string reason;      // why rejected, if so
};

class Recorder {
 public:
  void add(const Request& r);                            // duplicate id -> InvalidArgument
  void token(Id id, Time t, Id instance = kNoInstance);  // t must not go back in time
  void finish(Id id, Time t);
  void reject(Id id, Time t, const std::string& reason);
  void add_instance_time(double seconds);  // active instance-seconds (HFX Eq. 3 cost)
  void reserve(size_t n) {
    records_.reserve(n);
    index_.reserve(n);
  }

  const RequestRecord& get(Id id) const;  // UnknownId if absent
  bool contains(Id id) const { return index_.count(id) != 0; }
  const std::vector<RequestRecord>& records() const { return records_; }
  size_t size() const { return records_.size(); }
  double instance_seconds() const { return instance_seconds_; }
  int64_t total_tokens() const { return total_tokens_; }

 private:
  RequestRecord& mut(Id id);
  std::vector<RequestRecord> records_;
  std::unordered_map<Id, size_t> index_;
  double instance_seconds_ = 0.0;
  int64_t total_tokens_ = 0;
};

}  // namespace slocore
