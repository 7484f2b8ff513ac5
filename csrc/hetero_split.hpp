#pragma once
#include <pybind11/numpy.h>

namespace ov_autoplace {

// Every node's part root (its part's lowest member) in the split HETERO 2026.4 compiles (docs/architecture.md,
// "Submodels" and "Computing the split"), from the edges between devices (`cut`, ascending). `own`: 1 for a graph
// input (Parameter, Constant); `single`: 1 for an edge whose source output has no other reader; `readers`: each
// node's readers that are not Results. Edges are listed by destination in topological order, and node ids are
// topological.
pybind11::array_t<int64_t> hetero_split(pybind11::array_t<int64_t, pybind11::array::c_style> src,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> dst,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> own,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> cut,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> single,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> readers);

}  // namespace ov_autoplace
