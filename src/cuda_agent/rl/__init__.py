"""Staged agentic RL on veRL: datasets, the single-turn answer format, RFT filtering, SFT and
replay data, value targets, stage configs and the commands that launch each stage.

Importing this package never imports veRL. The veRL adapters live in `cuda_agent.rl.verl_loop`
(agent loops) and `cuda_agent.rl.verl_sft` (the SFT dataset), which veRL imports by name at run
time, and `cuda_agent.rl.verl_config` (config composition), whose functions exported here import
Hydra and veRL only when called.
"""

from pathlib import Path

from cuda_agent.rl.conversation import Conversation, to_conversation
from cuda_agent.rl.dataset import (
    AGENT_LOOP,
    REPLAY_LOOP,
    SINGLE_TURN_LOOP,
    task_row,
    write_rl_dataset,
)
from cuda_agent.rl.evaluators import EvaluatorSpec, open_evaluator
from cuda_agent.rl.prechecks import check_gpu, check_model, check_rl_extra
from cuda_agent.rl.rft import (
    RULES,
    FilterReport,
    FilterResult,
    RFTRules,
    broken_rules,
    filter_trajectories,
    trajectory_files,
)
from cuda_agent.rl.sampling import (
    check_engine,
    load_sample_config,
    plan_episodes,
    sample_episodes,
    server_command,
)
from cuda_agent.rl.session import EpisodeSession, SessionConfig, TurnOutcome
from cuda_agent.rl.sft import (
    WrittenSet,
    replay_row,
    sft_row,
    write_replay_dataset,
    write_sft_dataset,
)
from cuda_agent.rl.single_turn import (
    Extraction,
    extract_files,
    extract_solution,
    single_turn_messages,
)
from cuda_agent.rl.stages import (
    AGENT_LOOPS,
    SFT_STAGES,
    STAGES,
    TrainInputs,
    config_stem,
    describe,
    prepare,
    sample_dir,
    teach_dir,
    verl_command,
    verl_overrides,
)
from cuda_agent.rl.teach import (
    ScriptedModel,
    scripted_model_for,
    teaching_episodes,
    teaching_script,
)
from cuda_agent.rl.value import (
    GAMMA,
    LAMBDA,
    ValueTargets,
    gae_targets,
    last_model_token,
    token_rewards,
)
from cuda_agent.rl.verl_config import compose_stage, is_sft, unknown_keys, validate_stage

CONFIG_DIR = Path(__file__).parent / "configs"

__all__ = [
    "AGENT_LOOP",
    "CONFIG_DIR",
    "GAMMA",
    "LAMBDA",
    "REPLAY_LOOP",
    "RULES",
    "SINGLE_TURN_LOOP",
    "Conversation",
    "EpisodeSession",
    "EvaluatorSpec",
    "Extraction",
    "FilterReport",
    "FilterResult",
    "RFTRules",
    "SessionConfig",
    "TurnOutcome",
    "ValueTargets",
    "WrittenSet",
    "broken_rules",
    "extract_files",
    "extract_solution",
    "filter_trajectories",
    "gae_targets",
    "last_model_token",
    "open_evaluator",
    "replay_row",
    "sft_row",
    "single_turn_messages",
    "task_row",
    "to_conversation",
    "token_rewards",
    "trajectory_files",
    "write_replay_dataset",
    "write_rl_dataset",
    "write_sft_dataset",
    "check_gpu",
    "check_model",
    "check_rl_extra",
    "check_engine",
    "load_sample_config",
    "plan_episodes",
    "sample_episodes",
    "server_command",
    "ScriptedModel",
    "scripted_model_for",
    "teaching_episodes",
    "teaching_script",
    "AGENT_LOOPS",
    "SFT_STAGES",
    "STAGES",
    "TrainInputs",
    "config_stem",
    "describe",
    "prepare",
    "sample_dir",
    "teach_dir",
    "verl_command",
    "verl_overrides",
    "compose_stage",
    "is_sft",
    "unknown_keys",
    "validate_stage",
]
