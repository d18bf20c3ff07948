// HFX GlobalPolicy entries: the Alg. 1 dispatcher (colocated), its P-stage and D-stage
// instances (Sec. 3.3.1 of 002_408d77c14f04127d.txt), HFX-PM and the SCORPIO-style baseline.
// HFX Scaler entries: the Alg. 3 threshold scaler with the three indicators of Sec. 3.3.3.
#include "slocore/core/families.h"
#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/pm_dispatcher.h"
#include "slocore/hfx/scaler.h"
#include "slocore/hfx/scorpio.h"

namespace slocore {

namespace {

hfx::DispatcherParams read_dispatcher(ParamReader& rd, const std::string& stage) {
  hfx::DispatcherParams p;
  p.stage = stage;
  rd.get("theta", p.theta);
  rd.get("util_exp", p.util_exp);
  rd.get("monitor_interval", p.monitor_interval);
  rd.get("best_effort", p.best_effort);
  rd.get("tight_window", p.tight_window);
  rd.get("dispatch_cap", p.dispatch_cap);
  return p;
}

std::shared_ptr<GlobalPolicy> make_stage(const char* name, const std::string& stage, const ParamMap& params) {
  ParamReader rd(name, params);
  auto p = read_dispatcher(rd, stage);
  rd.finish();
  return std::make_shared<hfx::Dispatcher>(p, name);
}

}  // namespace

std::vector<RegistryEntry<GlobalPolicy>> hfx_global_policies() {
  return {
      {"hfx", "HFX Alg. 1 SLO-aware dispatcher: (TPOT, arrival) queue, maturity heap, Eq. 5 budget",
       [](const ParamMap& p) { return make_stage("hfx", "colocated", p); }},
      {"hfx_prefill", "HFX P-stage dispatcher: TTFT-ordered queue, maturity = end of the prefill batch",
       [](const ParamMap& p) { return make_stage("hfx_prefill", "prefill", p); }},
      {"hfx_migrator", "HFX D-stage migrator: TPOT budget of the decode batch, maturity = next iteration",
       [](const ParamMap& p) { return make_stage("hfx_migrator", "decode", p); }},
      {"hfx_pm", "HFX-PM: Alg. 2 priority->SLO mapping in front of the Alg. 1 dispatcher",
       [](const ParamMap& p) {
         ParamReader rd("hfx_pm", p);
         std::string stage = "colocated";
         rd.get("stage", stage);
         auto dp = read_dispatcher(rd, stage);
         auto mp = hfx::read_mapper_params(rd);
         rd.finish();
         return std::make_shared<hfx::PmDispatcher>(dp, mp);
       }},
      {"scorpio", "SCORPIO-style baseline (HFX Sec. 7.4): RR + LDF TTFT guard + VBS TPOT guard",
       [](const ParamMap& p) {
         ParamReader("scorpio", p).finish();
         return std::make_shared<hfx::ScorpioPolicy>();
       }},
  };
}

}  // namespace slocore

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
