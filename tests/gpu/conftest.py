"""GPU tests: generated projects trained end to end on CUDA, as a user runs them.

Every test here is marked ``gpu`` and skipped cleanly where ``torch.cuda.is_available()`` is False (CI).
``scripts/gpu-suite.sh`` runs them on a GPU machine and writes docs/gpu-report.{md,json}.

Environment:
  GRPO_SKILL_GPU_CACHE    where the Qwen3-4B-shape builds are kept (default: /tmp/grpo-skill-gpu-cache)
  GRPO_SKILL_GPU_RESULTS  a folder: each test writes its outcome, seconds and numbers there as JSON
  GRPO_SKILL_GPU_LOGS     a folder for the commands' logs (default: inside the test's tmp_path)
  GRPO_SKILL_GPU_DRY_RUN  "1": run them on a CPU to check their plumbing: tiny builds stand in for the
                          Qwen3-4B shape, the arithmetic task shrinks, no learning claim is checked there
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from gpu_helpers import Commands

DEFAULT_CACHE = "/tmp/grpo-skill-gpu-cache"
DRY_RUN = os.environ.get("GRPO_SKILL_GPU_DRY_RUN") == "1"


@functools.cache
def cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not DRY_RUN and not cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
        for item in gpu_items:
            item.add_marker(skip)


# --- per-test results for the report ---------------------------------------------------------------------

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    results_dir = os.environ.get("GRPO_SKILL_GPU_RESULTS")
    if not results_dir or not item.get_closest_marker("gpu"):
        return
    phases = item.__dict__.setdefault("_gpu_phases", {})
    detail = ""
    if report.failed:
        detail = report.longreprtext
    elif report.skipped and isinstance(report.longrepr, tuple):
        detail = str(report.longrepr[2])  # the skip's reason
    phases[report.when] = (report.outcome, report.duration, detail)
    if report.when != "teardown":
        return
    outcomes = [value[0] for value in phases.values()]
    final = "failed" if "failed" in outcomes else "skipped" if "skipped" in outcomes else "passed"
    error = "\n".join(text for _, _, text in phases.values() if text)
    record = {
        "test": item.nodeid,
        "outcome": final,
        "seconds": round(sum(value[1] for value in phases.values()), 1),
        "numbers": dict(item.user_properties),
        "error": error[-3000:],
    }
    path = Path(results_dir) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", item.nodeid) + ".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))


@pytest.fixture
def commands(request, tmp_path) -> Commands:
    root = os.environ.get("GRPO_SKILL_GPU_LOGS")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    return Commands(Path(root) / name if root else tmp_path / "logs")


# --- models built on the machine -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def qwen3_4b() -> dict:
    """Qwen3-4B-shape builds (random weights, Qwen3's special-token ids), made once per machine and cached.

    "think" opens <think> in the generation prompt (Thinking-2507, preset thinking); "chat" does not
    (preset standard). Both hold the same weights (the builder is seeded), so "chat" links to "think"'s weight
    files and carries its own tokenizer: one 8 GB build instead of two. Safe under pytest-xdist (a file lock).
    """
    from filelock import FileLock

    from grpo_skill import modelbuild

    if DRY_RUN:  # never build 8 GB on a CPU machine: the tiny shape stands in
        return {"think": modelbuild.build("tiny", opens_think=True), "chat": modelbuild.build("tiny", opens_think=False)}
    root = Path(os.environ.get("GRPO_SKILL_GPU_CACHE", DEFAULT_CACHE))
    root.mkdir(parents=True, exist_ok=True)
    think, chat = root / "qwen3-4b-think", root / "qwen3-4b-chat"
    info = {"think": think, "chat": chat}
    with FileLock(str(root / "build.lock")):
        if not (think / "config.json").is_file():
            runner = Commands(root / "logs")
            built = runner.run([*runner.grpo_skill(), "build-model", "--shape", "qwen3-4b", "--out", think],
                               name="build-qwen3-4b", timeout=900)
            (root / "build-seconds.json").write_text(json.dumps({"build_seconds": round(built.seconds, 1)}))
        if not (chat / "config.json").is_file():
            staging = root / ".chat-staging"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            tokenizer = modelbuild.build_tokenizer(modelbuild.SHAPES["qwen3-4b"], opens_think=False)
            tokenizer.save_pretrained(staging)
            for path in think.iterdir():
                if not (staging / path.name).exists():
                    (staging / path.name).symlink_to(path)
            staging.rename(chat)
    timing = root / "build-seconds.json"
    if timing.is_file():
        info.update(json.loads(timing.read_text()))
    return info
