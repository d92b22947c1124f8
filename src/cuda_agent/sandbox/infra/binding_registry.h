// Fixed infrastructure written by cuda-agent; the harness always builds its own copy of this file.
//
// Each kernels/*_binding.cpp registers what it exposes to Python, in either of two conventions:
//
//     torch::Tensor my_op(torch::Tensor x) { ... }
//     REGISTER_BINDING(my_op, my_op);                   // defines my_op(x) itself
//     REGISTER_BINDING(my_op, my_op, py::arg("x"));     // with pybind11's argument extras
//
// or CUDA Agent's, where the registered function is handed the module and defines its functions
// (and only that: the guard refuses every other use of the module or the interpreter):
//
//     void register_my_op(pybind11::module& m) {
//         m.def("my_op_forward", &my_op, py::arg("x"), py::arg("config") = 0);
//     }
//     REGISTER_BINDING(my_op, register_my_op);
//
// One macro serves both: a function callable with the module (and no extras) is CUDA Agent's
// kind. binding.cpp adds every registered binding to the `cuda_extension` module.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <string>
#include <type_traits>
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

// Called when the module initialises, so pybind11's extras (py::arg defaults are Python objects)
// are made with the interpreter running, never while the library is loaded.
template <typename Fn, typename... Extra>
void add_binding(pybind11::module_& m, const char* name, Fn fn, const Extra&... extra) {
    if constexpr (sizeof...(Extra) == 0 && std::is_invocable_v<Fn&, pybind11::module_&>) {
        static_cast<void>(name);  // the registration function names its own functions
        fn(m);
    } else {
        m.def(name, fn, extra...);
    }
}

}  // namespace cuda_agent

// REGISTER_BINDING(python_name, cpp_function[, pybind11 extras such as py::arg("x")...])
// REGISTER_BINDING(any_name, registration_function)   (registration_function(pybind11::module&))
#define REGISTER_BINDING(name, fn, ...)                                                  \
    static ::cuda_agent::BindingRegistrar cuda_agent_registrar_##name(                  \
        #name, [](pybind11::module_& m) { ::cuda_agent::add_binding(m, #name, fn, ##__VA_ARGS__); })
