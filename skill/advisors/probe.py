"""`grpo-skill probe`: will GRPO learn anything with this project? A look before the first step.

It loads the model as train.py does (``runtime.model``: backend, 4-bit, ``[model] adapter``), renders a few of
the dataset's prompts as train.py does, samples ``num_generations`` completions for each with GRPO's sampling
settings, scores them with the project's rewards, and reports what decides whether GRPO can learn: how many
completions hit ``max_completion_length`` (clipped), how many close their thinking, each reward's mean and
spread, how many groups score all the same (zero advantage, nothing learned), lengths and speed. A verdict and
concrete advice follow: the completion budget to set (measured: completions that hit the budget are sampled
on, up to ``LOOKAHEAD`` times it, to see where they end), a warm start with sft.py, other rewards.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core.commands import set_command
from ..core.i18n import N_, _
from ..core.project import ProjectConfig

LOOKAHEAD = 4  # clipped completions are sampled on to this many times max_completion_length, to see where they end
MIN_LOOKAHEAD = 256  # ... and to at least this many tokens
MOSTLY_CLIPPED = 0.5  # above this share of clipped completions, the budget is too small
FEW_CLOSED = 0.5  # below this share of thinking completions that reach </think>
NO_CLOSED = 0.1  # below this share, too few close for GRPO to find them
MOSTLY_FLAT = 0.5  # above this share of zero-spread groups, most steps teach nothing
BUDGET_QUANTILE = 0.9  # advise a budget that this share of completions ends within


@dataclass
class Finding:
    """One problem the probe found: a stable code, the message and the advice (English msgids, translated when
    shown)."""

    code: str
    message: str
    advice: str
    values: dict = field(default_factory=dict)
    blocking: bool = False  # GRPO would learn little or nothing until it is fixed

    def as_dict(self) -> dict:
        return {"code": self.code, "blocking": self.blocking, "message": _(self.message).format(**self.values),
                "advice": _(self.advice).format(**self.values)}


def run(project: str | Path = ".", prompts: int = 4, progress=None, model: str | None = None) -> dict:
    """Probe the project in ``project`` (with ``model`` in place of model.name, as train.py's --model); returns
    every figure, the findings and the verdict as a dict."""
    from ..core import project as projects
    from ..runtime import machine

    say = progress or (lambda message: print(message, file=sys.stderr))
    # as train.py: a model that is neither cached nor reachable is one line now, not a minute of hub retries
    config = projects.load_for_run(project, {"model.name": model} if model else None)
    backend = machine.choose_backend(config.model["backend"])
    if prompts < 1:
        raise projects.ConfigError(_("--prompts must be at least 1"))
    say(_("loading {model} ({backend}) ...").format(model=config.model_path(), backend=backend))
    if backend == "unsloth":
        import unsloth  # noqa: F401  (before transformers, as in train.py)
    from ..runtime import data, model as model_loading

    # as train.py: the tokenizer renders the prompts, then the model loads and keeps that tokenizer
    tokenizer = model_loading.load_tokenizer(config)
    dataset = data.load_dataset(config)
    if prompts > len(dataset):
        say(_("note: --prompts {asked} is more than the dataset's {rows} row(s): probing all of them").format(
            asked=prompts, rows=len(dataset)))
    rows = list(data.chat_dataset(config, tokenizer, _first_rows(dataset, prompts)))
    model, tokenizer = model_loading.load(config, backend, tokenizer)
    model = model_loading.for_sampling(model, backend)
    say(_("sampling {g} completions for each of {n} prompts ...").format(
        g=config.grpo["num_generations"], n=len(rows)))
    samples = sample(model, tokenizer, config, [row["prompt"] for row in rows])
    result = measure(config, tokenizer, rows, samples)
    result.update(project=str(config.project_dir), model=str(config.model_path()), backend=backend,
                  adapter=config.model.get("adapter"))
    return result


def _first_rows(dataset, count: int):
    return dataset.select(range(min(count, len(dataset))))


@dataclass
class Samples:
    completion_ids: list[list[int]]  # cut after the first eos; clipped ones sampled on up to ``lookahead``
    prompt_lengths: list[int]  # one per prompt
    eos_ids: list[int]
    seconds: float  # the sampling up to max_completion_length, as GRPO samples
    tokens: int  # generated in those seconds
    lookahead: int


def sample(model, tokenizer, config: ProjectConfig, prompt_texts: list[str]) -> Samples:
    """``num_generations`` completions per prompt, in one batch, sampled as GRPO samples them
    (``runtime.rollouts``); then those that hit max_completion_length are sampled on (up to ``lookahead`` tokens)
    to see where they would end."""
    import torch

    from ..runtime import rollouts

    budget = config.grpo["max_completion_length"]
    group = config.grpo["num_generations"]
    settings = rollouts.generation_kwargs(config, model, tokenizer)
    eos = rollouts.eos_ids(model, tokenizer)
    encoded = rollouts.encode(tokenizer, prompt_texts)
    limit = getattr(model.config, "max_position_embeddings", None) or budget * LOOKAHEAD
    lookahead = max(budget, min(max(budget * LOOKAHEAD, MIN_LOOKAHEAD), limit - max(map(len, encoded))))
    prompt_ids = [ids for ids in encoded for _ in range(group)]
    torch.manual_seed(rollouts.grpo_setting(config, "seed"))
    started = time.perf_counter()
    completions = rollouts.generate(model, tokenizer, prompt_ids, settings)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    tokens = sum(map(len, completions))

    clipped = [i for i, ids in enumerate(completions) if len(ids) == budget and ids[-1] not in eos]
    if clipped and lookahead > budget:  # a clipped completion holds no eos: prompt + it is a prompt to sample on from
        more = rollouts.generate(model, tokenizer, [prompt_ids[i] + completions[i] for i in clipped],
                                 {**settings, "max_new_tokens": lookahead - budget})
        for i, rest in zip(clipped, more):
            completions[i] = completions[i] + rest
    return Samples(completions, [len(ids) for ids in encoded], eos, seconds, tokens, lookahead)


def measure(config: ProjectConfig, tokenizer, rows: list[dict], samples: Samples) -> dict:
    """Every figure of the report, from the samples cut at the budget as GRPO would see them. ``rows``: the
    prompts' rows of ``data.chat_dataset``."""
    from ..runtime import rollouts

    budget = config.grpo["max_completion_length"]
    group = config.grpo["num_generations"]
    ended_at = [len(ids) if ids and ids[-1] in samples.eos_ids else None for ids in samples.completion_ids]
    seen = [ids[:budget] for ids in samples.completion_ids]  # what GRPO generates
    clipped = [not ids or ids[-1] not in samples.eos_ids for ids in seen]
    texts = rollouts.decode(tokenizer, seen)

    # rewards, called as GRPOTrainer calls them: one entry per completion, the prompt's row repeated for its group
    prompt_texts = [row["prompt"] for row in rows]
    per_reward, totals = rollouts.score(config, config.build_rewards(tokenizer),
                                        [row for row in rows for _ in range(group)], texts, seen)
    groups = [totals[start:start + group] for start in range(0, len(totals), group)]
    zero_spread = [math.isclose(statistics.pstdev(scores), 0.0, abs_tol=1e-8) for scores in groups]

    thinking = _thinking(tokenizer, prompt_texts, seen, clipped, group)
    lengths = [len(ids) for ids in seen]
    result = {
        "prompts": len(rows),
        "num_generations": group,
        "completions": len(seen),
        "max_completion_length": budget,
        "max_seq_length": config.model["max_seq_length"],
        "clipped_ratio": _share(clipped),
        "thinking": thinking,
        "rewards": {name: _stats([s for s in scores if s is not None]) for name, scores in per_reward.items()},
        "reward": _stats(totals),
        "zero_spread_groups": _share(zero_spread),
        "prompt_tokens": _stats(samples.prompt_lengths),
        "longest_prompt_tokens": _longest_prompt(config, tokenizer),  # of the whole dataset: what check measures
        "completion_tokens": _stats(lengths),
        "tokens_per_second": round(samples.tokens / samples.seconds, 1) if samples.seconds > 0 else None,
        "generation_seconds": round(samples.seconds, 2),
        "natural_length": {
            "sampled_up_to": samples.lookahead,
            "ended_share": _share([length is not None for length in ended_at]),
            f"p{round(BUDGET_QUANTILE * 100)}": _ended_within(ended_at, BUDGET_QUANTILE),
        },
        "sampling": rollouts.sampling_settings(config),
        "samples": [{"prompt": prompt_texts[i // group], "completion": texts[i], "clipped": clipped[i],
                     "tokens": lengths[i], "reward": totals[i],
                     "rewards": {name: scores[i] for name, scores in per_reward.items()}}
                    for i in range(0, len(seen), group)],  # the first completion of each group
    }
    findings = diagnose(result, ended_at, config)
    result["findings"] = [finding.as_dict() for finding in findings]
    result["verdict"] = "change" if any(f.blocking for f in findings) else "ready"
    return result


def _thinking(tokenizer, prompt_texts: list[str], seen: list[list[int]], clipped: list[bool], group: int) -> dict:
    """Share of thinking completions that close it with </think> (by token id), and how thinking is set."""
    from ..runtime.warmstart import THINK_END, THINK_START, knows_think_end, thinking_state

    if not knows_think_end(tokenizer):
        return {"mode": "none", "closed_ratio": None, "thinking_completions": 0, "unclosed_clipped": 0.0}
    end_id, start_id = tokenizer.convert_tokens_to_ids(THINK_END), tokenizer.convert_tokens_to_ids(THINK_START)
    states = [thinking_state(text) for text in prompt_texts for _ in range(group)]
    thinks = [state == "open" or (state == "model" and start_id in ids) for state, ids in zip(states, seen)]
    closed = [end_id in ids for ids, on in zip(seen, thinks) if on]
    unclosed_clipped = [cut for ids, on, cut in zip(seen, thinks, clipped) if on and end_id not in ids]
    modes = sorted(set(states))
    return {"mode": modes[0] if len(modes) == 1 else "mixed", "closed_ratio": _share(closed) if closed else None,
            "thinking_completions": len(closed), "unclosed_clipped": _share(unclosed_clipped)}


def diagnose(result: dict, ended_at: list[int | None], config: ProjectConfig) -> list[Finding]:
    """The problems that keep GRPO from learning (``blocking``) or slow it, each with its fix."""
    findings = []
    budget = result["max_completion_length"]
    clipped, thinking = result["clipped_ratio"], result["thinking"]
    closed = thinking["closed_ratio"]
    suggestion, lower_bound = suggest_budget(ended_at, result["natural_length"]["sampled_up_to"])
    # thinking cut off by the budget: more room lets it close
    cut_thinking = closed is not None and closed < FEW_CLOSED and thinking["unclosed_clipped"] > 0.5
    if clipped > MOSTLY_CLIPPED or (cut_thinking and suggestion > budget):
        longest = max(result["prompt_tokens"]["max"] or 0, result.get("longest_prompt_tokens") or 0)
        seq = _round_up(suggestion + longest, 256)
        raised = {"grpo.max_completion_length": suggestion,
                  **({"model.max_seq_length": seq} if seq > result["max_seq_length"] else {})}
        values = {"clipped": _percent(clipped), "budget": budget, "suggestion": suggestion,
                  "sampled": result["natural_length"]["sampled_up_to"],
                  "command": set_command(raised, config.project_dir)}  # model.max_seq_length too where it must grow
        advice = (N_("raise [grpo] max_completion_length to at least {suggestion} (fewer than nine in ten completions "
                     "ended even when sampled on to {sampled} tokens): {command}, then probe again")
                  if lower_bound else
                  N_("raise [grpo] max_completion_length to {suggestion}, within which nine in ten completions end: "
                     "{command}; or reward shorter completions (e.g. soft_overlong)"))
        findings.append(Finding("clipped", N_("{clipped} of the completions hit max_completion_length ({budget} "
                                              "tokens) before they ended"), advice, values, blocking=True))
    if closed is not None and closed < FEW_CLOSED:
        values = {"closed": _percent(closed)}
        if cut_thinking:
            findings.append(Finding("unclosed_thinking", N_("only {closed} of the thinking completions close it "
                                                            "with </think> before the budget runs out"),
                                    N_("more room lets them close (see the budget above)"), values,
                                    blocking=closed < NO_CLOSED))
        else:
            findings.append(Finding("unclosed_thinking", N_("only {closed} of the thinking completions close it "
                                                            "with </think>; the others end without closing it"),
                                    N_("warm-start with sft.py on examples that think, close </think> and answer, "
                                       "then run the grpo-skill set command it prints ([model] adapter)"), values,
                                    blocking=closed < NO_CLOSED))
    if result["zero_spread_groups"] > MOSTLY_FLAT:
        flat = [name for name, stats in result["rewards"].items() if stats["std"] in (0.0, None)]
        values = {"share": _percent(result["zero_spread_groups"]), "flat": ", ".join(flat) or "-"}
        if findings and findings[0].code == "clipped":
            advice = N_("fix the budget first: completions cut off at the budget often all score the same")
        elif len(flat) == len(result["rewards"]):
            advice = N_("no completion scores differently from the others: warm-start with sft.py so that the "
                        "model shows the behaviour sometimes, or use graded rewards (flat: {flat})")
        else:
            advice = N_("use graded rewards that tell one prompt's completions apart (flat: {flat}), more "
                        "num_generations, or a warm start with sft.py")
        findings.append(Finding("zero_spread", N_("{share} of the groups score all their completions the same: "
                                                  "their advantages are zero and GRPO learns nothing from them"),
                                advice, values, blocking=True))
    if config.builds_its_model():
        # the tiny preset: random weights, where the advice above would only move the padding (e.g. a longer budget
        # is filled just the same)
        findings.append(Finding("random_weights", N_("{model} is the {preset} preset's model, built here with "
                                                        "random weights: a smoke test of the plumbing"),
                                   N_("the figures show that the project runs, not what a real model would do; "
                                      "probe a project with a real model before a real run"),
                                   {"model": config.model["name"], "preset": config.preset.name}))
    return findings


def _longest_prompt(config: ProjectConfig, tokenizer) -> int | None:
    """The dataset's longest prompt in tokens, rendered as GRPO renders it (`check` and train.py refuse a budget it
    does not fit beside), of its longest in characters as `plan` counts them; None where the prompts cannot be read
    here (a hub dataset)."""
    from ..runtime.data import chat_prompt
    from ..runtime.promptlength import longest_by_characters, prompts

    texts = prompts(config.dataset_file(), config.dataset["prompt_column"])
    if not texts:
        return None
    rendered = [chat_prompt(config, tokenizer, text) for text in longest_by_characters(texts)]
    return max(len(ids) for ids in tokenizer(rendered).input_ids)


def suggest_budget(ended_at: list[int | None], sampled_up_to: int) -> tuple[int, bool]:
    """(max_completion_length to advise, whether it is only a lower bound): the length within which
    BUDGET_QUANTILE of all completions ended, rounded up; twice the look-ahead when fewer ended."""
    within = _ended_within(ended_at, BUDGET_QUANTILE)
    if within is None:
        return _round_up(2 * sampled_up_to, 64), True
    return _round_up(within, 64), False


def _ended_within(ended_at: list[int | None], q: float) -> int | None:
    """The length within which a share ``q`` of all completions ended; None when fewer than that ended."""
    ended = sorted(length for length in ended_at if length is not None)
    index = math.ceil(q * len(ended_at)) - 1
    return ended[max(index, 0)] if index < len(ended) and ended else None


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(value / step) * step)


def _share(flags) -> float:
    flags = list(flags)
    return round(sum(bool(flag) for flag in flags) / len(flags), 3) if flags else 0.0


def _percent(share: float) -> str:
    return f"{share:.0%}"


def _stats(values) -> dict:
    values = list(values)
    if not values:
        return {"mean": None, "std": None, "min": None, "max": None}
    return {"mean": round(statistics.fmean(values), 4), "std": round(statistics.pstdev(values), 4),
            "min": min(values), "max": max(values)}


VERDICTS = {
    "ready": N_("verdict: GRPO has something to learn here: completions end within the budget and the rewards "
                "tell them apart"),
    "change": N_("verdict: change the project before training; as it is, GRPO would learn little or nothing"),
}


def report_lines(result: dict) -> list[str]:
    """The probe's report as text lines, in the current language."""
    thinking = result["thinking"]
    modes = {"open": N_("the template opens <think>"), "off": N_("thinking switched off by the template"),
             "model": N_("the model decides"), "none": N_("the tokenizer has no </think>"), "mixed": N_("mixed")}
    lines = [
        _("probe: {completions} completions ({prompts} prompts x {g}), max_completion_length {budget}, "
          "{backend}").format(completions=result["completions"], prompts=result["prompts"],
                              g=result["num_generations"], budget=result["max_completion_length"],
                              backend=result["backend"]),
        _("  sampled as GRPO samples: {settings}").format(settings=", ".join(
            f"{name} {value}" for name, value in result["sampling"].items() if name != "max_completion_length")),
        _("  clipped (hit max_completion_length): {value}").format(value=_percent(result["clipped_ratio"])),
        _("  closed </think>: {value} ({mode})").format(
            value=_percent(thinking["closed_ratio"]) if thinking["closed_ratio"] is not None else "-",
            mode=_(modes[thinking["mode"]])),
        _("  groups with zero spread: {value}").format(value=_percent(result["zero_spread_groups"])),
        _("  reward (weighted sum): mean {mean:+.3f}, std {std:.3f}").format(**result["reward"]),
    ]
    for name, stats in result["rewards"].items():
        lines.append(_("  reward {name}: mean {mean}, std {std}").format(
            name=name, mean="-" if stats["mean"] is None else f"{stats['mean']:+.3f}",
            std="-" if stats["std"] is None else f"{stats['std']:.3f}"))
    natural = result["natural_length"]
    quantile_key = f"p{round(BUDGET_QUANTILE * 100)}"
    lines += [
        _("  prompt tokens: mean {mean:.0f}, max {max}").format(**result["prompt_tokens"]),
        _("  completion tokens: mean {mean:.0f}, max {max}").format(**result["completion_tokens"]),
        _("  sampled on to {limit} tokens: {ended} ended, 90% within {p90}").format(
            limit=natural["sampled_up_to"], ended=_percent(natural["ended_share"]),
            p90=natural[quantile_key] if natural[quantile_key] is not None else "-"),
        _("  generation: {speed} tokens/s ({seconds} s)").format(speed=result["tokens_per_second"],
                                                               seconds=result["generation_seconds"]),
        _(VERDICTS[result["verdict"]]),
    ]
    for finding in result["findings"]:
        mark = "!" if finding["blocking"] else "-"
        lines.append(_("  {mark} {message}: {advice}").format(mark=mark, **finding))
    return lines
