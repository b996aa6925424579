"""Reading and changing the model configuration (used by the config API and the admin)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from llm import config
from llm.config import ModelSettings
from llm.errors import display_url
from llm.models import ModelConfig


def config_payload(cfg: ModelSettings | None = None) -> dict[str, Any]:
    """The public view of the configuration: never the API key, only whether one is set."""
    cfg = cfg or config.effective_settings()
    return {
        "provider": cfg.chat_provider,
        "base_url": display_url(cfg.base_url),  # never a password in user:pass@
        "chat_model": cfg.chat_model,
        "embedding_provider": cfg.embedding_provider,
        "embedding_model": cfg.embedding_model,
        "embedding_dim": cfg.embedding_dim,
        "embedding_space": cfg.space_key,
        "api_key_set": bool(cfg.api_key),
    }


class ConfigRejected(ValueError):
    """The requested change would leave an unusable configuration."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@transaction.atomic
def update_config(changes: dict[str, Any]) -> tuple[ModelSettings, ModelSettings]:
    """Apply ``changes`` (API field names; None resets a field to the environment value).

    Returns (before, after). Raises ConfigRejected, leaving the stored row unchanged.
    """
    env = config.settings_from_env()
    row, _ = ModelConfig.objects.select_for_update().get_or_create(pk=ModelConfig.SINGLETON_ID)
    before = config.overlay(env, row.overrides())
    overrides = {**row.overrides(), **changes}
    if "embedding_provider" in changes:
        # A stored model/dim belonged to the previous provider unless restated.
        for name in ("embedding_model", "embedding_dim"):
            if name not in changes:
                overrides.pop(name, None)
    overrides = {k: v for k, v in overrides.items() if v not in ("", None)}
    errors = config.validate_overrides(overrides, env)
    if errors:
        raise ConfigRejected(errors)
    after = config.overlay(env, overrides)
    for name in ModelConfig.OVERRIDE_FIELDS:
        default = None if name == "embedding_dim" else ""
        setattr(row, name, overrides.get(name, default))
    row.save()
    # Now (this transaction sees the row) and again once committed (other readers see it).
    config.invalidate()
    transaction.on_commit(config.invalidate)
    return before, after
