// Bindings for csrc/slocore/sim: the simulator config, run (GIL released), and result.
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "bindings.h"
#include "slocore/core/errors.h"
#include "slocore/core/input_checks.h"
#include "slocore/sim/prefix_cache.h"
#include "slocore/sim/simulator.h"

using namespace slocore;
using namespace slocore::sim;

namespace {

template <class T>
using Col = py::array_t<T, py::array::c_style | py::array::forcecast>;

// Columns -> Requests in one pass (a 100k-request workload in milliseconds).
std::vector<Request> requests_from_columns(
    Col<int64_t> id, Col<double> arrival, Col<int64_t> prompt_len, Col<int64_t> output_len, Col<double> ttft,
    Col<double> tpot, Col<double> deadline, Col<int64_t> priority, Col<double> priority_weight, Col<double> utility,
    Col<int64_t> task, const std::vector<std::string>& task_names, std::optional<Col<int64_t>> prefix_offsets,
    std::optional<Col<uint64_t>> prefix_groups, std::optional<Col<int64_t>> prefix_lens) {
  const size_t n = size_t(arrival.size());
  for (auto* a : {&id, &prompt_len, &output_len, &priority, &task})
    require(size_t(a->size()) == n, "columns", "all columns need the same length");
  for (auto* a : {&ttft, &tpot, &deadline, &priority_weight, &utility})
    require(size_t(a->size()) == n, "columns", "all columns need the same length");
  const bool has_prefix = prefix_offsets.has_value();
  require(has_prefix == prefix_groups.has_value() && has_prefix == prefix_lens.has_value(), "prefix",
          "prefix_offsets, prefix_groups and prefix_lens go together");
  if (has_prefix) {
    require(size_t(prefix_offsets->size()) == n + 1, "prefix_offsets", "needs one more entry than rows");
    require(prefix_groups->size() == prefix_lens->size(), "prefix_groups", "needs as many entries as prefix_lens");
    require(prefix_offsets->at(0) == 0 && prefix_offsets->at(n) == prefix_lens->size(), "prefix_offsets",
            "must start at 0 and end at the number of segments");
  }
  std::vector<Request> out(n);
  for (size_t i = 0; i < n; ++i) {
    Request& r = out[i];
    r.id = id.at(i);
    r.arrival = arrival.at(i);
    r.prompt_len = prompt_len.at(i);
    r.output_len = output_len.at(i);
    r.slo.ttft = ttft.at(i);
    r.slo.tpot = tpot.at(i);
    if (!std::isnan(deadline.at(i))) r.slo.deadline = deadline.at(i);
    require(priority.at(i) >= 0 && priority.at(i) <= std::numeric_limits<int>::max(), "priority",
            "row " + std::to_string(i) + ": must be in [0, 2^31)");
    r.priority = int(priority.at(i));
    r.priority_weight = priority_weight.at(i);
    r.utility = utility.at(i);
    const int64_t t = task.at(i);
    require(t >= 0 && size_t(t) < task_names.size(), "task", "row " + std::to_string(i) + ": code out of range");
    r.task = task_names[size_t(t)];
    if (has_prefix) {
      const int64_t a = prefix_offsets->at(i), b = prefix_offsets->at(i + 1);
      require(a <= b && b <= prefix_lens->size(), "prefix_offsets", "row " + std::to_string(i) + ": must not decrease");
      for (int64_t k = a; k < b; ++k) r.prefix.push_back(PrefixSegment{prefix_groups->at(k), prefix_lens->at(k)});
    }
    try {
      validate(r);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("row " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

// One simulator engine driven from Python (the emulated engine of `slocore serve` steps it
// in real time): it owns its view; start() plans an iteration, finish() applies it.
struct SteppableEngine {
  std::unique_ptr<InstanceView> view;
  std::unique_ptr<Engine> engine;
};

std::unique_ptr<SteppableEngine> make_engine(const HardwareProfile& profile, std::shared_ptr<BatchScheduler> sched,
                                             Tokens max_batch_tokens, int max_num_seqs, int64_t kv_blocks,
                                             std::optional<LatencyCoeffs> belief, int correction_window,
                                             double noise_sigma, uint64_t seed, Role role, bool processor_sharing,
                                             bool online_fit) {
  profile.validate();
  require(max_batch_tokens >= 1, "max_batch_tokens", "must be >= 1");
  require(max_num_seqs >= 1, "max_num_seqs", "must be >= 1");
  require(correction_window >= 0, "correction_window", "must be >= 0");
  require_nonneg(noise_sigma, "noise_sigma");
  if (belief) belief->validate();
  auto out = std::make_unique<SteppableEngine>();
  out->view = std::make_unique<InstanceView>();  // set up as the simulator's add_engine does
  InstanceView& v = *out->view;
  v.role = role;
  v.kv_blocks_total = v.kv_blocks_free = kv_blocks > 0 ? kv_blocks : profile.kv_blocks;
  v.block_size = profile.block_size;
  v.max_batch_tokens = max_batch_tokens;
  v.max_num_seqs = max_num_seqs;
  v.model = LatencyModel(belief.value_or(profile.coeffs));
  out->engine =
      std::make_unique<Engine>(&v, profile, std::move(sched), processor_sharing, noise_sigma, seed, correction_window);
  if (online_fit) out->engine->enable_online_fit();
  out->engine->state = EngineState::Active;
  return out;
}

// Size limits checked before the run allocates instances or starts sampling: a typo such as
// instances=2**31-1 or timeline_interval_s=1e-9 is a ValueError, not hours of work.
void check_sim_limits(const std::vector<Request>& requests, const SimConfig& cfg) {
  for (auto [v, field] : {std::pair{cfg.instances, "instances"}, std::pair{cfg.prefill_instances, "prefill_instances"},
                          std::pair{cfg.decode_instances, "decode_instances"},
                          std::pair{cfg.max_instances, "max_instances"}, std::pair{cfg.min_instances, "min_instances"}})
    require(v <= kMaxSimInstances, field,
            "must be <= " + std::to_string(kMaxSimInstances) + ", got " + std::to_string(v));
  require(cfg.max_batch_tokens <= kMaxTokens, "max_batch_tokens", "must be <= 2^40");
  require_finite(cfg.stall_timeout_s, "stall_timeout_s");
  require(!std::isnan(cfg.max_time), "max_time", "must not be NaN");
  // Periodic events run from 0 to about the last arrival plus the stall window.
  Time horizon = cfg.stall_timeout_s;
  for (const Request& r : requests) horizon = std::max(horizon, r.arrival + cfg.stall_timeout_s);
  horizon = std::min(horizon, cfg.max_time);
  auto check_period = [&](double period, const char* field) {
    require(std::isfinite(period) && period >= kMinIntervalS, field,
            "must be finite and >= " + std::to_string(kMinIntervalS) + " s, got " + std::to_string(period));
    require(horizon / period <= kMaxTimelinePoints, field,
            "too short for a run of ~" + std::to_string(horizon) + " s (more than " +
                std::to_string(int64_t(kMaxTimelinePoints)) + " periods)");
  };
  check_period(cfg.timeline_interval_s, "timeline_interval_s");
  if (cfg.scaler) check_period(cfg.scaler->interval(), "scaler.interval");
}

py::dict stats_dict(const SimStats& s) {
  py::dict d;
  d["events"] = s.events;
  d["iterations"] = s.iterations;
  d["preemptions"] = s.preemptions;
  d["plan_violations"] = s.plan_violations;
  d["polls"] = s.polls;
  d["stalled"] = s.stalled;
  d["rejected_capacity"] = s.rejected_capacity;
  d["scale_outs"] = s.scale_outs;
  d["scale_ins"] = s.scale_ins;
  d["role_switches"] = s.role_switches;
  d["max_instances"] = s.max_instances;
  d["prefix_hit_tokens"] = s.prefix_hit_tokens;
  d["prefix_query_tokens"] = s.prefix_query_tokens;
  d["steps_ahead"] = s.steps_ahead;
  d["end_time"] = s.end_time;
  return d;
}

}  // namespace

void init_sim(py::module_& m) {
  py::class_<SimConfig>(m, "SimConfig")
      .def(py::init<>())
      .def_readwrite("profile", &SimConfig::profile)
      .def_readwrite("instance_profiles", &SimConfig::instance_profiles)
      .def_readwrite("prefill_profiles", &SimConfig::prefill_profiles)
      .def_readwrite("decode_profiles", &SimConfig::decode_profiles)
      .def_readwrite("scale_profiles", &SimConfig::scale_profiles)
      .def_readwrite("prefix_caching", &SimConfig::prefix_caching)
      .def_readwrite("belief", &SimConfig::belief)
      .def_readwrite("belief_scale", &SimConfig::belief_scale)
      .def_readwrite("belief_noise", &SimConfig::belief_noise)
      .def_readwrite("noise_sigma", &SimConfig::noise_sigma)
      .def_readwrite("disaggregated", &SimConfig::disaggregated)
      .def_readwrite("instances", &SimConfig::instances)
      .def_readwrite("prefill_instances", &SimConfig::prefill_instances)
      .def_readwrite("decode_instances", &SimConfig::decode_instances)
      .def_readwrite("max_instances", &SimConfig::max_instances)
      .def_readwrite("min_instances", &SimConfig::min_instances)
      .def_readwrite("max_batch_tokens", &SimConfig::max_batch_tokens)
      .def_readwrite("max_num_seqs", &SimConfig::max_num_seqs)
      .def_readwrite("global_policy", &SimConfig::global_policy)
      .def_readwrite("prefill_policy", &SimConfig::prefill_policy)
      .def_readwrite("decode_policy", &SimConfig::decode_policy)
      .def_readwrite("batch_scheduler", &SimConfig::batch_scheduler)
      .def_readwrite("decode_batch_scheduler", &SimConfig::decode_batch_scheduler)
      .def_readwrite("scaler", &SimConfig::scaler)
      .def_readwrite("cold_start_s", &SimConfig::cold_start_s)
      .def_readwrite("role_switch_s", &SimConfig::role_switch_s)
      .def_readwrite("processor_sharing", &SimConfig::processor_sharing)
      .def_readwrite("pd_first_token_at_decode", &SimConfig::pd_first_token_at_decode)
      .def_readwrite("correction_window", &SimConfig::correction_window)
      .def_readwrite("online_fit", &SimConfig::online_fit)
      .def_readwrite("timeline_interval_s", &SimConfig::timeline_interval_s)
      .def_readwrite("max_time", &SimConfig::max_time)
      .def_readwrite("stall_timeout_s", &SimConfig::stall_timeout_s)
      .def_readwrite("seed", &SimConfig::seed)
      .def("validate", &SimConfig::validate);

  py::class_<TimelinePoint>(m, "TimelinePoint")
      .def_readonly("t", &TimelinePoint::t)
      .def_readonly("colocated", &TimelinePoint::colocated)
      .def_readonly("prefill", &TimelinePoint::prefill)
      .def_readonly("decode", &TimelinePoint::decode)
      .def_readonly("starting", &TimelinePoint::starting)
      .def_readonly("queued", &TimelinePoint::queued)
      .def_readonly("waiting", &TimelinePoint::waiting)
      .def_readonly("running", &TimelinePoint::running);

  py::class_<SimResult>(m, "SimResult")
      .def_readonly("recorder", &SimResult::recorder)
      .def_property_readonly("stats", [](const SimResult& r) { return stats_dict(r.stats); })
      .def_property_readonly("timeline", [](const SimResult& r) { return r.stats.timeline; });

  py::class_<SteppableEngine>(m, "EngineModel",
                              "One simulator engine (csrc/slocore/sim/engine.h) stepped by the caller: same "
                              "planning, plan sanitising, online correction, on_batch_done and iteration times.")
      .def(py::init(&make_engine), py::arg("profile"), py::arg("scheduler"), py::arg("max_batch_tokens") = 8192,
           py::arg("max_num_seqs") = 256, py::arg("kv_blocks") = 0, py::arg("belief") = py::none(),
           py::arg("correction_window") = 32, py::arg("noise_sigma") = 0.0, py::arg("seed") = 0,
           py::arg_v("role", Role::Colocated, "Role.COLOCATED"), py::arg("processor_sharing") = false,
           py::arg("online_fit") = false)
      .def(
          "add", [](SteppableEngine& e, RequestState s) { e.engine->enqueue(std::move(s)); }, py::arg("state"),
          "Queue a request (waiting) on the engine.")
      .def(
          "start", [](SteppableEngine& e, Time now) { return e.engine->start(now); }, py::arg("now"),
          "Plan the next iteration at `now`; its duration in seconds, < 0 when nothing can run.")
      .def(
          "finish",
          [](SteppableEngine& e, Time now) {
            const IterationOutcome& o = e.engine->finish(now);
            std::vector<std::pair<Id, Tokens>> tokens;
            for (const auto& t : o.tokens) tokens.emplace_back(t.request, t.generated);
            std::vector<Id> finished, handed_off;
            for (const RequestState& s : o.finished) finished.push_back(s.request.id);
            for (const RequestState& s : o.handed_off) handed_off.push_back(s.request.id);
            return py::make_tuple(tokens, finished, handed_off);
          },
          py::arg("now"), "End the iteration at `now`: ([(request, generated)], finished ids, handed-off ids).")
      .def(
          "cancel", [](SteppableEngine& e, Id r, Time now) { return e.engine->cancel(r, now); }, py::arg("request"),
          py::arg("now"))
      .def_property_readonly("plan", [](const SteppableEngine& e) { return e.engine->plan(); })
      .def_property_readonly(
          "view", [](const SteppableEngine& e) -> const InstanceView& { return *e.view; },
          py::return_value_policy::reference_internal)
      .def_property_readonly("busy", [](const SteppableEngine& e) { return e.engine->busy(); })
      .def_property_readonly("has_work", [](const SteppableEngine& e) { return e.engine->has_work(); })
      .def_property_readonly("iterations", [](const SteppableEngine& e) { return e.engine->iterations(); })
      .def_property_readonly("preemptions", [](const SteppableEngine& e) { return e.engine->preemptions(); })
      .def_property_readonly("violations", [](const SteppableEngine& e) { return int64_t(e.engine->violations()); });

  m.def("requests_from_columns", &requests_from_columns, py::arg("id"), py::arg("arrival"), py::arg("prompt_len"),
        py::arg("output_len"), py::arg("ttft"), py::arg("tpot"), py::arg("deadline"), py::arg("priority"),
        py::arg("priority_weight"), py::arg("utility"), py::arg("task"), py::arg("task_names"),
        py::arg("prefix_offsets") = py::none(), py::arg("prefix_groups") = py::none(),
        py::arg("prefix_lens") = py::none());
  py::class_<PrefixCache, PrefixLookup, std::shared_ptr<PrefixCache>>(
      m, "PrefixCache", "one engine's block-level prefix cache (csrc/slocore/sim/prefix_cache.h)")
      .def(py::init<>())
      .def("match_blocks", &PrefixCache::match_blocks, py::arg("chain"))
      .def("acquire", py::overload_cast<uint64_t>(&PrefixCache::acquire), py::arg("h"))
      .def("release", py::overload_cast<uint64_t>(&PrefixCache::release), py::arg("h"))
      .def("insert", &PrefixCache::insert, py::arg("h"))
      .def("evict_lru", &PrefixCache::evict_lru)
      .def("refs", &PrefixCache::refs, py::arg("h"))
      .def("free_queue", &PrefixCache::free_queue)
      .def_property_readonly("cached_free", &PrefixCache::cached_free)
      .def_property_readonly("evictions", &PrefixCache::evictions)
      .def("__len__", &PrefixCache::size);
  m.def(
      "simulate",
      [](const std::vector<Request>& requests, const SimConfig& cfg) {
        cfg.validate();
        check_sim_limits(requests, cfg);
        py::gil_scoped_release release;  // Python policies re-acquire it per call
        try {
          return simulate(requests, cfg);
        } catch (const py::cast_error& e) {  // a Python factory or policy returned the wrong type
          throw py::type_error(std::string("simulate: a Python callback returned the wrong type: ") + e.what());
        }
      },
      py::arg("requests"), py::arg("config"), "Run the discrete-event simulation (see csrc/slocore/sim/simulator.h).");
}
