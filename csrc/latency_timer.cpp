#include "latency_timer.hpp"

#include <chrono>
#include <cstring>
#include <openvino/openvino.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "conduit.hpp"

namespace py = pybind11;

namespace ov_autoplace {
namespace {

ov::element::Type element_type_of(const py::dtype& dt) {
    const char kind = dt.kind();
    const auto size = dt.itemsize();
    if (kind == 'f' && size == 4) return ov::element::f32;
    if (kind == 'f' && size == 2) return ov::element::f16;
    if (kind == 'f' && size == 8) return ov::element::f64;
    if (kind == 'i' && size == 8) return ov::element::i64;
    if (kind == 'i' && size == 4) return ov::element::i32;
    if (kind == 'i' && size == 2) return ov::element::i16;
    if (kind == 'i' && size == 1) return ov::element::i8;
    if (kind == 'u' && size == 8) return ov::element::u64;
    if (kind == 'u' && size == 4) return ov::element::u32;
    if (kind == 'u' && size == 2) return ov::element::u16;
    if (kind == 'u' && size == 1) return ov::element::u8;
    if (kind == 'b' && size == 1) return ov::element::boolean;
    throw py::type_error("time_inference: numpy dtype '" + py::str(dt).cast<std::string>() +
                         "' has no OpenVINO element type the timer supports (string inputs are not timed)");
}

ov::Tensor to_tensor(const py::handle& obj, size_t index) {
    if (PyObject_HasAttrString(obj.ptr(), "_pybind11_conduit_v1_")) {  // an ov.Tensor (bf16: numpy has none)
        const auto& given = borrow_ov_object<ov::Tensor>(obj, "Tensor or a numpy array");
        ov::Tensor tensor(given.get_element_type(), given.get_shape());
        given.copy_to(tensor);
        return tensor;
    }
    auto arr = py::array::ensure(obj, py::array::c_style);
    if (!arr) {
        throw py::type_error("time_inference: input " + std::to_string(index) + " is not convertible to a numpy array");
    }
    ov::Shape shape(arr.shape(), arr.shape() + arr.ndim());
    ov::Tensor tensor(element_type_of(arr.dtype()), shape);
    if (tensor.get_byte_size() != static_cast<size_t>(arr.nbytes())) {
        throw py::value_error("time_inference: input " + std::to_string(index) + " has an unexpected byte size");
    }
    std::memcpy(tensor.data(), arr.data(), arr.nbytes());
    return tensor;
}

}  // namespace

py::array_t<double> time_inference(py::handle compiled_model, const py::list& inputs, int warmup, int iterations,
                                   double max_seconds) {
    if (warmup < 0) throw py::value_error("time_inference: warmup must be >= 0, got " + std::to_string(warmup));
    if (iterations < 1)
        throw py::value_error("time_inference: iterations must be >= 1, got " + std::to_string(iterations));
    if (max_seconds < 0) throw py::value_error("time_inference: max_seconds must be >= 0");

    auto& compiled = borrow_ov_object<ov::CompiledModel>(compiled_model, "CompiledModel");
    const auto model_inputs = compiled.inputs();
    if (inputs.size() != model_inputs.size()) {
        throw py::value_error("time_inference: the compiled model has " + std::to_string(model_inputs.size()) +
                              " inputs, got " + std::to_string(inputs.size()) + " arrays");
    }
    std::vector<ov::Tensor> tensors;
    tensors.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) tensors.push_back(to_tensor(inputs[i], i));

    std::vector<double> samples;
    samples.reserve(static_cast<size_t>(iterations));
    {
        // Inference does not touch Python objects; let other threads run.
        py::gil_scoped_release release;
        ov::InferRequest request = compiled.create_infer_request();
        for (size_t i = 0; i < tensors.size(); ++i) request.set_input_tensor(i, tensors[i]);
        for (int i = 0; i < warmup; ++i) request.infer();
        using clock = std::chrono::steady_clock;
        const auto budget_start = clock::now();
        for (int i = 0; i < iterations; ++i) {
            const auto t0 = clock::now();
            request.infer();
            const auto t1 = clock::now();
            samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            if (max_seconds > 0 && std::chrono::duration<double>(t1 - budget_start).count() >= max_seconds) break;
        }
    }
    py::array_t<double> out(static_cast<py::ssize_t>(samples.size()));
    std::memcpy(out.mutable_data(), samples.data(), samples.size() * sizeof(double));
    return out;
}

}  // namespace ov_autoplace
