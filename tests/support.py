"""Helpers shared by the CPU tests (imported as `support`: tests/gpu has a conftest of its own)."""

import contextlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args, cwd=None, env=None, check=True, timeout=600):
    """Run a command as a user would; returns the CompletedProcess. ``env`` values of None unset."""
    merged = {key: value for key, value in {**os.environ, **(env or {})}.items() if value is not None}
    result = subprocess.run(args, cwd=cwd, env=merged, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@contextlib.contextmanager
def unwritable(folder):
    """``folder`` made unwritable for this process for the duration: its write permission removed, or for root
    (whom permissions do not stop) the immutable attribute set with chattr."""
    folder = Path(folder)
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o500)
        try:
            yield folder
        finally:
            folder.chmod(mode)
        return
    result = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, text=True)
    assert result.returncode == 0, f"chattr +i {folder}: {result.stderr}"  # root without chattr: no unwritable folder
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@contextlib.contextmanager
def config_edited(project, old, new):
    """config.toml of ``project`` with ``old`` replaced by ``new`` inside the block, put back afterwards."""
    config = Path(project) / "config.toml"
    original = config.read_text()
    assert old in original, f"{old!r} is not in {config}"
    try:
        config.write_text(original.replace(old, new))
        yield
    finally:
        config.write_text(original)


@contextlib.contextmanager
def source_tree_build():
    """One build of this repository at a time on this machine: setuptools writes its intermediate files into the
    source tree's build/ folder, and the suite runs on two workers."""
    import fcntl
    import tempfile

    with open(Path(tempfile.gettempdir()) / "grpo-skill-test-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_wheel(source, outdir):
    """``python -m build --wheel`` of ``source`` into ``outdir``."""
    with source_tree_build():
        return run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(outdir), str(source)])


def tiny_lora_policy(dtype, adapter_scale: float = 0.0, seed: int = 0, **lora):
    """The tiny preset's model (built here, no hub) in ``dtype`` with a peft LoRA (``lora``: LoraConfig's arguments;
    the adapters in peft's fp32), its B matrices drawn at ``adapter_scale`` with ``seed``: a trained adapter, away
    from B's zero start (0: as peft starts it)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from grpo_skill.builtins.presets import build_tiny_model

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(build_tiny_model(), dtype=dtype), LoraConfig(**lora))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name and adapter_scale:
                param.normal_(0, adapter_scale)
    return model


def model_of_positions(model: Path, folder: Path, positions: int) -> Path:
    """``folder``: a copy of ``model`` (the tiny preset's build) that reads ``positions`` tokens (its config.json's
    max_position_embeddings)."""
    import json
    import shutil

    shutil.copytree(model, folder)
    model_config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**model_config, "max_position_embeddings": positions}))
    return folder


def git(*args, cwd) -> str:
    identity = ("-c", "user.name=test", "-c", "user.email=test@localhost")  # CI machines may have none
    return subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def template_versions(root: Path, change) -> dict[str, Path]:
    """Two grpo-skill releases as they would ship the project template (its folder, bundle and manifest): "A" this
    template, "B" A after ``change(template_folder)``."""
    import shutil

    from grpo_skill import history

    def ship(out: Path) -> Path:
        out.mkdir()
        history.write_bundle(repo, "HEAD", out)
        shutil.copytree(repo, out / "project", ignore=shutil.ignore_patterns(".git"))
        return out

    repo = root / "template"
    shutil.copytree(history.template_dir(), repo, ignore=shutil.ignore_patterns("__pycache__"))
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "A", cwd=repo)
    a = ship(root / "A")
    change(repo)
    git("commit", "-qam", "B", cwd=repo)
    return {"A": a, "B": ship(root / "B")}
