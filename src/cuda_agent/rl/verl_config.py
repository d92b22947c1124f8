"""veRL adapter: a stage config composed with veRL's own hydra configs and checked the way the
trainer checks it before it starts (veRL's `validate_config` for PPO stages, its dataclasses for
the SFT stage), so a bad key or value fails here in seconds, not on the cluster."""

from __future__ import annotations

from pathlib import Path

import yaml

from cuda_agent.errors import UserError

SEARCHPATH = "hydra.searchpath=[pkg://verl.trainer.config]"
# Keys veRL reads with .get() without declaring them in its YAML (verl/trainer/ppo/reward.py),
# and the free-form dicts its YAML declares empty (`override_config: {}`, passed to the HF config).
UNDECLARED = (
    "reward.custom_reward_function.reward_kwargs",
    "actor_rollout_ref.model.override_config.",
    "critic.model.override_config.",
    "model.override_config.",
)


def compose_stage(config: str | Path, overrides: list[str] | tuple[str, ...] = ()):
    """The composed config of the stage file `config` with command-line `overrides`."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    path = Path(config).resolve()
    if not path.is_file():
        raise UserError(f"{config}: no such stage config")
    try:
        with initialize_config_dir(config_dir=str(path.parent), version_base=None):
            return compose(config_name=path.stem, overrides=[SEARCHPATH, *overrides])
    except (HydraException, OmegaConfBaseException) as err:
        raise UserError(f"{config}: {str(err).splitlines()[0]}") from None


def is_sft(cfg) -> bool:
    return "engine" in cfg and "actor_rollout_ref" not in cfg


def validate_stage(cfg) -> None:
    """Raise UserError when veRL would reject `cfg`."""
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    try:
        if is_sft(cfg):
            for section in ("engine", "optim", "checkpoint", "profiler"):
                omega_conf_to_dataclass(cfg[section])
        else:
            from verl.trainer.ppo.utils import need_critic, need_reference_policy

            validate_config(cfg, need_reference_policy(cfg), need_critic(cfg))
    except Exception as err:  # veRL raises assertions, TypeErrors and its own errors alike
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        raise UserError(f"veRL rejects the config: {' '.join(lines[:2])[:400]}") from None


def own_keys(config: str | Path) -> tuple[str, list[str]]:
    """The veRL base config the stage file builds on, and every leaf key it and the files it
    inherits from set (dotted paths). A file in the same folder without a veRL base of its own
    (one_gpu.yaml) is a layer of settings over the stage."""
    base, keys = _layer_keys(Path(config))
    if base is None:
        raise UserError(
            f"{config}: its defaults name no veRL config (ppo_trainer, sft_trainer_engine)"
        )
    return base, keys


def _layer_keys(path: Path) -> tuple[str | None, list[str]]:
    data = yaml.safe_load(path.read_text()) or {}
    base, keys = None, []
    for entry in data.get("defaults", []):
        if not isinstance(entry, str) or entry == "_self_":
            continue
        parent = path.parent / f"{entry}.yaml"
        if parent.is_file():
            parent_base, inherited = _layer_keys(parent)
            base = parent_base or base
            keys += inherited
        else:
            base = entry
    body = {k: v for k, v in data.items() if k not in ("defaults", "hydra")}
    return base, keys + list(_leaves(body, ""))


def unknown_keys(config: str | Path) -> list[str]:
    """Keys the stage sets that veRL's own config does not have (renamed or misspelt)."""
    from hydra import compose, initialize_config_module

    base_name, keys = own_keys(config)
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        base = compose(config_name=base_name)
    return [key for key in keys if not key.startswith(UNDECLARED) and not _declared(base, key)]


def _declared(cfg, key: str) -> bool:
    """Whether veRL's config has `key` (a mandatory ??? value counts: the key is there)."""
    from omegaconf import DictConfig

    node = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node.keys():
            return False
        node = node._get_node(part)
    return True


def _leaves(node: dict, prefix: str):
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from _leaves(value, path + ".")
        else:
            yield path
