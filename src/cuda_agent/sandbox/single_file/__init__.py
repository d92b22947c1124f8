"""Single-file submissions (KernelBench's format): one Python file whose ModelNew builds its CUDA
through torch.utils.cpp_extension.load_inline (or load), or launches its own Triton kernels,
scored as written.

The file's Python runs only in the confined candidate process. There the builders are replaced
before the file is imported; each call's sources go to the parent, which guards and builds them
with its own toolchain and cache and answers with the module's path.

    submission.py     SingleFileSolution, read_submission, what cannot be scored (empty, syntax)
    triton_source.py  what the text says about Triton: whether it is used, the @triton.jit kernels
    guard.py          the static guard in this shape: the file's Python, each call's sources
    flags.py          a call's extra flags as the harness's build takes them (arch replaced)
    build.py          one call's sources laid out as torch does, compiled and linked, cached
    prelude.py        the narrow torch preludes units are first compiled against
    ahead.py          the load_inline calls the file's text fixes, built before asked for
    early.py          those builds started as `cuda-agent eval` starts, before torch is imported
    extensions.py     the parent's answers to one evaluation's calls (ExtensionBuilder)
    hook.py           in the candidate's process: load_inline and load replaced
    child_load.py     in the candidate's process: the file imported with the hooks in place
    compile_stage.py  import and construct in a confined CPU child (stage compile, no GPU)
    evaluate.py       the stages of one single-file evaluation
"""
