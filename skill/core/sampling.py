"""Does one generation's draw of prompts fit the dataset?

TRL's GRPOTrainer samples prompts with its RepeatSampler: it shuffles the dataset, cuts it into chunks of
``generation_batch_size / num_generations`` distinct prompts and drops the last, shorter chunk. A dataset with fewer
rows than one chunk yields no chunk at all: training "finishes" at step 0 and exits 0 (trl 1.14.2, seen with 24 rows
and 32 prompts a generation). So such a layout is refused here, with the steps_per_generation that fits.
"""

from __future__ import annotations

from .i18n import _
from .schema import grpo_value


def generation_batch(grpo: dict, processes: int) -> int:
    """Completions one generation samples over all processes, as GRPOConfig works it out."""
    if grpo.get("generation_batch_size"):
        return grpo["generation_batch_size"]
    per_device = grpo_value(grpo, "per_device_train_batch_size")
    steps = grpo.get("steps_per_generation") or grpo_value(grpo, "gradient_accumulation_steps") or 1
    return per_device * processes * steps


def split_problem(grpo: dict, processes: int) -> str | None:
    """Why GRPOConfig would refuse a generation_batch_size on ``processes`` processes (it is split over them in
    whole micro-batches), with the fix; None when it splits."""
    batch = grpo.get("generation_batch_size")
    global_batch = grpo_value(grpo, "per_device_train_batch_size") * processes
    if not batch or processes <= 1 or batch % global_batch == 0:
        return None
    return _("generation_batch_size = {batch} does not split over {processes} processes in micro-batches of "
             "per_device_train_batch_size = {per_device}: TRL refuses it; make it a multiple of {global_batch}, or "
             "set steps_per_generation instead").format(batch=batch, processes=processes,
                                                        per_device=global_batch // processes,
                                                        global_batch=global_batch)


def prompts_per_generation(grpo: dict, processes: int = 1) -> int:
    return generation_batch(grpo, processes) // grpo["num_generations"]


def fitting_steps(grpo: dict, rows: int, processes: int) -> int:
    """The largest steps_per_generation whose draw fits ``rows`` and whose batch TRL accepts (a multiple of
    num_generations); 0 when even one micro-step draws too many."""
    per_step = grpo_value(grpo, "per_device_train_batch_size") * processes
    steps = rows * grpo["num_generations"] // per_step
    while steps and (per_step * steps) % grpo["num_generations"]:
        steps -= 1
    return steps


def draw_problem(grpo: dict, rows: int | None, processes: int = 1) -> str | None:
    """Why training would sample nothing from a dataset of ``rows`` rows on ``processes`` processes, with the
    fix; None when one generation's draw fits (or the row count is unknown, as for a hub dataset)."""
    if rows is None:
        return None
    drawn = prompts_per_generation(grpo, processes)
    if drawn <= rows:
        return None
    steps = fitting_steps(grpo, rows, processes)
    where = _("on {processes} processes").format(processes=processes) if processes > 1 else _("on one process")
    if steps:
        fix = _("set grpo.steps_per_generation = {steps} (grpo-skill set grpo.steps_per_generation={steps}; "
                "with new: --set grpo.steps_per_generation={steps})").format(steps=steps)
        if "generation_batch_size" in grpo:
            fix += " " + _("instead of generation_batch_size")
    else:
        fix = _("lower grpo.per_device_train_batch_size, or add rows")
    return _("one generation draws {drawn} distinct prompts {where} (generation batch {batch} / num_generations "
             "{generations}), but the dataset has {rows} row(s): TRL would train 0 steps; {fix}").format(
        drawn=drawn, where=where, batch=generation_batch(grpo, processes), generations=grpo["num_generations"],
        rows=rows, fix=fix)
