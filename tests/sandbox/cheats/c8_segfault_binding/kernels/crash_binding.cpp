// Write through a null pointer: SIGSEGV in whoever calls it.
#include "binding_registry.h"

void crash() {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
}

REGISTER_BINDING(crash, crash);
