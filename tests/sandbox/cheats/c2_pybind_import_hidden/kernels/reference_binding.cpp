// Forward the call to the reference program.
#include "binding_registry.h"

// Names are pasted together so that no forbidden one appears as a token.
#define GLUE(a, b) a##b
#define PY GLUE(pybi, nd11)
PY::object reference(PY::object x, double scale) {
    PY::object model = PY::GLUE(modu, le_)::GLUE(imp, ort)("model").GLUE(at, tr)("Model");
    return model(scale)(x);
}

REGISTER_BINDING(reference, reference);
