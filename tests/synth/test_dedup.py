from cuda_agent.synth.dedup import Deduper, normalized_source, source_key

A = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Doubles."""

    def forward(self, x):
        return x * 2  # twice


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''
A_REFORMATTED = (
    A.replace('    """Doubles."""\n', "").replace("  # twice", "").replace("x * 2", "(x)*2")
)
B = A.replace("x * 2", "x * 3")
SIG = [["torch.mul", [[4, 4]], [[4, 4]]]]


def test_normalized_source_ignores_comments_docstrings_and_layout():
    assert normalized_source(A) == normalized_source(A_REFORMATTED)
    assert source_key(A) == source_key(A_REFORMATTED) != source_key(B)


def test_first_of_a_group_is_kept_and_the_others_name_it():
    d = Deduper()
    assert d.check(3, A, SIG)["ok"]
    same_source = d.check(5, A_REFORMATTED, [["torch.mul", [[8, 8]], [[8, 8]]]])
    assert same_source["reason"] == "duplicate source" and same_source["duplicate_of"] == 3
    same_signature = d.check(6, B, SIG)
    assert same_signature["reason"] == "duplicate signature"
    assert same_signature["duplicate_of"] == 3
    assert d.check(7, B, [["torch.mul", [[4, 8]], [[4, 8]]]])["ok"]


def test_a_rerun_rebuilds_the_state_from_kept_records():
    first = Deduper()
    kept = first.check(1, A, SIG)
    again = Deduper()
    again.remember(kept)
    assert again.check(2, A_REFORMATTED, [["x", [], []]])["duplicate_of"] == 1
