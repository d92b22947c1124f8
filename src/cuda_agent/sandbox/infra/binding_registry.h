// Fixed infrastructure written by cuda-agent; the harness always builds its own copy of this file.
//
// Each kernels/*_binding.cpp registers the functions it exposes to Python:
//
//     torch::Tensor my_op(torch::Tensor x) { ... }
//     REGISTER_BINDING(my_op, my_op);
//
// and binding.cpp adds every registered function to the `cuda_extension` module.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace cuda_agent {

using BindingFn = std::function<void(pybind11::module_&)>;

inline std::vector<std::pair<std::string, BindingFn>>& registered_bindings() {
    static std::vector<std::pair<std::string, BindingFn>> bindings;
    return bindings;
}

struct BindingRegistrar {
    BindingRegistrar(const char* name, BindingFn fn) {
        registered_bindings().emplace_back(name, std::move(fn));
    }
};

}  // namespace cuda_agent

// REGISTER_BINDING(python_name, cpp_function[, pybind11 extras such as py::arg("x")...])
#define REGISTER_BINDING(name, fn, ...)                                                  \
    static ::cuda_agent::BindingRegistrar cuda_agent_registrar_##name(                  \
        #name, [](pybind11::module_& m) { m.def(#name, &fn, ##__VA_ARGS__); })
