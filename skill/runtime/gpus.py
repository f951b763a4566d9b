"""Common GPUs by their spec-sheet memory bandwidth and bf16 compute, so that `grpo-skill plan` can scale the times it
measured on an H200 to the card a run will use.

Decoding a token reads every weight and the KV cache once, so generation time is scaled by memory bandwidth; the
training passes are matrix products, scaled by dense bf16 tensor throughput. Both are ratios of vendor figures, not
measurements on those cards: a rough guide (small-batch decoding is partly bound by kernel launches, which do not
scale this way).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ..core.errors import UserError
from ..core.i18n import _
from ..core.launch import local_rank


@dataclass(frozen=True)
class Card:
    name: str
    memory_gib: float  # what nvidia-smi reports as the card's total, in GiB: what train.py's "auto" choices see there
    bandwidth_gb_s: float  # spec-sheet memory bandwidth
    bf16_tflops: float  # dense bf16 tensor throughput (fp32 accumulate), without sparsity
    sms: int  # streaming multiprocessors

    @property
    def tunes_matmuls(self) -> bool:
        """Whether torch.compile's max-autotune tunes matmuls on this card (inductor's is_big_gpu)."""
        return self.sms >= INDUCTOR_MIN_SMS


# inductor skips max-autotune's matmul tuning below this many SMs (torch._inductor.utils.is_big_gpu, "3080")
INDUCTOR_MIN_SMS = 68
# The card the calibration was measured on (runtime/estimate.py: CALIBRATION).
REFERENCE = "H200"
# memory: nvidia-smi's memory.total in GiB, rounded down (H200 143,771 MiB and H100 81,559 MiB measured on this
# project's GPU machines; A10 23,028, L4 23,034, L40S 46,068, A6000 49,140, RTX 4090 24,564 MiB as those cards report
# it): a "24 GB" L4 or A10 has 22.5 GiB, and plan sizing it as 24 would promise train.py choices the card does not take
CARDS = {card.name: card for card in (
    Card("H200", 140.4, 4800, 989, 132),
    Card("H100", 79.6, 3350, 989, 132),  # SXM
    Card("H100 PCIe", 79.6, 2000, 756, 114),
    Card("A100 80GB", 80, 2039, 312, 108),
    Card("A100 40GB", 40, 1555, 312, 108),
    Card("L40S", 44.98, 864, 362, 142),
    Card("A6000", 47.98, 768, 155, 84),
    Card("A10", 22.48, 600, 125, 72),
    Card("L4", 22.49, 300, 121, 58),
    Card("RTX 4090", 23.98, 1008, 165, 128),
    Card("RTX 3090", 24, 936, 71, 82),
)}
# Patterns over a name squeezed to lower-case letters and digits ("NVIDIA A100-SXM4-80GB" -> "a100sxm480gb").
PATTERNS = (
    (r"h200", "H200"), (r"h100.*pcie", "H100 PCIe"), (r"h100", "H100"),
    (r"a100.*80", "A100 80GB"), (r"a100.*40", "A100 40GB"),
    (r"l40s", "L40S"), (r"a6000", "A6000"), (r"^a10(g)?$|^a10[^0-9g]", "A10"), (r"^l4$|^l4[^0-9]", "L4"),
    (r"4090", "RTX 4090"), (r"3090", "RTX 3090"),
)


class GpuError(UserError):
    """A GPU name the table does not know."""


def _squeeze(name: str) -> str:
    text = re.sub(r"[^a-z0-9]", "", name.lower())
    for word in ("nvidia", "geforce", "rtx", "tesla"):
        text = text.replace(word, "")
    return text


def find(name: str) -> Card | None:
    squeezed = _squeeze(name)
    for pattern, card in PATTERNS:
        if re.search(pattern, squeezed):
            return CARDS[card]
    return None


def card_for(name: str) -> Card:
    """The card ``--gpu NAME`` means; an unknown or ambiguous name is refused with the known ones."""
    card = find(name)
    if card is None:
        hint = _("say A100-40 or A100-80; ") if "a100" in _squeeze(name) else ""
        raise GpuError(_("--gpu {name!r}: not a GPU plan knows; {hint}known: {names} (or leave --gpu out and give "
                         "--gpu-memory GIB: times are then an H200's)").format(
            name=name, hint=hint, names=", ".join(CARDS)))
    return card


def nvidia_smi(*fields: str) -> list[list[str]]:
    """Each GPU's ``fields`` (nvidia-smi --query-gpu names) as text, a list per GPU of the host in nvidia-smi's
    order; empty without nvidia-smi or where it fails. No torch: asking torch would start CUDA before the run has
    bound its process to its GPU."""
    if not shutil.which("nvidia-smi"):
        return []
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return [[value.strip() for value in line.split(",")] for line in done.stdout.splitlines() if line.strip()]


def this_process_gpu(*fields: str, or_first: bool = False) -> list[str] | None:
    """``fields`` of the GPU this process trains on, from nvidia-smi: its local rank's among CUDA_VISIBLE_DEVICES
    (indices or UUIDs: nvidia-smi lists every GPU of the host, whatever that variable says) or among all. None where
    there is no GPU or the mapping cannot say (MIG devices, an old driver): then the first GPU's with ``or_first``."""
    listed = nvidia_smi("index", "uuid", *fields)
    if not listed:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    chosen = listed
    if visible is not None:
        wanted = [entry.strip() for entry in visible.split(",") if entry.strip()]
        chosen = [next((gpu for gpu in listed if entry in (gpu[0], gpu[1])
                        or (entry.startswith("GPU-") and gpu[1].startswith(entry))), None)
                  for entry in wanted]
        if not chosen:  # none visible
            return None
        if None in chosen:
            return listed[0][2:] if or_first else None
    return chosen[local_rank() % len(chosen)][2:]


def detected_name() -> str | None:
    """The name of this process's GPU from nvidia-smi (the first GPU's where it cannot say which), if there is one."""
    found = this_process_gpu("name", or_first=True)
    return found[0] if found else None


def scaled_calibration(card: Card, calibration: dict[str, float]) -> dict[str, float]:
    """``calibration`` (an H200's) for ``card``: decoding times x the bandwidth ratio, training throughputs x the
    compute ratio; fixed overheads as they are."""
    reference = CARDS[REFERENCE]
    slower_decode = reference.bandwidth_gb_s / card.bandwidth_gb_s
    slower_train = reference.bf16_tflops / card.bf16_tflops
    scaled = dict(calibration)
    for key, value in calibration.items():
        if key.startswith("decode_"):
            scaled[key] = value * slower_decode
        elif key.startswith("train_flops_per_s_"):
            scaled[key] = value / slower_train
    return scaled


def describe(card: Card) -> dict:
    reference = CARDS[REFERENCE]
    return {"name": card.name, "memory_gib": card.memory_gib, "bandwidth_gb_s": card.bandwidth_gb_s,
            "bf16_tflops": card.bf16_tflops, "sms": card.sms,
            "decode_slower": round(reference.bandwidth_gb_s / card.bandwidth_gb_s, 2),
            "train_slower": round(reference.bf16_tflops / card.bf16_tflops, 2)}
