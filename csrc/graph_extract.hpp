// Graph extraction: one pass over an ov::Model's topologically ordered ops that
// returns the node/edge arrays HSDAG's feature extraction needs (see
// ov_autoplace/graph.py for the meaning of every key).
#pragma once

#include <pybind11/pybind11.h>

#include <openvino/core/model.hpp>

namespace ov_autoplace {

// Output shapes are stored in a fixed-width [N, kMaxRank] table; dims beyond it
// are dropped (out_rank still reports the true rank).
constexpr int kMaxRank = 8;

// Returns a dict of numpy arrays (built in C++ vectors, then handed to numpy
// without a copy) and Python lists of str. Requires the GIL (it builds Python
// objects). Throws std::invalid_argument (-> ValueError) for an odd or
// non-positive pos_dim or a fractal_radius < 2, and std::runtime_error for a
// malformed graph (an input whose producer is not among the model's ops).
pybind11::dict extract_graph_arrays(const ov::Model& model, int pos_dim, int fractal_radius);

}  // namespace ov_autoplace
