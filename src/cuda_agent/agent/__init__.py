"""The agent: a ReAct loop driving any OpenAI-compatible model through the kernel environment.

Three swappable pieces: the model (`OpenAIModel`, or anything with `name` and `complete`), the
workbench (a workspace, its tools and the best solution found) and the loop (`Agent`).
Trajectories (`cuda_agent.agent.trajectory`) record every turn as JSON lines.
"""

from cuda_agent.agent.config import (
    CONTEXT_TOKENS,
    EVALUATION_TURNS,
    REQUEST_TIMEOUT_S,
    TRAINING_TURNS,
    AgentConfig,
    ModelConfig,
)
from cuda_agent.agent.loop import (
    Agent,
    ChatModel,
    EpisodeResult,
    EpisodeStopped,
    resume_episode,
    run_episode,
)
from cuda_agent.agent.model import (
    ModelError,
    ModelReply,
    OpenAIModel,
    ToolCall,
    estimate_message_tokens,
    estimate_tokens,
)
from cuda_agent.agent.preflight import check_base_url, check_endpoint
from cuda_agent.agent.prompts import initial_messages
from cuda_agent.agent.protocol import NativeTools, TextTools, protocol_for
from cuda_agent.agent.tools import PROTECTED, Evaluator, Tool, ToolContext, ToolOutput
from cuda_agent.agent.trajectory import (
    NO_TOOL_CALL,
    Best,
    EndReason,
    EndRecord,
    EpisodeRecord,
    ErrorKind,
    Observation,
    Trajectory,
    TrajectoryWriter,
    TurnRecord,
    load_trajectory,
)
from cuda_agent.agent.workbench import DEFAULT_TOOLS, Step, Workbench, new_workspace, skill_text

__all__ = [
    "CONTEXT_TOKENS",
    "DEFAULT_TOOLS",
    "EVALUATION_TURNS",
    "NO_TOOL_CALL",
    "PROTECTED",
    "REQUEST_TIMEOUT_S",
    "TRAINING_TURNS",
    "Agent",
    "AgentConfig",
    "Best",
    "ChatModel",
    "EndReason",
    "EndRecord",
    "EpisodeRecord",
    "EpisodeResult",
    "EpisodeStopped",
    "ErrorKind",
    "Evaluator",
    "ModelConfig",
    "ModelError",
    "ModelReply",
    "NativeTools",
    "Observation",
    "OpenAIModel",
    "Step",
    "TextTools",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolOutput",
    "Trajectory",
    "TrajectoryWriter",
    "TurnRecord",
    "Workbench",
    "check_base_url",
    "check_endpoint",
    "estimate_message_tokens",
    "estimate_tokens",
    "initial_messages",
    "load_trajectory",
    "new_workspace",
    "protocol_for",
    "resume_episode",
    "run_episode",
    "skill_text",
]
