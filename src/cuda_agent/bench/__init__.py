"""Evaluation at scale: the evaluation service, the bench runner, metrics and reports.

EvaluationService   Environment.evaluate's API over CPU build workers and one worker per GPU
                    (in-process, local processes, or Ray actors); also used by RL rollouts
run_stored / run_agent   a task set with stored solutions or an agent, resumable (RunStore)
run_baselines / run_audit   eager/torch.compile timings and the null-kernel audit over a set
metrics.by_level    the paper's scores per level and overall; write_report: markdown + HTML
compare_with_file   a run's verdicts beside another harness's (KernelBench's eval_results.json)
"""

from importlib import import_module

# Exports load on first use (PEP 562): service worker processes import this package for
# `calls` alone and should not pay for matplotlib, jinja2 or the agent's HTTP client.
_EXPORTS = {
    "AgentPolicy": "agent_runs",
    "EpisodeOutcome": "agent_runs",
    "Comparison": "compare",
    "compare_run": "compare",
    "compare_with_file": "compare",
    "verdict_text": "compare",
    "write_comparison": "compare",
    "TheirResult": "kernelbench_results",
    "read_their_results": "kernelbench_results",
    "FAST_P_GRID": "metrics",
    "FASTER_BY": "metrics",
    "Metrics": "metrics",
    "by_level": "metrics",
    "compute": "metrics",
    "geomean": "metrics",
    "SERVICE_ERROR": "store",
    "WorkerStats": "pipeline",
    "ReportFiles": "report",
    "write_report": "report",
    "EndpointFailing": "runner",
    "StoredSolutions": "runner",
    "check_ray_address": "ray_workers",
    "check_solutions": "runner",
    "pending_samples": "runner",
    "pending_tasks": "runner",
    "run_agent": "runner",
    "run_stored": "runner",
    "verdict_line": "runner",
    "EvaluationService": "service",
    "Job": "service",
    "ServiceConfig": "service",
    "MISSING": "store",
    "MODEL_ERROR": "store",
    "ResultStatus": "store",
    "RunMeta": "store",
    "RunStore": "store",
    "TaskResult": "store",
    "run_lock": "run_lock",
    "SweepItem": "sweeps",
    "run_audit": "sweeps",
    "run_baselines": "sweeps",
    "write_audit_table": "sweeps",
    "WorkerError": "workers",
    "WorkerLost": "workers",
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"cuda_agent.bench.{_EXPORTS[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "FASTER_BY",
    "FAST_P_GRID",
    "MISSING",
    "MODEL_ERROR",
    "SERVICE_ERROR",
    "AgentPolicy",
    "EndpointFailing",
    "Comparison",
    "EpisodeOutcome",
    "EvaluationService",
    "Job",
    "Metrics",
    "ReportFiles",
    "ResultStatus",
    "RunMeta",
    "RunStore",
    "ServiceConfig",
    "StoredSolutions",
    "SweepItem",
    "TaskResult",
    "TheirResult",
    "WorkerError",
    "WorkerLost",
    "WorkerStats",
    "by_level",
    "check_ray_address",
    "check_solutions",
    "compare_run",
    "compare_with_file",
    "compute",
    "geomean",
    "pending_samples",
    "pending_tasks",
    "read_their_results",
    "run_agent",
    "run_audit",
    "run_baselines",
    "run_lock",
    "run_stored",
    "verdict_line",
    "verdict_text",
    "write_audit_table",
    "write_comparison",
    "write_report",
]
