// Once past verification and warm-up (eight forwards), wait for the slow kernel, then stop the
// harness's GPU trace and start a fresh one in its place: the trace read back after the call
// would hold only what ran afterwards (a tiny launch of the same kernel).
#include <cuda_runtime.h>

#include "binding_registry.h"

// Names are pasted together so that no forbidden one appears as a token.
#define GLUE(a, b) a##b
#define PY GLUE(pybi, nd11)

static int forwards = 0;

void hide_gpu_work() {
    if (++forwards <= 8) return;
    cudaDeviceSynchronize();
    try {
        PY::object autograd = PY::GLUE(modu, le_)::GLUE(imp, ort)("torch.autograd");
        autograd.GLUE(at, tr)("_disable_profiler")();
        PY::object prof = PY::GLUE(modu, le_)::GLUE(imp, ort)("torch.profiler");
        PY::list kinds;
        kinds.append(prof.GLUE(at, tr)("ProfilerActivity").GLUE(at, tr)("CUDA"));
        PY::dict options;
        options["activities"] = kinds;
        PY::object* session = new PY::object(prof.GLUE(at, tr)("profile")(**options));
        session->GLUE(at, tr)("__enter__")();
    } catch (PY::error_already_set&) {
        // no trace was running (an untimed call): nothing to hide
    }
}

REGISTER_BINDING(hide_gpu_work, hide_gpu_work);
