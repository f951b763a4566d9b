"""What torch's profiler says the GPU did: kernel time by kind, the top kernels, and, for a training step whose phases
are marked (``record_function`` ranges named ``bench:<phase>``, the GPU synchronised at their edges), each phase's
wall time against the time its kernels ran, and how many kernels it launched.

A phase whose kernels run for a small share of its wall time leaves the GPU waiting for the host (Python, launches,
host syncs); one whose kernels fill it is bound by them. Used by benchmarks/decode_profile.py (a decode step) and
benchmarks/harness.py (BENCH_PROFILE_STEPS: the optimizer steps of one generation cycle).
"""

from __future__ import annotations

import bisect

PHASE_PREFIX = "bench:"
# not kernels: CUPTI's own buffer handling, and ranges that only group other kernels (a compiled graph's call, the
# profiler's step marker), which would count those kernels twice
NOT_KERNELS = ("Activity Buffer Request", "Buffer Flush")
GROUPING_PREFIXES = ("ProfilerStep", "aten::", "cuda", "##", PHASE_PREFIX)


def kind(name: str) -> str:
    """A kernel's kind, from its name."""
    lowered = name.lower()
    if any(word in lowered for word in ("flash", "fmha", "attention", "sdpa", "flex", "cudnn")):
        return "attention"
    if any(word in lowered for word in ("gemm", "gemv", "matmul", "cutlass", "sm90_xmma", "nvjet", "splitk")):
        return "matmul"
    if any(word in lowered for word in ("softmax", "topk", "sort", "multinomial", "exponential", "argmax")):
        return "sampling"
    if any(word in lowered for word in ("copy", "cat", "index", "scatter", "memcpy", "memset")):
        return "copies and cache updates"
    if "triton" in lowered:
        return "fused elementwise (triton)"
    return "other"


def is_kernel(name: str) -> bool:
    return name not in NOT_KERNELS and not name.startswith(GROUPING_PREFIXES)


def annotation(event) -> bool:
    """Whether a device event is a range's span on the GPU (DDP's forward, a record_function), not a kernel: counting
    it would count its kernels twice."""
    return bool(getattr(event, "is_user_annotation", False))


def innermost(ranges: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """Nested (start, end, label) ranges, flattened into the pieces of time each label has to itself: a range's
    time minus the ranges inside it. Pieces are sorted and do not overlap; time outside every range is left out."""
    pieces: list[tuple[float, float, str]] = []
    open_ranges: list[tuple[float, float, str]] = []
    cursor = None
    for start, end, label in sorted(ranges, key=lambda r: (r[0], -r[1])):
        while open_ranges and open_ranges[-1][1] <= start:  # close the ranges that ended before this one
            closed = open_ranges.pop()
            if cursor < closed[1]:
                pieces.append((cursor, closed[1], closed[2]))
            cursor = closed[1]
        if open_ranges and cursor < start:
            pieces.append((cursor, start, open_ranges[-1][2]))
        open_ranges.append((start, end, label))
        cursor = start
    while open_ranges:
        closed = open_ranges.pop()
        if cursor < closed[1]:
            pieces.append((cursor, closed[1], closed[2]))
        cursor = closed[1]
    return [piece for piece in pieces if piece[1] > piece[0]]


def by_phase(ranges: list[tuple[float, float, str]], kernels: list[tuple[float, float, str]], window: tuple[float, float],
             steps: int) -> dict:
    """Per optimizer step: each phase's own wall time, its kernels' time, their count and kinds (ms), from phase
    ranges and kernels as (start, end, name) in µs on one clock. A kernel belongs to the innermost phase its start
    falls in; time and kernels outside every phase are ``other``."""
    pieces = innermost(ranges)
    starts = [piece[0] for piece in pieces]
    phases: dict[str, dict] = {}

    def phase(label: str) -> dict:
        return phases.setdefault(label, {"wall_ms": 0.0, "kernel_ms": 0.0, "kernels": 0, "kinds_ms": {}})

    for start, end, label in pieces:
        phase(label)["wall_ms"] += (end - start) / 1000
    phase("other")["wall_ms"] += max(0.0, (window[1] - window[0]) - sum(end - start for start, end, _ in pieces)) / 1000
    for start, end, name in kernels:
        at = bisect.bisect_right(starts, start) - 1
        label = pieces[at][2] if at >= 0 and start < pieces[at][1] else "other"
        entry = phase(label)
        entry["kernel_ms"] += (end - start) / 1000
        entry["kernels"] += 1
        entry["kinds_ms"][kind(name)] = entry["kinds_ms"].get(kind(name), 0.0) + (end - start) / 1000
    for entry in phases.values():
        entry["wall_ms"] = round(entry["wall_ms"] / steps, 3)
        entry["kernel_ms"] = round(entry["kernel_ms"] / steps, 3)
        entry["kernels"] = round(entry["kernels"] / steps, 1)
        entry["kinds_ms"] = {name: round(ms / steps, 3)
                             for name, ms in sorted(entry["kinds_ms"].items(), key=lambda item: -item[1])}
    return phases


SYNCS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize")


def host_by_phase(ranges: list[tuple[float, float, str]], ops: list[tuple[float, float, str]], steps: int,
                  syncs: list[tuple[float, float, str]] = ()) -> dict:
    """Per optimizer step: each phase's top-level operators (those no other operator called) as (start, end, name) in
    µs: how many, and the host time inside them (dispatch, kernel launch, the CPU's own work, and any wait for the GPU
    an operator makes, e.g. ``.item()``); and the time the host waited for the GPU outside them (``syncs``: CUDA
    synchronize calls, such as the harness's at each phase's end). The rest of a phase's wall time is the host's
    own outside any operator: Python (the model's modules, peft, TRL) or, in the backward, the autograd engine."""
    pieces = innermost(ranges)
    starts = [piece[0] for piece in pieces]
    phases: dict[str, dict] = {}
    for events, key in ((ops, "op_ms"), (syncs, "sync_ms")):
        for start, end, _name in events:
            at = bisect.bisect_right(starts, start) - 1
            label = pieces[at][2] if at >= 0 and start < pieces[at][1] else "other"
            entry = phases.setdefault(label, {"ops": 0, "op_ms": 0.0, "sync_ms": 0.0})
            entry["ops"] += key == "op_ms"
            entry[key] += (end - start) / 1000
    return {label: {"ops": round(entry["ops"] / steps, 1), "op_ms": round(entry["op_ms"] / steps, 3),
                    "sync_ms": round(entry["sync_ms"] / steps, 3)} for label, entry in phases.items()}


def operator(name: str) -> bool:
    """Whether a CPU event is an operator call: aten's, another library's registered op (``bitsandbytes::...``), or
    a torch.compile'd region (whose kernels inductor launches without aten operators)."""
    return ("::" in name and not name.startswith(PHASE_PREFIX)) or name.startswith(
        ("Torch-Compiled Region", "CompiledFunction"))


def inside_operator(event) -> bool:
    """Whether a CPU event ran inside an operator call (its time is then that operator's)."""
    parent = event.cpu_parent
    while parent is not None:
        if operator(parent.name):
            return True
        parent = parent.cpu_parent
    return False


def training_profile(prof, steps: int, device: str, generation_recorded: bool = False) -> dict:
    """The summary of a profiled run of ``steps`` optimizer steps (``prof``: a finished torch.profiler.profile);
    ``generation_recorded``: whether the profiler recorded generation's kernels or only its range."""
    from torch.autograd import DeviceType

    ranges, kernels, ops, syncs, top, top_ops = [], [], [], [], {}, {}
    first, last = None, None
    for event in prof.events():
        start, end = event.time_range.start, event.time_range.end
        if event.device_type == DeviceType.CPU:
            first = start if first is None else min(first, start)
            last = end if last is None else max(last, end)
            if event.name.startswith(PHASE_PREFIX):
                ranges.append((start, end, event.name[len(PHASE_PREFIX):]))
            elif event.name.startswith(SYNCS) and not inside_operator(event):  # else its operator's time
                syncs.append((start, end, event.name))
            elif operator(event.name) and not inside_operator(event):  # top-level: no operator called it
                ops.append((start, end, event.name))
        elif event.device_type == DeviceType.CUDA and is_kernel(event.name) and not annotation(event):
            kernels.append((start, end, event.name))
            top[event.name[:90]] = top.get(event.name[:90], 0.0) + (end - start) / 1000
    window = (first or 0.0, last or 0.0)
    phases = by_phase(ranges, kernels, window, steps)
    for label, host in host_by_phase(ranges, ops, steps, syncs).items():
        phases.setdefault(label, {"wall_ms": 0.0, "kernel_ms": 0.0, "kernels": 0, "kinds_ms": {}}).update(host)
    generation_pieces = [(start, end) for start, end, label in innermost(ranges) if label == "generation"]
    for start, end, name in ops:  # the operators the training phases call most, by host time
        if not any(piece_start <= start < piece_end for piece_start, piece_end in generation_pieces):
            top_ops.setdefault(name, [0, 0.0])
            top_ops[name][0] += 1
            top_ops[name][1] += (end - start) / 1000
    if "generation" in phases and not generation_recorded:  # marked only (benchmarks/harness.py says why)
        phases["generation"].update(kernel_ms=None, kernels=None, kinds_ms={})
    return {
        "device": device,
        "steps": steps,
        "wall_ms_per_step": round((window[1] - window[0]) / 1000 / steps, 3),
        "phases": phases,
        "top_kernels_ms_per_step": {name: round(ms / steps, 3)
                                    for name, ms in sorted(top.items(), key=lambda item: -item[1])[:12]},
        "top_host_ops_per_step": {name: {"calls": round(calls / steps, 1), "ms": round(ms / steps, 3)}
                                  for name, (calls, ms) in sorted(top_ops.items(), key=lambda item: -item[1][1])[:12]},
    }


def kernel_summary(prof, per: int) -> dict:
    """Kernel time by kind and the top kernels over a profiled run, divided by ``per`` (e.g. tokens sampled)."""
    kinds: dict[str, float] = {}
    top: dict[str, float] = {}
    for event in prof.key_averages():
        device_us = getattr(event, "self_device_time_total", 0) or getattr(event, "self_cuda_time_total", 0)
        if device_us <= 0 or not is_kernel(event.key) or annotation(event):
            continue
        kinds[kind(event.key)] = kinds.get(kind(event.key), 0.0) + device_us
        top[event.key[:90]] = top.get(event.key[:90], 0.0) + device_us
    return {
        "kernel_ms": sum(kinds.values()) / 1000 / per,
        "kinds_ms": {k: round(v / 1000 / per, 3) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
        "top_kernels_ms": {k: round(v / 1000 / per, 3) for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:12]},
    }


# The harness's phases, as the page names them, in the order a step runs them.
PHASE_TITLES = (
    ("generation", "generation"),
    ("scoring_logps", "scoring: old/reference log-probs"),
    ("rewards", "scoring: rewards"),
    ("generate_and_score", "scoring: the rest (padding, advantages)"),
    ("policy_logps", "policy forward (log-probs)"),
    ("loss", "loss: the rest"),
    ("backward", "backward"),
    ("optimizer", "optimizer"),
    ("other", "other (callbacks, logging, the trainer's loop)"),
)


def own_phases_ms(phases_s: dict) -> dict:
    """The harness's timed phases (seconds per step, each including the phases inside it) as each phase's own
    milliseconds, keyed as the profile's phases are."""
    own = {key: 1000 * value for key, value in phases_s.items()}
    for outer, inner in (("generate_and_score", ("generation", "rewards", "scoring_logps")),
                         ("loss", ("policy_logps",))):
        if outer in own:
            own[outer] = max(0.0, own[outer] - sum(own.get(name, 0.0) for name in inner))
    return own


def render_training(rows: list[dict], run_date: str | None = None) -> str:
    """The page's section on profiled training steps: one table per row that has a ``profile`` (a row without its own
    ``run_date`` is of the run dated ``run_date``)."""
    lines = []
    for row in rows:
        profile = row.get("profile")
        if not profile:
            continue
        phases = profile["phases"]
        on_gpu = profile.get("device") == "cuda"
        kernel_ms = sum(entry["kernel_ms"] or 0.0 for entry in phases.values())
        where = f"{kernel_ms:.0f} in GPU kernels outside generation" if on_gpu else "on a CPU: wall time only"
        date = profile.get("run_date") or row.get("run_date") or run_date  # a kept profile has its own run's date
        lines += ["", f"{row['case']} / {row['name']} ({date}): {profile['steps']} "
                  f"optimizer steps (one generation cycle) under the profiler after the timed ones, "
                  f"{profile['wall_ms_per_step']:.0f} ms per step of wall time, {where}.", "",
                  "| phase | wall ms per step (timed steps) | wall ms per step, profiled | kernels ms per step | "
                  "GPU busy | kernels per step | mean kernel µs | largest kernel kinds, ms |",
                  "|---|---|---|---|---|---|---|---|"]
        timed = own_phases_ms(profile.get("timed_phases_s_per_step") or row.get("phases_s_per_step") or {})
        for key, title in PHASE_TITLES:
            entry = phases.get(key)
            if not entry:
                continue
            start = f"| {title} | {timed[key]:.1f} |" if key in timed else f"| {title} | – |"
            if not on_gpu or entry["kernel_ms"] is None:
                unrecorded = "not recorded (decoding: see the decode table)" if on_gpu else "–"
                lines.append(f"{start} {entry['wall_ms']:.1f} | {unrecorded} | – | – | – | – |")
                continue
            busy = f"{entry['kernel_ms'] / entry['wall_ms']:.0%}" if entry["wall_ms"] > 0 else "–"
            mean_us = f"{1000 * entry['kernel_ms'] / entry['kernels']:.1f}" if entry["kernels"] else "–"
            kinds = ", ".join(f"{name} {ms:.1f}" for name, ms in list(entry["kinds_ms"].items())[:3])
            lines.append(f"{start} {entry['wall_ms']:.1f} | {entry['kernel_ms']:.1f} | {busy} | "
                         f"{entry['kernels']:.0f} | {mean_us} | {kinds} |")
        host_rows = [(title, phases[key]) for key, title in PHASE_TITLES
                     if key in phases and key != "generation" and phases[key].get("ops") is not None]
        if host_rows:
            lines += ["", "Host side of the same steps: the top-level operators each phase called (aten's, other "
                      "libraries', torch.compile'd regions: each launches its kernels and returns, or waits for the GPU "
                      "when it needs a value from it), the host time inside them, the time spent waiting for the GPU "
                      "outside them (CUDA synchronize calls: the harness's at each phase's end), and the rest of the "
                      "phase's profiled wall time: the host's own work outside any operator (Python: the model's "
                      "modules, peft, TRL; in the backward, the autograd engine).", "",
                      "| phase | operators per step | host ms in operators | ms waiting for the GPU | host ms outside "
                      "operators |", "|---|---|---|---|---|"]
            lines += [f"| {title} | {entry['ops']:.0f} | {entry['op_ms']:.1f} | {entry.get('sync_ms', 0.0):.1f} | "
                      f"{max(0.0, entry['wall_ms'] - entry['op_ms'] - entry.get('sync_ms', 0.0)):.1f} |"
                      for title, entry in host_rows]
        if profile.get("top_host_ops_per_step"):
            lines += ["", "| top operators outside generation, by host time | calls per step | host ms per step |",
                      "|---|---|---|"]
            lines += [f"| `{name}` | {entry['calls']:.0f} | {entry['ms']:.1f} |"
                      for name, entry in profile["top_host_ops_per_step"].items()]
        if profile.get("top_kernels_ms_per_step"):
            lines += ["", "| top kernels | ms per step |", "|---|---|"]
            lines += [f"| `{name}` | {ms} |" for name, ms in profile["top_kernels_ms_per_step"].items()]
    if not lines:
        return ""
    return "\n".join(["The phases' GPU time, from `python benchmarks/run.py --profile`: a phase whose kernels fill a "
                      "small share of its wall time waits on the host (Python, kernel launches, host syncs), not on "
                      "the GPU. The profiler records every operator, which slows the host: compare a phase's profiled "
                      "wall time with its timed one."] + lines)
