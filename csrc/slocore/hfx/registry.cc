// HFX GlobalPolicy entries: the Alg. 1 dispatcher (colocated), its P-stage and D-stage
// instances (HFX P/D extension, Sec. 3.3.1), HFX-PM and the SCORPIO-style baseline.
// HFX Scaler entries: the Alg. 3 threshold scaler with the three indicators of Sec. 3.3.3.
#include "slocore/core/families.h"
#include "slocore/hfx/dispatcher.h"
#include "slocore/hfx/pm_dispatcher.h"
#include "slocore/hfx/scaler.h"
#include "slocore/hfx/scorpio.h"

namespace slocore {

namespace {

// One dispatcher class, three stages: the stage is the registry name, not a parameter.
RegistryEntry<GlobalPolicy> stage(const char* name, const char* summary, Role role) {
  hfx::DispatcherParams defaults;
  defaults.role = role;
  return registered<GlobalPolicy, hfx::Dispatcher>(name, summary, defaults, [name](const hfx::DispatcherParams& p) {
    return std::make_shared<hfx::Dispatcher>(p, name);
  });
}

}  // namespace

std::vector<RegistryEntry<GlobalPolicy>> hfx_global_policies() {
  return {
      stage("hfx", "HFX Alg. 1 SLO-aware dispatcher: (TPOT, arrival) queue, maturity heap, Eq. 5 budget",
            Role::Colocated),
      stage("hfx_prefill", "HFX P-stage dispatcher: TTFT-ordered queue, maturity = end of the prefill batch",
            Role::Prefill),
      stage("hfx_migrator", "HFX D-stage migrator: TPOT budget of the decode batch, maturity = next iteration",
            Role::Decode),
      registered<GlobalPolicy, hfx::PmDispatcher>(
          "hfx_pm", "HFX-PM: Alg. 2 priority->SLO mapping in front of the Alg. 1 dispatcher", hfx::PmParams{}),
      registered<GlobalPolicy, hfx::ScorpioPolicy>(
          "scorpio", "SCORPIO-style baseline (HFX Sec. 7.4): RR + LDF TTFT guard + VBS TPOT guard"),
  };
}

std::vector<RegistryEntry<Scaler>> hfx_scalers() {
  return {
      registered<Scaler, hfx::HfxScaler>(
          "hfx", "HFX Alg. 3 scaler: rate ratio over 10 s, SLO-normalised wait, KV load; P/D role switching",
          hfx::ScalerParams{}),
  };
}

}  // namespace slocore
