// HFX Scaler entries: the Alg. 3 threshold scaler with the three indicators of Sec. 3.3.3.
#include "families.h"
#include "slocore/hfx/scaler.h"

namespace slocore {

std::vector<RegistryEntry<Scaler>> hfx_scalers() {
  return {
      {"hfx", "HFX Alg. 3 scaler: rate ratio over 10 s, SLO-normalised wait, KV load; P/D role switching",
       [](const ParamMap& params) {
         ParamReader rd("hfx", params);
         hfx::ScalerParams p;
         rd.get("interval", p.interval);
         rd.get("window", p.window);
         rd.get("min_samples", p.min_samples);
         rd.get("lag_alpha", p.lag_alpha);
         rd.get("warmup", p.warmup);
         rd.get("out_rate", p.out_rate);
         rd.get("in_rate", p.in_rate);
         rd.get("out_wait", p.out_wait);
         rd.get("kv_high", p.kv_high);
         rd.get("in_patience", p.in_patience);
         rd.get("out_patience", p.out_patience);
         rd.get("rate_wait", p.rate_wait);
         rd.get("cooldown", p.cooldown);
         rd.get("role_switch", p.role_switch);
         rd.get("forget_s", p.forget_s);
         rd.finish();
         return std::make_shared<hfx::HfxScaler>(p);
       }},
  };
}

}  // namespace slocore
