// The router's data path (csrc/slocore/serve): a prompt's token ids read once per request.
#include <vector>

#include "bindings.h"
#include "slocore/core/request.h"
#include "slocore/serve/token_prompt.h"

using namespace slocore;

void init_serve(py::module_& m) {
  m.def(
      "token_id_prompt",
      [](py::handle p, int block_size, int64_t max_blocks) -> py::object {
        // The Python list is read here, item by item, without building Python objects: any
        // item that is not an exact int (bool, float, str, an int subclass) or does not fit
        // 64 bits gives None, and the caller decides the slow way.
        if (!PyList_Check(p.ptr())) return py::none();
        const Py_ssize_t n = PyList_GET_SIZE(p.ptr());
        if (n == 0) return py::none();
        std::vector<int64_t> ids(static_cast<size_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
          PyObject* x = PyList_GET_ITEM(p.ptr(), i);
          if (!PyLong_CheckExact(x)) return py::none();
          int overflow = 0;
          const long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
          if (overflow != 0) return py::none();
          ids[static_cast<size_t>(i)] = static_cast<int64_t>(v);
        }
        const TokenPrompt tp = token_prompt(ids, block_size, max_blocks);
        py::list segs(tp.segments.size());
        for (size_t j = 0; j < tp.segments.size(); ++j)
          segs[j] = py::make_tuple(tp.segments[j].group, tp.segments[j].len);
        return py::make_tuple(tp.lo, tp.hi, segs);
      },
      py::arg("ids"), py::arg("block_size"), py::arg("max_blocks"),
      "(min id, max id, id_block_segments(ids, block_size, block_size, max_blocks)) of a non-empty list of "
      "exact ints that fit 64 bits, in one pass; None for anything else (serve/token_prompt.h)");
  m.def(
      "copy_request", [](const Request& r) { return Request(r); }, py::arg("request"),
      "a copy of `request`, every field (the router's attempt of a client request: no prefix list through Python)");
}
