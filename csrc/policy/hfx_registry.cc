// HFX GlobalPolicy entries: the Alg. 1 dispatcher (colocated), its P-stage and D-stage
// instances (Sec. 3.3.1 of 002_408d77c14f04127d.txt), HFX-PM and the SCORPIO-style baseline.
#include "families.h"
#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/pm_dispatcher.h"
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
