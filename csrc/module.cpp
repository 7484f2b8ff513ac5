// ov_autoplace._native: the hot, stable parts (graph walking, HETERO's split, timing) in C++.
// Everything else (policy, config, orchestration) stays in Python.
#include <pybind11/pybind11.h>

#include <openvino/core/version.hpp>

#include "conduit.hpp"
#include "graph_extract.hpp"
#include "hetero_split.hpp"
#include "latency_timer.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
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
