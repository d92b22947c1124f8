import subprocess
import sys

import pytest

from cuda_agent.synth.dedup import source_key
from cuda_agent.synth.executor import LocalPool, RayPool
from tests.synth.programs import CONSTANT, GOOD, STOCHASTIC


def test_local_pool_gives_every_result_as_it_finishes():
    got = dict(LocalPool(3).map(abs, [-1, -2, -3, -4]))
    assert got == {-1: 1, -2: 2, -3: 3, -4: 4}


def test_ray_pool_runs_jobs_on_a_cluster():
    pytest.importorskip("ray")
    codes = [GOOD, STOCHASTIC, CONSTANT]
    pool = RayPool("local", workers=2, gpu_share=0.0)
    try:
        got = dict(pool.map(source_key, codes))
    finally:
        pool.close()
    assert got == {code: source_key(code) for code in codes}


def test_ray_missing_is_a_clear_error():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from cuda_agent.synth.executor import RayPool\n"
        "try:\n    RayPool('auto', 2, 0.0)\nexcept Exception as err:\n"
        "    print(type(err).__name__, err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "UserError --ray needs the ray package: pip install 'cuda-agent[ray]'"
    )
