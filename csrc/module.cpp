// ov_autoplace._native: the hot, stable parts (graph walking, HETERO's split, timing) in C++.
// Everything else (policy, config, orchestration) stays in Python.
#include <pybind11/pybind11.h>

#include <algorithm>

#include <openvino/core/version.hpp>

#include "conduit.hpp"
#include "graph_extract.hpp"
#include "hetero_split.hpp"
#include "latency_timer.hpp"

namespace py = pybind11;

namespace {
// component_roots(u, v, out): every node's component root (its component's lowest member) into `out` (int64 [n]) for
// the undirected edges (u[k], v[k]) (int64, contiguous): a union-find that links the larger root under the smaller,
// so every pointer only decreases and one ascending pass leaves each node on its root. A raw CPython function, not a
// pybind11 binding: pybind11's per-signature dispatch code would cost ~1.4 KB of the wheel's bound for this loop.
PyObject* component_roots(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    Py_buffer b[3] = {};
    int got = 0;
    while (nargs == 3 && got < 3 &&
           !PyObject_GetBuffer(args[got], &b[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 2 ? PyBUF_WRITABLE : 0)))
        ++got;
    bool ok = got == 3 && b[0].len == b[1].len;
    for (int k = 0; ok && k < 3; ++k)
        ok = b[k].itemsize == 8 && b[k].format && (b[k].format[0] == 'l' || b[k].format[0] == 'q');
    const int64_t n = ok ? b[2].len / 8 : 0, edges = ok ? b[0].len / 8 : 0;
    auto *u = static_cast<int64_t*>(b[0].buf), *v = static_cast<int64_t*>(b[1].buf);
    auto* parent = static_cast<int64_t*>(b[2].buf);
    for (int64_t k = 0; ok && k < edges; ++k) ok = u[k] >= 0 && u[k] < n && v[k] >= 0 && v[k] < n;
    if (ok) {
        for (int64_t x = 0; x < n; ++x) parent[x] = x;
        auto root = [parent](int64_t x) {
            while (parent[x] != x) x = parent[x] = parent[parent[x]];
            return x;
        };
        for (int64_t k = 0; k < edges; ++k) {
            const int64_t a = root(u[k]), c = root(v[k]);
            parent[std::max(a, c)] = std::min(a, c);
        }
        for (int64_t x = 0; x < n; ++x) parent[x] = parent[parent[x]];
    }
    for (int k = 0; k < got; ++k) PyBuffer_Release(&b[k]);
    if (ok) Py_RETURN_NONE;
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "component_roots(u, v, out): int64 arrays, u and v alike, ends in [0, len(out))");
    return nullptr;
}
PyMethodDef raw_methods[] = {
    {"component_roots", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(component_roots)), METH_FASTCALL,
     nullptr},
    {nullptr, nullptr, 0, nullptr}};
}  // namespace

PYBIND11_MODULE(_native, m) {
    PyModule_AddFunctions(m.ptr(), raw_methods);
    m.doc() = "Native graph extraction and latency timing for ov_autoplace (private; use the Python API).";

    m.def(
        "extract_graph",
        [](py::handle model, int pos_dim, int fractal_radius) {
            auto& ov_model = ov_autoplace::borrow_ov_object<ov::Model>(model, "Model");
            return ov_autoplace::extract_graph_arrays(ov_model, pos_dim, fractal_radius);
        },
        py::arg("model"), py::arg("pos_dim") = 16, py::arg("fractal_radius") = 4,
        "Walk an openvino.Model once and return its graph as numpy arrays.");

    m.def("time_inference", &ov_autoplace::time_inference, py::arg("compiled_model"), py::arg("inputs"),
          py::arg("warmup") = 2, py::arg("iterations") = 10, py::arg("max_seconds") = 0.0,
          "Time synchronous inferences of an openvino.CompiledModel; returns every sample in ms.");

    m.def("hetero_split", &ov_autoplace::hetero_split, py::arg("src"), py::arg("dst"), py::arg("own"), py::arg("cut"),
          py::arg("single"), py::arg("readers"),
          "Every node's part root in the split HETERO 2026.4 compiles (placement/submodels.py).");

    m.attr("BUILT_OPENVINO_VERSION") = OV_AUTOPLACE_BUILT_OV_VERSION;
    m.def("runtime_openvino_version", []() { return std::string(ov::get_openvino_version().buildNumber); });
}
