#pragma once
#include <pybind11/numpy.h>

namespace ov_autoplace {

// Every node's part root (its part's lowest member) in the split HETERO compiles: the rounds of
// docs/architecture.md, "Computing the split", from the parts of the uncut edges (`roots`) and the edges between
// devices (`cut`, ascending). `own`: 1 for a graph input (Parameter, Constant). Edges are listed by destination in
// topological order, and node ids are topological.
pybind11::array_t<int64_t> hetero_split(pybind11::array_t<int64_t, pybind11::array::c_style> src,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> dst,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> own,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> roots,
                                        pybind11::array_t<int64_t, pybind11::array::c_style> cut);

}  // namespace ov_autoplace
