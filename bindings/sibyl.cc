// SIBYL: standalone survival estimator and projected-load table (calibration studies,
// differential tests). The policy itself comes from the registry ("sibyl").
#include <pybind11/stl.h>

#include "bindings.h"
#include "slocore/core/input_checks.h"
#include "slocore/sibyl/projected_load.h"

using namespace slocore;
using namespace slocore::sibyl;

void init_sibyl(py::module_& m) {
  py::class_<SurvivalEstimator>(m, "SurvivalEstimator",
                                "SIBYL Eq. 3-4: bucketed EMA survival function, O(log B) update")
      .def(py::init<Tokens, double, Tokens>(), py::arg("bucket") = 64, py::arg("alpha") = 0.99,
           py::arg("max_len") = 32768)
      .def("observe", &SurvivalEstimator::observe, py::arg("final_len"))
      .def("survival", &SurvivalEstimator::survival, py::arg("length"))
      .def("conditional", &SurvivalEstimator::conditional, py::arg("l_from"), py::arg("l_to"))
      .def("values", &SurvivalEstimator::values)
      .def_property_readonly("bucket", &SurvivalEstimator::bucket)
      .def_property_readonly("alpha", &SurvivalEstimator::alpha)
      .def_property_readonly("buckets", &SurvivalEstimator::buckets)
      .def_property_readonly("observations", &SurvivalEstimator::observations);

  py::class_<ProjectedLoad>(m, "SibylProjectedLoad",
                            "SIBYL Eq. 1/6-8: the request table and the projected load per decode instance")
      .def(py::init([](Tokens bucket, double alpha, Tokens max_len, double v_sys_init, bool prob, bool type1,
                       bool type2, bool type3, bool reqlevel) {
             Options o;
             o.bucket = bucket, o.alpha = alpha, o.max_len = max_len, o.v_sys_init = v_sys_init;
             o.prob = prob, o.type1 = type1, o.type2 = type2, o.type3 = type3, o.reqlevel = reqlevel;
             return ProjectedLoad(o);
           }),
           py::arg("bucket") = 64, py::arg("alpha") = 0.99, py::arg("max_len") = 32768, py::arg("v_sys_init") = 30.0,
           py::arg("prob") = true, py::arg("type1") = true, py::arg("type2") = true, py::arg("type3") = true,
           py::arg("reqlevel") = false)
      .def(
          "assign",
          [](ProjectedLoad& p, Id request, Id instance, Tokens prompt_len, Time tau) {
            check_id(instance, "instance");
            check_tokens(prompt_len, "prompt_len");
            check_time(tau, "tau");
            p.assign(request, instance, prompt_len, tau);
          },
          py::arg("request"), py::arg("instance"), py::arg("prompt_len"), py::arg("tau"))
      .def(
          "set_handoff",
          [](ProjectedLoad& p, Id request, Time tau) {
            check_time(tau, "tau");
            p.set_handoff(request, tau);
          },
          py::arg("request"), py::arg("tau"))
      .def(
          "token",
          [](ProjectedLoad& p, Id request, Tokens generated, Time now) {
            check_tokens(generated, "generated");
            check_time(now, "now");
            p.token(request, generated, now);
          },
          py::arg("request"), py::arg("generated"), py::arg("now"))
      .def("finish", &ProjectedLoad::finish, py::arg("request"))
      .def("forget", &ProjectedLoad::forget, py::arg("request"))
      .def("tracks", &ProjectedLoad::tracks, py::arg("request"))
      .def("__len__", &ProjectedLoad::size)
      .def("v_sys", &ProjectedLoad::v_sys)
      .def(
          "load",
          [](const ProjectedLoad& p, Id inst, Time now, Time tau) {
            check_time(now, "now");
            check_time(tau, "tau");
            return p.load(inst, now, tau);
          },
          py::arg("instance"), py::arg("now"), py::arg("tau"))
      .def(
          "terms",
          [](const ProjectedLoad& p, Id inst, Time now, Time tau) {
            check_time(now, "now");
            check_time(tau, "tau");
            const LoadTerms t = p.terms(inst, now, tau);
            return py::make_tuple(t.type1, t.type2, t.type3);
          },
          py::arg("instance"), py::arg("now"), py::arg("tau"))
      .def(
          "argmin",
          [](const ProjectedLoad& p, const std::vector<Id>& inst, Time now, Time tau) {
            check_time(now, "now");
            check_time(tau, "tau");
            std::vector<double> loads;
            const int i = p.argmin(inst, now, tau, &loads);
            return py::make_tuple(i, loads);
          },
          py::arg("instances"), py::arg("now"), py::arg("tau"))
      .def(
          "choose",
          [](const ProjectedLoad& p, const std::vector<Id>& inst, Time now, Time tau) {
            check_time(now, "now");
            check_time(tau, "tau");
            return p.argmin(inst, now, tau);  // as a decision: each load summed until it cannot win
          },
          py::arg("instances"), py::arg("now"), py::arg("tau"),
          "argmin's index as SIBYL's decision computes it, without the loads")
      .def_property_readonly(
          "estimator", [](ProjectedLoad& p) -> const SurvivalEstimator& { return p.estimator(); },
          py::return_value_policy::reference_internal);
}
