// SIBYL GlobalPolicy entries (004_eab493ab577bb381.txt): the decode policy with its
// ablations (Sec. 5.3, Fig. 8) as typed parameters.
#include "slocore/core/families.h"
#include "slocore/policy/registry.h"
#include "slocore/sibyl/early_assign.h"
#include "slocore/sibyl/policy.h"

namespace slocore {

namespace {

std::shared_ptr<GlobalPolicy> make_sibyl(const char* name, const ParamMap& p, sibyl::Options o) {
  ParamReader rd(name, p);
  double bucket = double(o.bucket), max_len = double(o.max_len);
  std::string handoff = "queue";
  rd.get("bucket", bucket);
  rd.get("alpha", o.alpha);
  rd.get("max_len", max_len);
  rd.get("v_sys_init", o.v_sys_init);
  rd.get("prob", o.prob);
  rd.get("type1", o.type1);
  rd.get("type2", o.type2);
  rd.get("type3", o.type3);
  rd.get("reqlevel", o.reqlevel);
  rd.get("handoff", handoff);
  rd.finish();
  require(std::isfinite(bucket) && bucket >= 1 && bucket == std::floor(bucket), "bucket",
          "must be a whole number of tokens >= 1, got " + std::to_string(bucket));
  require(std::isfinite(max_len) && max_len >= bucket && max_len == std::floor(max_len), "max_len",
          "must be a whole number >= bucket, got " + std::to_string(max_len));
  require(handoff == "queue" || handoff == "prefill", "handoff", "must be 'queue' or 'prefill', got '" + handoff + "'");
  o.bucket = Tokens(bucket);
  o.max_len = Tokens(max_len);
  return std::make_shared<sibyl::SibylPolicy>(
      o, handoff == "queue" ? sibyl::SibylPolicy::Handoff::Queue : sibyl::SibylPolicy::Handoff::Prefill);
}

}  // namespace

std::vector<RegistryEntry<GlobalPolicy>> sibyl_global_policies() {
  return {
      {"sibyl",
       "SIBYL decode policy: least projected load at handoff (Alg. 1; params bucket, alpha, prob, type1/2/3, "
       "reqlevel, handoff=queue|prefill)",
       [](const ParamMap& p) { return make_sibyl("sibyl", p, {}); }},
      {"early_assign",
       "any push policy deciding at prefill start (the paper's RR/ILS baselines, Alg. 2 lines 15-18); "
       "param policy=<name>",
       [](const ParamMap& p) -> std::shared_ptr<GlobalPolicy> {
         ParamReader rd("early_assign", p);
         std::string inner = "least_outstanding";
         rd.get("policy", inner);
         rd.finish();
         require(inner != "early_assign" && inner != "sibyl", "early_assign.policy",
                 "must name a push policy, got '" + inner + "'");
         return std::make_shared<sibyl::EarlyAssign>(make_global_policy(inner, {}));
       }},
  };
}

}  // namespace slocore
