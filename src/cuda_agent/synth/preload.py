"""Imported once by the fork server that synthesis children fork from (`batch.PRELOAD`).

Every batch child runs programs that import transformers' blocks; imported in each child, the
shared part (transformers' activations and modeling utilities, this package) cost about 4 s of
a 5 s first composition on a 2-core host without a GPU; on an H200 host, a child's first
composition took up to 13 s. Imported here once, a child inherits it. A transformers that fails
to import is left to the child that needs it: the fork server must not die of it.
"""

import contextlib
import warnings

with warnings.catch_warnings(), contextlib.suppress(Exception):
    warnings.simplefilter("ignore")
    import transformers.activations  # noqa: F401
    import transformers.modeling_utils  # noqa: F401

from cuda_agent.synth import batch, compose, decontam, filters  # noqa: E402, F401
