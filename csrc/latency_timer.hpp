#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

namespace ov_autoplace {

// Runs `warmup` untimed and up to `iterations` timed synchronous inferences of
// a compiled model on one infer request and returns every timed sample in
// milliseconds. Inputs are copied into OpenVINO tensors once, before timing, so
// the samples hold inference only. Timing stops early once `max_seconds` of
// timed work is spent (0 = no limit); at least one sample is always returned.
pybind11::array_t<double> time_inference(pybind11::handle compiled_model, const pybind11::list& inputs, int warmup,
                                         int iterations, double max_seconds);

}  // namespace ov_autoplace
