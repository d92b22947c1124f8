"""Correctness on the trusted side: input sets, the reference, comparison, the null-kernel audit."""
