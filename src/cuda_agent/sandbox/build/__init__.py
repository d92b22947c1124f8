"""Building a Solution into an extension module: toolchain, compiler runs, cache."""
