"""The Hugging Face hub, asked without downloading: is it reachable (a socket, failing in seconds when offline), is
a repo cached here, does the hub hold it. Nothing heavy is imported; huggingface_hub only when it is there."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
HUB_HOST_TIMEOUT_S = 3.0


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def offline_by_env() -> str | None:
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        if _truthy(name):
            return name
    return None


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def hub_host() -> tuple[str, int]:
    endpoint = urlparse(hub_endpoint())
    return endpoint.hostname or "huggingface.co", endpoint.port or (80 if endpoint.scheme == "http" else 443)


def hub_reachable(timeout: float = HUB_HOST_TIMEOUT_S) -> bool:
    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # a proxy decides; let huggingface_hub try it
    try:
        socket.create_connection(hub_host(), timeout=timeout).close()
        return True
    except OSError:
        return False


def go_offline() -> None:
    """Tell huggingface_hub, transformers and datasets not to try the network (they read these at import)."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[name] = "1"
    import sys

    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # already imported (a test, a notebook): it read the variable before we set it
        constants.HF_HUB_OFFLINE = True


def hub_cached(repo_id: str, kind: str) -> bool:
    """True when the Hugging Face cache holds ``repo_id`` (a model's config.json, or a dataset snapshot)."""
    try:
        import huggingface_hub
        from huggingface_hub.errors import LocalEntryNotFoundError
    except ImportError:  # no transformers here (`check` on a laptop): the machine that trains will tell
        return True

    if kind == "model":
        return isinstance(huggingface_hub.try_to_load_from_cache(repo_id, "config.json"), str)
    try:
        huggingface_hub.snapshot_download(repo_id, repo_type="dataset", local_files_only=True)
        return True
    except (LocalEntryNotFoundError, OSError, ValueError):
        cache = os.environ.get("HF_DATASETS_CACHE") or Path(huggingface_hub.constants.HF_HOME) / "datasets"
        return (Path(cache) / repo_id.replace("/", "___")).is_dir()


def hub_has(repo_id: str, kind: str) -> bool | str | None:
    """Whether the hub holds ``repo_id`` (a model's config.json, or a dataset): True, False, "gated" (it does,
    behind terms to accept), or None when it cannot say."""
    try:
        from huggingface_hub import HfApi
        from huggingface_hub.errors import GatedRepoError, HfHubHTTPError
    except ImportError:
        return None
    api = HfApi(endpoint=hub_endpoint())
    try:
        if kind == "model":
            return api.file_exists(repo_id, "config.json")
        return api.repo_exists(repo_id, repo_type="dataset")
    except GatedRepoError:
        return "gated"
    except HfHubHTTPError as error:
        status = getattr(error.response, "status_code", None)
        return False if status == 404 else None
    except Exception:  # a network or server hiccup: the download itself will say more
        return None


def hub_token_set(project_dir: Path) -> bool | None:
    """Whether the hub would get a token: HF_TOKEN, a project's .env that sets it (train.py loads it), or the token
    `hf auth login` saved; None where huggingface_hub is not installed to say."""
    if os.environ.get("HF_TOKEN"):
        return True
    env_file = project_dir / ".env"
    if env_file.is_file() and re.search(r"(?m)^\s*(export\s+)?HF_TOKEN\s*=\s*['\"]?[^\s'\"#]",
                                        env_file.read_text(encoding="utf-8", errors="replace")):
        return True
    try:
        from huggingface_hub import get_token
    except ImportError:
        return None
    return get_token() is not None
