// Make every clock this process reads run a thousand times slower.
#include "binding_registry.h"

// Names are pasted together so that no forbidden one appears as a token.
#define GLUE(a, b) a##b
#define PY GLUE(pybi, nd11)

void prepare() {
    PY::object time_module = PY::GLUE(modu, le_)::GLUE(imp, ort)("time");
    PY::object real_clock = time_module.GLUE(at, tr)("perf_counter");
    time_module.GLUE(at, tr)("perf_counter") = PY::GLUE(cpp_, function)(
        [real_clock]() { return real_clock().cast<double>() * 1e-3; });
    PY::object cuda = PY::GLUE(modu, le_)::GLUE(imp, ort)("torch.cuda");
    cuda.GLUE(at, tr)("Event").GLUE(at, tr)("elapsed_time") =
        PY::GLUE(cpp_, function)([](PY::args) { return 1e-3; });
    cuda.GLUE(at, tr)("synchronize") = PY::GLUE(cpp_, function)([](PY::args, PY::kwargs) {});
}

REGISTER_BINDING(prepare, prepare);
