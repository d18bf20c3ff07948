#include "slocore/core/id_ledger.h"

#include <string>

#include "slocore/core/errors.h"

namespace slocore {

void IdLedger::check_new(Id request) const {
  require(!live(request), "request.id",
          "duplicate id " + std::to_string(request) + ": already submitted and not finished");
}

void IdLedger::check_known(Id request) const {
  if (!live(request))
    throw UnknownId("request: unknown id " + std::to_string(request) + " (never submitted, or already finished)");
}

void IdLedger::check_new_instance(Id instance) const {
  require(!instances_.count(instance), "instance", "instance " + std::to_string(instance) + " was already added");
}

void IdLedger::check_known_instance(Id instance) const {
  if (!instances_.count(instance))
    throw UnknownId("instance: unknown id " + std::to_string(instance) + " (never added, or already removed)");
}

}  // namespace slocore
