"""The side-by-side GRPO benchmark: the generated project against a hand-written Unsloth loop and plain TRL, on one
random-weight Qwen3-4B-shape model, in one GPU session.

    python benchmarks/run.py --out DIR [--suite default|overhead|levers|training|generation|all ...] [--only NAME ...] [--budget S]
    python benchmarks/run.py --out DIR --rounds 2 --only 'standard/hand-written unsloth' 'standard/generated unsloth'
        # each contender twice, in the order A B B A: a drift of the machine weighs on both alike
    python benchmarks/run.py --out DIR --dry-run     # a CPU: tiny model, TRL contenders only; checks the plumbing
    python benchmarks/run.py --list [--suite ...]     # the contenders, what each tells, the time each is planned

Each contender runs in its own process (benchmarks/harness.py times it), one at a time per GPU; the next one's
imports overlap the current one's training, never its timed steps. A contender past its time limit is stopped and
recorded as "timed out" (with what it measured so far); one that does not fit the budget any more is "skipped" (the
one contender of a call starts whatever its plan, stopped at the budget's end if it must be).
DIR gets benchmarks.json and benchmarks.md after every contender (a cut-off run still reports what finished) and
logs/ (one log per contender); the model, the generated projects and their outputs go to --work. Copy
benchmarks.{json,md} to docs/ to commit them. The table is printed last.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import contenders as catalog  # noqa: E402
import report as reporting  # noqa: E402

HARNESS = HERE / "harness.py"
SCRIPTS = {"hand-written unsloth": HERE / "handwritten_unsloth.py", "plain trl": HERE / "plain_trl.py"}
TIMEOUT_FACTOR = 2.5  # a contender may take this many times its planned time before it is stopped
# Plans are rough and on the safe side: a contender starts when this share of its plan fits in the budget left
# (one cut off by the end of the budget is recorded as timed out, with the steps it measured).
START_FRACTION = 0.7
EXIT_GRACE_S = 90  # after its result, a contender finishes its script (saving, plots); then it is stopped
POLL_S = 0.2


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def grpo_skill(*args: str, cwd=None) -> str:
    done = subprocess.run([sys.executable, "-m", "grpo_skill.cli", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"grpo-skill {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def toml_literal(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{key} = {toml_literal(item)}" for key, item in value.items()) + " }"
    return json.dumps(value)  # strings, numbers, booleans and lists read the same in TOML


def edit_toml(path: Path, section: str, values: dict, remove: tuple[str, ...] = ()) -> None:
    """Set (and remove) keys of one [section] of a generated config.toml, line by line, as a user would."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"^\[{re.escape(section)}\]", line))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    body = [line for line in lines[start + 1:end]
            if not any(re.match(rf"^{re.escape(key)}\s*=", line) for key in (*values, *remove))]
    body = [f"{key} = {toml_literal(value)}" for key, value in values.items()] + body
    path.write_text("\n".join(lines[:start + 1] + body + lines[end:]) + "\n", encoding="utf-8")


def preset_speed(preset_name: str, grpo: dict) -> dict:
    """The preset's speed settings (catalog.SPEED_KEYS in its GRPOConfig), for a case whose GRPOConfig is ``grpo``.

    steps_per_generation counts micro-batches: the preset's (a multiple of its gradient_accumulation_steps) is kept
    as optimizer steps per generation, which is what the case's own gradient_accumulation_steps then multiplies.
    """
    from grpo_skill import plugins

    own = plugins.get_preset(preset_name).grpo
    speed = {key: own[key] for key in catalog.SPEED_KEYS if key in own}
    if "steps_per_generation" in speed:
        per_optimizer_step = own.get("gradient_accumulation_steps", 1)
        speed["steps_per_generation"] = (speed["steps_per_generation"] // per_optimizer_step
                                         * grpo["gradient_accumulation_steps"])
    return speed


def settings_for(contender: catalog.Contender, dry_run: bool, profile: str | None = None) -> dict:
    case = (catalog.DRY_CASES if dry_run else catalog.CASES)[contender.case]
    grpo = {**catalog.GRPO_COMMON, **(catalog.DRY_GRPO if dry_run else {}),
            "max_completion_length": case["max_completion_length"]}
    model_shape = {}
    if contender.preset_shape:  # the preset's own group, micro-batches and lengths (a dry run keeps its short ones)
        from grpo_skill import plugins

        own = plugins.get_preset(case["preset"])
        grpo.update({key: own.grpo[key] for key in catalog.SHAPE_KEYS if key in own.grpo
                     and not (dry_run and key == "max_completion_length")})
        model_shape = {} if dry_run else {"max_seq_length": own.max_seq_length}
    speed_source = None
    if contender.preset_speed:  # counted in the contender's own micro-batches where it changes them
        grpo.update(preset_speed(case["preset"], {**grpo, **contender.grpo}))
        speed_source = f"preset {case['preset']}"
    grpo.update(contender.grpo)
    if dry_run and grpo.get("steps_per_generation", 1) > 2:
        grpo["steps_per_generation"] = 2  # the plumbing, not the numbers: keep the CPU run short
    # the generated project left to "auto": the preset's own weights and checkpointing unless the contender changes them
    preset = None
    if contender.program == "generated" and contender.backend == "auto":
        from grpo_skill import plugins

        preset = plugins.get_preset(case["preset"])
    lora = dict(catalog.LORA_COMMON)
    if dry_run:
        lora["gradient_checkpointing"] = False  # the tiny model on a CPU: as the tiny preset trains
    elif preset:
        lora["gradient_checkpointing"] = preset.lora.gradient_checkpointing
    lora.update(contender.lora)
    batch, accumulation = grpo["per_device_train_batch_size"], grpo["gradient_accumulation_steps"]
    micro_batches = grpo.get("steps_per_generation") or (grpo["generation_batch_size"] // batch
                                                         if "generation_batch_size" in grpo else accumulation)
    spg = max(1, micro_batches // accumulation)  # optimizer steps per generation: what the timed steps count
    warmup, measure = (1, 1) if dry_run else (contender.warmup_cycles, contender.measure_cycles)
    model = {**catalog.MODEL_COMMON, "max_seq_length": case["max_seq_length"], **model_shape, **contender.model}
    if preset and "load_in_4bit" not in contender.model:
        model["load_in_4bit"] = preset.load_in_4bit
    return {
        "program": contender.program, "backend": contender.backend, "preset": case["preset"],
        "model": model,
        "lora": lora, "grpo": grpo, "steps_per_generation": spg,
        "warmup_steps": warmup * spg, "measure_steps": measure * spg,
        "profile_steps": spg if profile else 0,  # one generation cycle under the profiler, after the timed steps
        "profile_generation": profile == "all",  # its decoding's kernels too (many: slow to summarise)
        "env": dict(contender.env), "ablate": list(contender.ablate), "tty": contender.tty,
        "compile_decode": contender.compile_decode, "speed_source": speed_source, "run_steps": contender.run_steps,
        # the run's length as train.py sees it (the decode step's compile mode and compile_layers follow it): the
        # contender's own, else the preset's max_steps for a project left to "auto"; the harness stops it early
        "max_steps": contender.run_steps or grpo.get("max_steps") or (preset.grpo.get("max_steps") if preset else None),
        "copy_shares_frozen": True,  # the fast path's copy holds no second copy of frozen 16-bit weights (plan reads it)
        "copy_keeps_cache": True,  # ...and keeps its KV cache through training (plan reads it)
    }


def schedule(contenders: list, rounds: int) -> list[tuple]:
    """(contender, round) in running order: every other round backwards (A B, B A, A B ...), so that a machine that
    speeds up or slows down during the run favours no contender."""
    return [(contender, number) for number in range(1, rounds + 1)
            for contender in (contenders if number % 2 else contenders[::-1])]


def planned_seconds(contender: catalog.Contender, settings: dict) -> float:
    steps = settings["warmup_steps"] + settings["measure_steps"]
    # profiled steps run about twice as slowly, and the profile takes a while to summarise
    profiled = 0
    if settings["profile_steps"]:
        profiled = 2 * settings["profile_steps"] * contender.guess_s_per_step + (180 if settings["profile_generation"]
                                                                                else 60)
    return contender.fixed_s + steps * contender.guess_s_per_step + profiled


@dataclass
class Job:
    index: int
    contender: catalog.Contender
    settings: dict
    round: int = 1
    command: list[str] = field(default_factory=list)
    cwd: Path | None = None
    workdir: Path | None = None
    planned_s: float = 0.0
    process: subprocess.Popen | None = None
    gpu: int | None = None
    log: Path | None = None
    launched: float = 0.0
    released: float | None = None  # when it got the GPU (BENCH_GO)
    result_at: float | None = None
    row: dict | None = None

    def path(self, name: str) -> Path:
        return self.workdir / name

    @property
    def ready(self) -> bool:
        return self.path("ready").exists()

    def release(self) -> None:
        if self.released is None:
            self.path("go").write_text("go\n")
            self.released = time.time()


class Benchmark:
    def __init__(self, args):
        self.args = args
        self.out = args.out.resolve()
        self.work = Path(args.work).resolve()  # never under --out: it holds an 8 GB model and the adapters
        self.logs = self.out / "logs"
        self.rounds = getattr(args, "rounds", 1)  # a row names its round only when there are several
        self.started = time.time()
        self.deadline = self.started + args.budget
        self.report = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                       "suites": args.suite, "budget_s": args.budget, "dry_run": args.dry_run,
                       "rounds": self.rounds, "rows": [],
                       "command": " ".join(sys.argv)}
        self.finishing: list[Job] = []
        self.lock = threading.Lock()
        self.alone = False  # whether the call runs a single contender (set by run)

    # -- set-up --------------------------------------------------------------------------------------------------
    def environment(self) -> dict:
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_report.py"), "env"], capture_output=True,
                              text=True)
        return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-500:]}

    def build_model(self) -> Path:
        if self.args.model:
            return Path(self.args.model).resolve()
        shape = "tiny" if self.args.dry_run else "qwen3-4b"
        target = self.work / f"model-{shape}"  # reused when a previous run built it (the build is atomic)
        began = time.time()
        print(f"building the {shape} model", file=sys.stderr, flush=True)
        grpo_skill("build-model", "--shape", shape, "--out", str(target))
        self.report["model_build_s"] = round(time.time() - began, 1)
        return target

    def describe_model(self, path: Path) -> dict:
        config = json.loads((path / "config.json").read_text())
        keys = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "head_dim", "tie_word_embeddings")
        shape = {key: config.get(key) for key in keys}
        name = "tiny Qwen3 (built locally)" if self.args.dry_run else "Qwen3-4B shape, random weights, bf16 on disk"
        return {"path": str(path), "description": f"{name}: " + ", ".join(f"{k} {v}" for k, v in shape.items()),
                "shape": shape}

    def prepare(self, job: Job, model: Path, prompts: Path) -> None:
        contender, settings = job.contender, job.settings
        job.workdir = self.work / f"{job.index:02d}-{slug(contender.case)}-{slug(contender.name)}"
        if job.workdir.exists():
            shutil.rmtree(job.workdir)
        job.workdir.mkdir(parents=True)
        steps = settings["warmup_steps"] + settings["measure_steps"] + settings["profile_steps"]
        if contender.program == "generated":
            grpo_skill("new", "project", "--preset", settings["preset"], "--backend", contender.backend,
                       "--model", str(model), "-o", str(job.workdir))
            project = job.workdir / "project"
            config = project / "config.toml"
            model_keys = {key: settings["model"][key] for key in ("max_seq_length", "load_in_4bit")}
            model_keys.update(job.contender.model)  # the contender's own [model] switches (compile_layers = false)
            if settings["compile_decode"] and settings["model"]["load_in_4bit"] is False:
                model_keys["compile_decoding"] = True  # the project's own switch (refused with 4-bit weights)
            edit_toml(config, "model", model_keys)
            edit_toml(config, "lora", settings["lora"])
            grpo = settings["grpo"]
            edit_toml(config, "grpo", grpo, remove=tuple(key for key in catalog.SPEED_KEYS if key not in grpo))
            run_length = max(settings.get("max_steps") or 0, steps)
            script_args = [str(project / "train.py"), "--max-steps", str(run_length),
                           "--backend", contender.backend,
                           "--output-dir", str(job.workdir / "outputs")]
            job.cwd = project
        else:
            spec = {"model": str(model), "prompts": str(prompts), "case": contender.case,
                    "max_seq_length": settings["model"]["max_seq_length"],
                    "load_in_4bit": settings["model"]["load_in_4bit"], "lora": settings["lora"],
                    "grpo": settings["grpo"], "output_dir": str(job.workdir / "outputs"), "max_steps": steps,
                    "compile_decode": settings["compile_decode"]}
            (job.workdir / "settings.json").write_text(json.dumps(spec, indent=2))
            script_args = [str(SCRIPTS[contender.program]), str(job.workdir / "settings.json")]
            job.cwd = job.workdir
        job.command = [sys.executable, str(HARNESS), "--result", str(job.path("result.json")), "--progress",
                       str(job.path("progress.json")), "--", *script_args]
        job.planned_s = planned_seconds(contender, settings)

    # -- running -------------------------------------------------------------------------------------------------
    def launch(self, job: Job, gpu: int | None) -> None:
        settings = job.settings
        env = {**os.environ, "PYTHONUNBUFFERED": "1",
               "BENCH_WARMUP_STEPS": str(settings["warmup_steps"]),
               "BENCH_MEASURE_STEPS": str(settings["measure_steps"]),
               "BENCH_PROFILE_STEPS": str(settings["profile_steps"]),
               "BENCH_PROFILE_GENERATION": "1" if settings["profile_generation"] else "0",
               "BENCH_READY": str(job.path("ready")), "BENCH_GO": str(job.path("go")),
               "BENCH_QUIET": str(job.path("quiet")), "BENCH_ABLATE": ",".join(settings["ablate"]),
               # one compile cache for every Unsloth contender: only the first pays Unsloth's compilation
               "UNSLOTH_COMPILE_LOCATION": str(self.work / "unsloth_compiled_cache"),
               **settings["env"]}
        if settings["compile_decode"] and job.contender.program == "generated" and settings["model"]["load_in_4bit"] is True:
            env["BENCH_COMPILE_DECODE"] = "1"  # 4-bit: train.py refuses compile_decoding, so the harness turns it on
        job.gpu = gpu
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        if self.args.dry_run:
            env.setdefault("OMP_NUM_THREADS", "1")  # a shared CPU: several threads per tiny matmul only wait
        self.logs.mkdir(parents=True, exist_ok=True)
        job.log = self.logs / f"{job.index:02d}-{slug(job.contender.case)}-{slug(job.contender.name)}.log"
        with job.log.open("w") as handle:
            handle.write(f"$ {' '.join(job.command)}\n# cwd {job.cwd}\n# settings {json.dumps(settings)}\n")
        if settings["tty"]:
            env.update({"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"})
            master, slave = pty.openpty()
            job.process = subprocess.Popen(job.command, cwd=job.cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave,
                                           stderr=slave, start_new_session=True)
            os.close(slave)
            threading.Thread(target=self._drain, args=(master, job.log), daemon=True).start()
        else:
            with job.log.open("a") as handle:
                job.process = subprocess.Popen(job.command, cwd=job.cwd, env=env, stdin=subprocess.DEVNULL,
                                               stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        job.launched = time.time()

    @staticmethod
    def _drain(master: int, log: Path) -> None:
        with log.open("ab") as handle:
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                handle.write(chunk)
        os.close(master)

    def stop(self, job: Job) -> None:
        if job.process and job.process.poll() is None:
            try:
                os.killpg(job.process.pid, 15)
                job.process.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(job.process.pid, 9)
                except ProcessLookupError:
                    pass
                job.process.wait()

    def record(self, job: Job, status: str, error: str = "") -> None:
        contender = job.contender
        row = {"name": contender.name, "case": contender.case, "program": contender.program,
               "backend": contender.backend, "status": status, "tells": contender.tells,
               "settings": job.settings, "planned_s": round(job.planned_s),
               # the project as `new` makes it: backend and generation left to "auto", the preset's speed settings
               "preset_defaults": catalog.preset_defaults(contender), "equal_work": not contender.preset_shape}
        if self.rounds > 1:
            row["round"] = job.round
        for source in ("result.json", "progress.json"):
            path = job.path(source) if job.workdir else None
            if path and path.is_file():
                measured = json.loads(path.read_text())
                row.update({key: value for key, value in measured.items() if key not in row})
                break
        if job.launched:
            row["wall_s"] = round(time.time() - job.launched, 1)
        if error:
            row["error"] = error
        job.row = row
        with self.lock:
            self.report["rows"].append(row)
            self.save()
        print(f"[{time.time() - self.started:6.0f} s] {contender.case}/{contender.name}: {status}"
              + (f", {row['s_per_step']} s/step" if row.get("s_per_step") else ""), file=sys.stderr, flush=True)

    @staticmethod
    def read_took(job: Job) -> None:
        """The path "auto" took, as train.py's summary says: written when its training has ended, after the
        harness's result, so it is read once the process is over."""
        summary = job.workdir / "outputs" / "summary.json" if job.workdir else None
        if job.contender.program == "generated" and summary and summary.is_file():
            said = json.loads(summary.read_text())
            job.row["took"] = {key: said[key] for key in ("backend", "generation", "load_in_4bit",
                                                          "gradient_checkpointing", "checkpoint_every_n_layers",
                                                          "micro_batches", "decode_compile_mode", "compiled_layers")
                               if key in said}

    def log_tail(self, job: Job, lines: int = 25) -> str:
        text = job.log.read_text(errors="replace") if job.log and job.log.is_file() else ""
        return "\n".join(text.splitlines()[-lines:])

    def save(self) -> None:
        self.report["wall_s"] = round(time.time() - self.started, 1)
        reporting.write(self.report, self.out / "benchmarks")

    def fits(self, job: Job, start_at: float) -> bool:
        if self.alone:  # the call's one contender: its plan is a guess, and skipping it leaves the call with nothing
            return start_at < self.deadline
        return start_at + START_FRACTION * job.planned_s <= self.deadline

    def run(self, jobs: list[Job], gpus: list[int | None]) -> None:
        queue = list(jobs)
        self.alone = len(jobs) == 1
        slots = {gpu: {"current": None, "next": None, "decided": False} for gpu in gpus}

        def take(start_at: float) -> Job | None:
            for job in list(queue):
                if self.fits(job, start_at):
                    queue.remove(job)
                    return job
            return None

        while True:
            now = time.time()
            for job in [j for j in queue if not self.fits(j, now)]:
                queue.remove(job)
                self.record(job, "skipped", f"not started: planned {job.planned_s:.0f} s, "
                                            f"{max(self.deadline - now, 0):.0f} s of the budget left")
            for gpu, slot in slots.items():
                current = slot["current"]
                if current is None:
                    if self.still_holds(gpu):
                        continue
                    current = slot["next"] or take(now)
                    slot["next"] = None
                    if current is None:
                        continue
                    if current.process is None:
                        self.launch(current, gpu)
                    current.release()
                    slot["current"], slot["decided"] = current, False
                # Once this one's imports are over (two imports at once would race on Unsloth's compile cache), the
                # next contender imports while this one loads and warms up, if it fits after it.
                if not slot["decided"] and (current.ready or current.path("progress.json").exists()
                                            or current.process.poll() is not None):
                    slot["decided"] = True
                    follower = take(current.released + current.planned_s)
                    if follower is not None:
                        self.launch(follower, gpu)
                        slot["next"] = follower
                self.watch(slot, now)
            self.reap(now)
            busy = any(slot["current"] or slot["next"] for slot in slots.values())
            if not busy and not queue:
                break
            if now >= self.deadline:
                for slot in slots.values():
                    for key in ("current", "next"):
                        job = slot[key]
                        if job is not None:
                            self.stop(job)
                            self.record(job, "timed out", "the run's budget ended\n" + self.log_tail(job))
                            slot[key] = None
                for job in queue:
                    self.record(job, "skipped", "the run's budget ended")
                queue.clear()
                break
            time.sleep(POLL_S)
        while self.finishing:  # let the last ones end their scripts (within their grace and the budget)
            now = time.time()
            if now >= self.deadline:
                for job in self.finishing:
                    job.result_at = now - EXIT_GRACE_S
            self.reap(now)
            time.sleep(POLL_S)

    def still_holds(self, gpu: int | None) -> bool:
        """Whether a contender past its result still runs on this GPU: it holds its memory until its process ends
        (it saves and plots after its result), so the next one loads only then (on an 80 GB card two thinking
        contenders do not fit)."""
        return any(job.gpu == gpu and job.process.poll() is None for job in self.finishing)

    def watch(self, slot: dict, now: float) -> None:
        current, follower = slot["current"], slot["next"]
        if current is None:
            return
        # the timed steps start once the follower's imports are over
        if not current.path("quiet").exists() and slot["decided"] and (
                follower is None or follower.ready or follower.process.poll() is not None):
            current.path("quiet").write_text("quiet\n")
        exited = current.process.poll() is not None
        if current.path("result.json").is_file():
            current.result_at = now
            self.record(current, "ok")
            self.finishing.append(current)
            slot["current"] = None
        elif exited:
            self.record(current, "failed", f"exit status {current.process.returncode}\n" + self.log_tail(current))
            slot["current"] = None
        elif now - current.released > TIMEOUT_FACTOR * current.planned_s or now >= self.deadline:
            self.stop(current)
            self.record(current, "timed out", f"stopped after {now - current.released:.0f} s (planned "
                                              f"{current.planned_s:.0f} s)\n" + self.log_tail(current))
            slot["current"] = None

    def reap(self, now: float) -> None:
        for job in list(self.finishing):
            code = job.process.poll()
            if code is None and now - job.result_at < EXIT_GRACE_S:
                continue
            if code is None:
                self.stop(job)
                code = "stopped after its result"
            job.row["exit_status"] = code
            self.read_took(job)
            self.finishing.remove(job)
            with self.lock:
                self.save()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where to write benchmarks.{json,md}, logs/ and work/")
    parser.add_argument("--suite", nargs="+", default=["default"], choices=[*catalog.SUITES, "all"])
    parser.add_argument("--only", nargs="+", default=[], metavar="CASE/NAME",
                        help="only these contenders; shell-style patterns: 'thinking/*', '*/generated unsloth*'")
    parser.add_argument("--budget", type=float, default=540, help="seconds for the whole run (default 540)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run each contender this many times, every other round in reverse order (default 1)")
    parser.add_argument("--model", help="a model folder already built (skips building one)")
    parser.add_argument("--work", default="/tmp/grpo-skill-bench",
                        help="scratch folder: the model, the generated projects, their outputs (default: %(default)s)")
    parser.add_argument("--gpus", type=int, default=1, help="run this many contenders side by side, one per GPU")
    parser.add_argument("--dry-run", action="store_true",
                        help="this machine, no GPU: the tiny model and the TRL contenders, to check the plumbing")
    parser.add_argument("--profile", nargs="?", const="training", choices=["training", "all"],
                        help="after each contender's timed steps, profile one more generation cycle: each phase's "
                             "wall time against its GPU kernels' (the 'Where a training step goes' table); 'all': "
                             "generation's kernels too (slower to summarise)")
    parser.add_argument("--list", action="store_true", help="print the contenders and exit")
    args = parser.parse_args(argv)

    contenders = catalog.DRY if args.dry_run else catalog.suite(args.suite)
    if args.only:
        contenders = [c for c in contenders if any(fnmatch.fnmatchcase(c.key, pattern) for pattern in args.only)]
    if args.rounds < 1:
        parser.error("--rounds must be 1 or more")
    jobs = [Job(index, contender, settings_for(contender, args.dry_run, args.profile), number)
            for index, (contender, number) in enumerate(schedule(contenders, args.rounds))]
    for job in jobs:
        job.planned_s = planned_seconds(job.contender, job.settings)
    if args.list:
        for job in jobs:
            key = reporting.labelled(job.contender.key, job.round if args.rounds > 1 else None)
            print(f"{key:50} {job.planned_s:5.0f} s  {job.contender.tells}")
        print(f"{'total':50} {sum(job.planned_s for job in jobs):5.0f} s (imports overlap; model build ~35 s more)")
        return 0
    if not args.out:
        parser.error("--out DIR is required")
    if args.dry_run and args.out.resolve().is_relative_to(ROOT / "docs"):
        parser.error("a dry run never writes docs/: give another --out")
    if not jobs:
        parser.error("no contender matches --only")

    bench = Benchmark(args)
    bench.out.mkdir(parents=True, exist_ok=True)
    bench.report["environment"] = bench.environment()
    model = bench.build_model()
    bench.report["model"] = bench.describe_model(model)
    prompts = Path(str(resources.files("grpo_skill.templates").joinpath("project/_i18n/data/prompts.en.jsonl")))
    for job in jobs:
        bench.prepare(job, model, prompts)
    bench.save()
    gpus = [None] if args.gpus <= 1 else list(range(args.gpus))
    try:
        bench.run(jobs, gpus)
    finally:
        bench.save()
    print(reporting.table(bench.report))
    return 0 if any(row["status"] == "ok" for row in bench.report["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
