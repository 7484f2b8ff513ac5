// Receiving OpenVINO's own Python objects (ov.Model, ov.CompiledModel) in this
// separately built extension. openvino's bindings are a different pybind11
// build, so a plain `std::shared_ptr<ov::Model>` parameter cannot be cast
// (and crashed in practice); the pybind11 "conduit" asks the object itself for
// a raw pointer, checked by platform ABI id and by C++ type name.
#pragma once

#include <pybind11/conduit/pybind11_conduit_v1.h>
#include <pybind11/pybind11.h>

#include <string>

namespace ov_autoplace {

template <typename T>
T& borrow_ov_object(pybind11::handle obj, const char* expected_python_type) {
    T* ptr = nullptr;
    if (obj && PyObject_HasAttrString(obj.ptr(), "_pybind11_conduit_v1_")) {
        ptr = pybind11_conduit_v1::get_type_pointer_ephemeral<T>(obj.ptr());
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ptr = nullptr;
        }
    }
    if (ptr == nullptr) {
        std::string got = obj ? pybind11::str(pybind11::type::handle_of(obj).attr("__qualname__")).cast<std::string>()
                              : std::string("NULL");
        throw pybind11::type_error(std::string("expected an openvino ") + expected_python_type + ", got " + got +
                                   " (or an openvino build whose C++ ABI differs from the one ov_autoplace "
                                   "was compiled against; reinstall ov_autoplace from source)");
    }
    return *ptr;
}

}  // namespace ov_autoplace
