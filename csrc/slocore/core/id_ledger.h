// The id bookkeeping of the checked entry points (policy/checked_calls.h): which request ids
// a policy or scaler was given and has not seen finish, and which instances it was told
// about. It turns a duplicate submit into InvalidArgument and a notification about an id
// it never got (or already finished) into UnknownId, so no policy has to repeat the rule.
// The simulator, a trusted caller, calls the policies directly and leaves it empty.
#pragma once
#include <cstddef>
#include <unordered_map>
#include <unordered_set>

#include "slocore/core/types.h"

namespace slocore {

class IdLedger {
 public:
  // InvalidArgument "request.id: duplicate ..." if `request` is live (submitted, not finished).
  void check_new(Id request) const;
  void add(Id request) { live_.emplace(request, kNoInstance); }
  void assigned(Id request, Id instance) {  // a finished (or never submitted) id stays out
    if (auto it = live_.find(request); it != live_.end()) it->second = instance;
  }
  // UnknownId "request: ..." unless `request` is live.
  void check_known(Id request) const;
  void finished(Id request) { live_.erase(request); }
  bool live(Id request) const { return live_.count(request) != 0; }
  size_t size() const { return live_.size(); }

  // Instances announced by on_instance_added and not removed since.
  void check_new_instance(Id instance) const;    // InvalidArgument if already added
  void check_known_instance(Id instance) const;  // UnknownId if never added (or removed)
  void add_instance(Id instance) { instances_.insert(instance); }
  void remove_instance(Id instance) { instances_.erase(instance); }

 private:
  std::unordered_map<Id, Id> live_;  // request -> instance it was assigned (kNoInstance: pending)
  std::unordered_set<Id> instances_;
};

}  // namespace slocore
