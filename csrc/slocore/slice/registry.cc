// SLICE BatchScheduler entries: slice (Alg. 2-4 of 001_a2337bd0687bbcfa.txt).
#include "slocore/core/families.h"
#include "slocore/slice/slice_scheduler.h"

namespace slocore {

std::vector<RegistryEntry<BatchScheduler>> slice_batch_schedulers() {
  return {
      {"slice", "SLICE: utility-rate task selection + decode-mask rate allocation, online (Alg. 2-4)",
       [](const ParamMap& p) {
         ParamReader rd("slice", p);
         slice::SliceParams sp;
         rd.get("max_cycle", sp.max_cycle);
         rd.get("spread", sp.spread);
         rd.get("adaptor", sp.adaptor);
         rd.get("sjf_tokens", sp.sjf_tokens);
         rd.get("demote_late", sp.demote_late);
         rd.finish();
         return std::make_shared<slice::SliceScheduler>(sp);
       }},
  };
}

}  // namespace slocore
