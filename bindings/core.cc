// Bindings for csrc/slocore/core: Request, InstanceView, latency models, recorder, metrics, fit.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/core/block_set.h"
#include "slocore/core/errors.h"
#include "slocore/core/fit.h"
#include "slocore/core/input_checks.h"
#include "slocore/core/instance_view.h"
#include "slocore/core/metrics.h"
#include "slocore/core/online_fit.h"
#include "slocore/core/prefix.h"
#include "slocore/core/profile.h"
#include "slocore/core/recorder.h"

using namespace slocore;

namespace {

std::string request_repr(const Request& r) {
  return "Request(id=" + std::to_string(r.id) + ", arrival=" + std::to_string(r.arrival) +
         ", prompt_len=" + std::to_string(r.prompt_len) + ", task='" + r.task + "')";
}

py::dict distribution_dict(const Distribution& d, const std::vector<double>& qs) {
  py::dict out;
  out["count"] = d.count;
  out["mean"] = d.mean;
  out["max"] = d.max;
  for (size_t i = 0; i < qs.size(); ++i) {
    // p50, p90, p99, p99.9
    char name[32];
    std::snprintf(name, sizeof name, "p%g", qs[i] * 100.0);
    out[name] = d.quantiles[i];
  }
  return out;
}

}  // namespace

void init_core(py::module_& m) {
  py::enum_<Role>(m, "Role")
      .value("COLOCATED", Role::Colocated)
      .value("PREFILL", Role::Prefill)
      .value("DECODE", Role::Decode);
  py::enum_<Outcome>(m, "Outcome")
      .value("PENDING", Outcome::Pending)
      .value("FINISHED", Outcome::Finished)
      .value("REJECTED", Outcome::Rejected);

  py::class_<Slo>(m, "Slo")
      .def(py::init([](double ttft, double tpot, std::optional<double> deadline) {
             Slo s{ttft, tpot, deadline};
             return s;
           }),
           py::arg("ttft") = kNever, py::arg("tpot") = kNever, py::arg("deadline") = py::none())
      .def_readwrite("ttft", &Slo::ttft)
      .def_readwrite("tpot", &Slo::tpot)
      .def_readwrite("deadline", &Slo::deadline);

  py::class_<Request>(m, "Request")
      .def(py::init([](Id id, Time arrival, Tokens prompt_len, std::optional<Tokens> output_len,
                       std::optional<Tokens> expected_output_len, std::optional<Tokens> max_output_len, double ttft,
                       double tpot, std::optional<double> deadline, int priority, double priority_weight,
                       double utility, std::string task, std::vector<std::pair<uint64_t, Tokens>> prefix) {
             Request r;
             for (const auto& [g, n] : prefix) r.prefix.push_back(PrefixSegment{g, n});
             r.id = id;
             r.arrival = arrival;
             r.prompt_len = prompt_len;
             r.output_len = output_len;
             r.expected_output_len = expected_output_len;
             r.max_output_len = max_output_len;
             r.slo = Slo{ttft, tpot, deadline};
             r.priority = priority;
             r.priority_weight = priority_weight;
             r.utility = utility;
             r.task = std::move(task);
             validate(r);
             return r;
           }),
           py::arg("id"), py::arg("arrival"), py::arg("prompt_len"), py::kw_only(), py::arg("output_len") = py::none(),
           py::arg("expected_output_len") = py::none(), py::arg("max_output_len") = py::none(),
           py::arg("ttft") = kNever, py::arg("tpot") = kNever, py::arg("deadline") = py::none(),
           py::arg("priority") = 0, py::arg("priority_weight") = 1.0, py::arg("utility") = 1.0, py::arg("task") = "",
           py::arg("prefix") = std::vector<std::pair<uint64_t, Tokens>>{})
      .def_readwrite("id", &Request::id)
      .def_readwrite("arrival", &Request::arrival)
      .def_readwrite("prompt_len", &Request::prompt_len)
      .def_readwrite("output_len", &Request::output_len)
      .def_readwrite("expected_output_len", &Request::expected_output_len)
      .def_readwrite("max_output_len", &Request::max_output_len)
      .def_readwrite("slo", &Request::slo)
      .def_readwrite("priority", &Request::priority)
      .def_readwrite("priority_weight", &Request::priority_weight)
      .def_readwrite("utility", &Request::utility)
      .def_readwrite("task", &Request::task)
      .def_property(
          "prefix",
          [](const Request& r) {
            std::vector<std::pair<uint64_t, Tokens>> out;
            for (const PrefixSegment& g : r.prefix) out.emplace_back(g.group, g.len);
            return out;
          },
          [](Request& r, const std::vector<std::pair<uint64_t, Tokens>>& segs) {
            r.prefix.clear();
            for (const auto& [g, n] : segs) r.prefix.push_back(PrefixSegment{g, n});
          },
          "prompt segments (group, len) of shared texts (core/prefix.h); empty: no identity")
      .def_property_readonly("realtime", &Request::realtime)
      .def("validate", [](const Request& r) { validate(r); })
      .def("__repr__", &request_repr);

  py::class_<RequestState>(m, "RequestState")
      .def(py::init([](const Request& r, Tokens computed, Tokens generated) {
             RequestState s;
             s.request = r;
             s.computed = computed;
             s.generated = generated;
             return s;
           }),
           py::arg("request"), py::arg("computed") = 0, py::arg("generated") = 0)
      .def_readwrite("request", &RequestState::request)
      .def_readwrite("computed", &RequestState::computed)
      .def_property_readonly("num_tokens", &RequestState::num_tokens)
      .def_property_readonly("to_compute", &RequestState::to_compute)
      .def_readwrite("generated", &RequestState::generated)
      .def_readwrite("cached", &RequestState::cached)
      .def_readwrite("shared", &RequestState::shared)
      .def_readwrite("first_token", &RequestState::first_token)
      .def_readwrite("last_token", &RequestState::last_token)
      .def_property_readonly("context_len", &RequestState::context_len)
      .def_property_readonly("in_prefill", &RequestState::in_prefill);

  py::class_<LatencyCoeffs>(m, "LatencyCoeffs")
      .def(py::init([](double t_c, double a_p, double b_p, double c_p, double a_d, double b_d) {
             LatencyCoeffs c{t_c, a_p, b_p, c_p, a_d, b_d};
             c.validate();
             return c;
           }),
           py::arg("t_c") = 0.0, py::arg("a_p") = 0.0, py::arg("b_p") = 0.0, py::arg("c_p") = 0.0, py::arg("a_d") = 0.0,
           py::arg("b_d") = 0.0)
      .def_readwrite("t_c", &LatencyCoeffs::t_c)
      .def_readwrite("a_p", &LatencyCoeffs::a_p)
      .def_readwrite("b_p", &LatencyCoeffs::b_p)
      .def_readwrite("c_p", &LatencyCoeffs::c_p)
      .def_readwrite("a_d", &LatencyCoeffs::a_d)
      .def_readwrite("b_d", &LatencyCoeffs::b_d)
      .def("validate", &LatencyCoeffs::validate);

  py::class_<BatchItem>(m, "BatchItem")
      .def(py::init([](Tokens lq, Tokens lkv, bool prefill) {
             return BatchItem{lq, lkv, prefill};
           }),
           py::arg("lq") = 1, py::arg("lkv") = 0, py::arg("prefill") = false)
      .def_readwrite("lq", &BatchItem::lq)
      .def_readwrite("lkv", &BatchItem::lkv)
      .def_readwrite("prefill", &BatchItem::prefill);

  py::class_<LatencyModel>(m, "LatencyModel")
      .def(py::init<>())
      .def(py::init<const LatencyCoeffs&, double>(), py::arg("coeffs"), py::arg("theta") = 0.9)
      .def_property_readonly("coeffs", &LatencyModel::coeffs)
      .def_property_readonly("theta", &LatencyModel::theta)
      .def_property_readonly("correction", &LatencyModel::correction)
      .def(
          "prefill_cost",
          [](const LatencyModel& m, Tokens lq, Tokens lkv) {
            check_tokens(lq, "lq");
            check_tokens(lkv, "lkv");
            return m.prefill_cost(lq, lkv);
          },
          py::arg("lq"), py::arg("lkv") = 0)
      .def(
          "decode_cost",
          [](const LatencyModel& m, Tokens lkv) {
            check_tokens(lkv, "lkv");
            return m.decode_cost(lkv);
          },
          py::arg("lkv"))
      .def("overhead", &LatencyModel::overhead)
      .def(
          "batch_time",
          [](const LatencyModel& m, const std::vector<BatchItem>& items) {
            for (const BatchItem& it : items) {
              check_tokens(it.lq, "items.lq");
              check_tokens(it.lkv, "items.lkv");
            }
            return m.batch_time(items);
          },
          py::arg("items"))
      .def(
          "stage_prefill",
          [](const LatencyModel& m, double sum_len, double sum_len_sq) {
            check_duration(sum_len, "sum_len");
            check_duration(sum_len_sq, "sum_len_sq");
            return m.stage_prefill(sum_len, sum_len_sq);
          },
          py::arg("sum_len"), py::arg("sum_len_sq"))
      .def(
          "stage_decode",
          [](const LatencyModel& m, double sum_cur_len, double batch) {
            check_duration(sum_cur_len, "sum_cur_len");
            check_duration(batch, "batch");
            return m.stage_decode(sum_cur_len, batch);
          },
          py::arg("sum_cur_len"), py::arg("batch"))
      .def("observe", &LatencyModel::observe, py::arg("real_s"), py::arg("predicted_s"))
      .def("update", &LatencyModel::update)
      .def("set_correction", &LatencyModel::set_correction, py::arg("beta"))
      .def("set_coeffs", &LatencyModel::set_coeffs, py::arg("coeffs"));

  py::class_<OnlineFit>(m, "OnlineFit",
                        "Online refit of the latency coefficients from observed iterations "
                        "(csrc/slocore/core/online_fit.h)")
      .def(py::init<const LatencyCoeffs&, double, double>(), py::arg("prior"), py::arg("forget") = 0.997,
           py::arg("ridge") = 0.1)
      .def_static(
          "features",
          [](const std::vector<BatchItem>& items) {
            for (const BatchItem& it : items) {
              check_tokens(it.lq, "items.lq");
              check_tokens(it.lkv, "items.lkv");
            }
            return OnlineFit::features(items);
          },
          py::arg("items"))
      .def("observe", &OnlineFit::observe, py::arg("x"), py::arg("real_s"))
      .def("solve", &OnlineFit::solve)
      .def_property_readonly("observations", &OnlineFit::observations);

  py::class_<BatchLatencyCurve>(m, "BatchLatencyCurve")
      .def(py::init<std::vector<double>, std::vector<double>>(), py::arg("batch_sizes"), py::arg("latencies"))
      .def_static(
          "from_model",
          [](const LatencyModel& m, Tokens ctx, int max_batch) {
            check_tokens(ctx, "ctx");
            require(max_batch >= 1 && max_batch <= kMaxCurvePoints, "max_batch",
                    "must be in [1, " + std::to_string(kMaxCurvePoints) + "], got " + std::to_string(max_batch));
            return BatchLatencyCurve::from_model(m, ctx, max_batch);
          },
          py::arg("model"), py::arg("ctx"), py::arg("max_batch"))
      .def(
          "__call__",
          [](const BatchLatencyCurve& l, double b) {
            check_duration(b, "b");
            return l(b);
          },
          py::arg("b"))
      .def_property_readonly("batch_sizes", &BatchLatencyCurve::batch_sizes)
      .def_property_readonly("latencies", &BatchLatencyCurve::latencies);

  py::class_<ThroughputCurve>(m, "ThroughputCurve")
      .def(py::init<double, double, double, double>(), py::arg("a"), py::arg("b"), py::arg("c"),
           py::arg("floor_tps") = 1.0)
      .def(
          "total",
          [](const ThroughputCurve& c, double n) {
            check_duration(n, "n");
            return c.total(n);
          },
          py::arg("n"))
      .def(
          "per_request",
          [](const ThroughputCurve& c, double n) {
            check_duration(n, "n");
            return c.per_request(n);
          },
          py::arg("n"))
      .def_property_readonly("a", &ThroughputCurve::a)
      .def_property_readonly("b", &ThroughputCurve::b)
      .def_property_readonly("c", &ThroughputCurve::c);

  py::class_<ViewChanges>(m, "ViewChanges",
                          "what an engine changed in a view since it last called its scheduler "
                          "(the simulator's engine fills it; since_epoch 0: not known)")
      .def(py::init<>())
      .def_readwrite("since_epoch", &ViewChanges::since_epoch)
      .def_readwrite("preempted", &ViewChanges::preempted)
      .def_readwrite("admitted", &ViewChanges::admitted)
      .def_readwrite("progressed", &ViewChanges::progressed);

  py::class_<InstanceView>(m, "InstanceView")
      .def(py::init([](Id id, Role role) {
             InstanceView v;
             v.id = id;
             v.role = role;
             return v;
           }),
           py::arg("id"), py::arg_v("role", Role::Colocated, "Role.COLOCATED"))
      .def_readwrite("id", &InstanceView::id)
      .def_readwrite("role", &InstanceView::role)
      .def_readwrite("accepting", &InstanceView::accepting)
      .def_property(
          "running",
          [](const InstanceView& v) { return std::vector<RequestState>(v.running.begin(), v.running.end()); },
          [](InstanceView& v, const std::vector<RequestState>& r) { v.running.assign(r.begin(), r.end()); })
      .def_property(
          "waiting",
          [](const InstanceView& v) { return std::vector<RequestState>(v.waiting.begin(), v.waiting.end()); },
          [](InstanceView& v, const std::vector<RequestState>& w) { v.waiting.assign(w.begin(), w.end()); })
      .def_readwrite("kv_blocks_total", &InstanceView::kv_blocks_total)
      .def_readwrite("kv_blocks_free", &InstanceView::kv_blocks_free)
      .def_readwrite("block_size", &InstanceView::block_size)
      .def_readwrite("max_batch_tokens", &InstanceView::max_batch_tokens)
      .def_readwrite("max_num_seqs", &InstanceView::max_num_seqs)
      .def_readwrite("model", &InstanceView::model)
      .def_readwrite("busy_until", &InstanceView::busy_until)
      .def_readwrite("first_token_at_decode", &InstanceView::first_token_at_decode)
      .def_readwrite("epoch", &InstanceView::epoch)
      .def_readwrite("changes", &InstanceView::changes)
      .def_property_readonly("num_requests", &InstanceView::num_requests)
      .def_property_readonly("kv_utilization", &InstanceView::kv_utilization)
      .def(
          "blocks_for",
          [](const InstanceView& v, Tokens tokens) {
            require(v.block_size >= 1, "block_size", "must be >= 1, got " + std::to_string(v.block_size));
            check_tokens(tokens, "tokens");
            return v.blocks_for(tokens);
          },
          py::arg("tokens"))
      .def(
          "blocks_needed",
          [](const InstanceView& v, const RequestState& s, Tokens k, bool is_running) {
            require(v.block_size >= 1, "block_size", "must be >= 1, got " + std::to_string(v.block_size));
            check_tokens(k, "k");
            check_tokens(s.computed, "state.computed");
            return v.blocks_needed(s, k, is_running);
          },
          py::arg("state"), py::arg("k"), py::arg("is_running"))
      .def(
          "cached_prefix_tokens",
          [](const InstanceView& v, const Request& r, const std::string& source) {
            require(v.block_size >= 1, "block_size", "must be >= 1, got " + std::to_string(v.block_size));
            const auto chain = prompt_block_hashes(r, v.block_size);
            if (source == "precise") return v.precise_prefix_tokens(chain);
            if (source == "approximate") return v.approx_prefix_tokens(chain);
            require(source == "auto", "source", "must be auto, precise or approximate, got '" + source + "'");
            return v.cached_prefix_tokens(chain);
          },
          py::arg("request"), py::arg("source") = "auto",
          "leading prompt tokens of `request` this instance holds (precise: the engine's cache; "
          "approximate: what the router sent here; auto: precise when known)")
      .def_property(
          "prefix_cache", [](const InstanceView& v) { return std::const_pointer_cast<PrefixLookup>(v.prefix_cache); },
          [](InstanceView& v, std::shared_ptr<PrefixLookup> p) { v.prefix_cache = std::move(p); },
          "the engine's real prefix cache (precise), or None")
      .def_property(
          "prefix_index", [](const InstanceView& v) { return std::const_pointer_cast<PrefixLookup>(v.prefix_index); },
          [](InstanceView& v, std::shared_ptr<PrefixLookup> p) { v.prefix_index = std::move(p); },
          "the router's index of what it sent here (approximate), or None")
      .def("validate", &check_view, "ValueError naming the field unless the view is valid (also: request ids unique)");

  m.def("kv_transfer_time",
        py::overload_cast<const HardwareProfile&, const HardwareProfile&, Tokens>(&kv_transfer_time), py::arg("sender"),
        py::arg("receiver"), py::arg("tokens"),
        "seconds to move `tokens` tokens of KV between two instances (the slower link bounds it)");
  m.def("prefix_block_hashes", &prefix_block_hashes, py::arg("request"), py::arg("block_size"), py::arg("max_tokens"),
        "chained hashes of the full blocks among the first max_tokens identified tokens (core/prefix.h)");
  m.def("prompt_block_hashes", &prompt_block_hashes, py::arg("request"), py::arg("block_size"),
        "the chain a router looks up: full blocks of the first prompt_len - 1 tokens");
  m.def(
      "id_block_segments",
      [](const std::vector<int64_t>& ids, int ids_per_block, int tokens_per_block, int64_t max_blocks) {
        std::vector<std::pair<uint64_t, Tokens>> out;
        for (const PrefixSegment& g : id_block_segments(ids, ids_per_block, tokens_per_block, max_blocks))
          out.emplace_back(g.group, g.len);
        return out;
      },
      py::arg("ids"), py::arg("ids_per_block"), py::arg("tokens_per_block"), py::arg("max_blocks"),
      "prefix segments (group, len) of a prompt known by token ids or characters, one per block (core/prefix.h)");
  py::class_<PrefixLookup, std::shared_ptr<PrefixLookup>>(m, "PrefixLookup")
      .def("match_blocks", &PrefixLookup::match_blocks, py::arg("chain"));
  m.def(
      "match_blocks_many",
      [](const std::vector<std::shared_ptr<PrefixLookup>>& lookups, const std::vector<uint64_t>& chain) {
        std::vector<int64_t> out;
        out.reserve(lookups.size());
        for (const auto& l : lookups) out.push_back(l ? l->match_blocks(chain) : 0);
        return out;
      },
      py::arg("lookups"), py::arg("chain"), "leading blocks of `chain` each lookup holds (None: 0), one call");
  py::class_<BlockSet, PrefixLookup, std::shared_ptr<BlockSet>>(m, "BlockSet",
                                                                "an engine's reported cached blocks (precise)")
      .def(py::init<>())
      .def("match_blocks", &BlockSet::match_blocks, py::arg("chain"))
      .def("add", &BlockSet::add, py::arg("hashes"))
      .def("remove", &BlockSet::remove, py::arg("hashes"))
      .def("clear", &BlockSet::clear)
      .def("__len__", &BlockSet::size);
  py::class_<ApproxPrefixIndex, PrefixLookup, std::shared_ptr<ApproxPrefixIndex>>(m, "ApproxPrefixIndex")
      .def(py::init<int64_t>(), py::arg("capacity_blocks"))
      .def("match_blocks", &ApproxPrefixIndex::match_blocks, py::arg("chain"))
      .def("record", &ApproxPrefixIndex::record, py::arg("chain"))
      .def("__len__", &ApproxPrefixIndex::size)
      .def_property_readonly("capacity", &ApproxPrefixIndex::capacity);

  py::class_<TpsQuadratic>(m, "TpsQuadratic")
      .def(py::init([](double a, double b, double c) {
             return TpsQuadratic{a, b, c};
           }),
           py::arg("a"), py::arg("b"), py::arg("c"))
      .def_readwrite("a", &TpsQuadratic::a)
      .def_readwrite("b", &TpsQuadratic::b)
      .def_readwrite("c", &TpsQuadratic::c);

  py::class_<HardwareProfile>(m, "HardwareProfile")
      .def(py::init<>())
      .def_readwrite("name", &HardwareProfile::name)
      .def_readwrite("coeffs", &HardwareProfile::coeffs)
      .def_readwrite("kv_blocks", &HardwareProfile::kv_blocks)
      .def_readwrite("block_size", &HardwareProfile::block_size)
      .def_readwrite("kv_bytes_per_token", &HardwareProfile::kv_bytes_per_token)
      .def_readwrite("kv_bandwidth_bytes_per_s", &HardwareProfile::kv_bandwidth_bytes_per_s)
      .def_readwrite("kv_fixed_s", &HardwareProfile::kv_fixed_s)
      .def_readwrite("tps", &HardwareProfile::tps)
      .def_readwrite("cold_start_s", &HardwareProfile::cold_start_s)
      .def("validate", &HardwareProfile::validate)
      .def(
          "kv_transfer_time",
          [](const HardwareProfile& p, Tokens tokens) {
            require_nonneg(p.kv_bytes_per_token, "kv_bytes_per_token");
            require_nonneg(p.kv_bandwidth_bytes_per_s, "kv_bandwidth_bytes_per_s");
            require_nonneg(p.kv_fixed_s, "kv_fixed_s");
            check_tokens(tokens, "tokens");
            return p.kv_transfer_time(tokens);
          },
          py::arg("tokens"));

  py::class_<RequestRecord>(m, "RequestRecord")
      .def_readonly("request", &RequestRecord::request)
      .def_property_readonly(
          "token_times",
          [](const RequestRecord& r) { return py::array_t<double>(r.token_times.size(), r.token_times.data()); })
      .def_readonly("outcome", &RequestRecord::outcome)
      .def_readonly("end_time", &RequestRecord::end_time)
      .def_readonly("instance", &RequestRecord::instance)
      .def_readonly("reason", &RequestRecord::reason);

  py::class_<Recorder>(m, "Recorder")
      .def(py::init<>())
      .def("add", &Recorder::add, py::arg("request"))
      .def("token", &Recorder::token, py::arg("id"), py::arg("t"), py::arg("instance") = kNoInstance)
      .def("finish", &Recorder::finish, py::arg("id"), py::arg("t"))
      .def("reject", &Recorder::reject, py::arg("id"), py::arg("t"), py::arg("reason"))
      .def("add_instance_time", &Recorder::add_instance_time, py::arg("seconds"))
      .def("get", &Recorder::get, py::arg("id"), py::return_value_policy::copy)
      .def("__contains__", &Recorder::contains)
      .def("__len__", &Recorder::size)
      .def("records", [](const Recorder& r) { return r.records(); })
      .def_property_readonly("instance_seconds", &Recorder::instance_seconds)
      .def_property_readonly("total_tokens", &Recorder::total_tokens);

  py::class_<MetricsOptions>(m, "MetricsOptions")
      .def(py::init([](double w_prefill, double w_decode, double cost_unit_s, std::vector<double> quantiles,
                       double warmup_s) {
             MetricsOptions o{w_prefill, w_decode, cost_unit_s, std::move(quantiles), warmup_s};
             o.validate();
             return o;
           }),
           py::arg("w_prefill") = 1.0, py::arg("w_decode") = 1.0, py::arg("cost_unit_s") = 0.05,
           py::arg("quantiles") = std::vector<double>{0.5, 0.9, 0.99, 0.999}, py::arg("warmup_s") = 0.0)
      .def_readwrite("warmup_s", &MetricsOptions::warmup_s)
      .def_readwrite("w_prefill", &MetricsOptions::w_prefill)
      .def_readwrite("w_decode", &MetricsOptions::w_decode)
      .def_readwrite("cost_unit_s", &MetricsOptions::cost_unit_s)
      .def_readwrite("quantiles", &MetricsOptions::quantiles);

  py::class_<RequestMetrics>(m, "RequestMetrics")
      .def_readonly("id", &RequestMetrics::id)
      .def_readonly("ttft", &RequestMetrics::ttft)
      .def_readonly("tpot", &RequestMetrics::tpot)
      .def_readonly("e2e", &RequestMetrics::e2e)
      .def_readonly("tokens", &RequestMetrics::tokens)
      .def_readonly("ttft_met", &RequestMetrics::ttft_met)
      .def_readonly("tpot_met", &RequestMetrics::tpot_met)
      .def_readonly("deadline_met", &RequestMetrics::deadline_met)
      .def_readonly("slo_met", &RequestMetrics::slo_met)
      .def_readonly("tdg", &RequestMetrics::tdg)
      .def_readonly("tdg_ideal", &RequestMetrics::tdg_ideal);

  m.def(
      "request_metrics",
      [](const RequestRecord& rec, const MetricsOptions& opt) {
        opt.validate();
        return request_metrics(rec, opt);
      },
      py::arg("record"), py::arg_v("options", MetricsOptions{}, "MetricsOptions()"));

  m.def(
      "summarize",
      [](const Recorder& rec, const MetricsOptions& opt) {
        opt.validate();
        Summary s;
        {
          py::gil_scoped_release release;
          s = summarize(rec, opt);
        }
        py::dict d;
        d["requests"] = s.requests;
        d["finished"] = s.finished;
        d["rejected"] = s.rejected;
        d["attainment"] = s.attainment;
        d["ttft_attainment"] = s.ttft_attainment;
        d["tpot_attainment"] = s.tpot_attainment;
        d["ttft"] = distribution_dict(s.ttft, opt.quantiles);
        d["tpot"] = distribution_dict(s.tpot, opt.quantiles);
        d["tbt"] = distribution_dict(s.tbt, opt.quantiles);
        d["e2e"] = distribution_dict(s.e2e, opt.quantiles);
        d["output_tokens"] = s.output_tokens;
        d["duration_s"] = s.duration_s;
        d["throughput_tok_s"] = s.throughput_tok_s;
        d["tdg"] = s.tdg;
        d["tdg_ideal"] = s.tdg_ideal;
        d["tdg_ratio"] = s.tdg_ratio;
        d["miss_tdg_ratio"] = s.miss_tdg_ratio;
        d["instance_seconds"] = s.instance_seconds;
        d["cost_units"] = s.cost_units;
        d["attainment_by_task"] = s.attainment_by_task;
        d["attainment_by_priority"] = s.attainment_by_priority;
        d["count_by_task"] = s.count_by_task;
        d["count_by_priority"] = s.count_by_priority;
        return d;
      },
      py::arg("recorder"), py::arg_v("options", MetricsOptions{}, "MetricsOptions()"),
      "Summary metrics of a recorder as a dict (one definition each; see metrics.h).");

  py::class_<FitResult>(m, "FitResult")
      .def_readonly("coeffs", &FitResult::coeffs)
      .def_readonly("rms_rel_error", &FitResult::rms_rel_error)
      .def_readonly("max_rel_error", &FitResult::max_rel_error);
  m.def("fit_relative_least_squares", &fit_relative_least_squares, py::arg("X"), py::arg("y"),
        "Least squares on relative error (HFX appendix A).");
}
