"""The hooks a grpo-skill plugin can implement.

A plugin is a module (or object) with functions marked ``@hookimpl`` whose names match the specs
below. Each hook receives a ``register`` callback and calls it once per thing it provides.
"""

import pluggy

PROJECT_NAME = "grpo_skill"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_rewards(register):
    """Register reward functions.

    :param register: call ``register(Reward(name=..., factory=..., description=...))`` once per reward.
        The factory receives a :class:`grpo_skill.RewardContext` (tokenizer, preset, params) and returns
        a TRL reward function ``f(prompts, completions, completion_ids=None, **kwargs) -> list[float | None]``.
    """


@hookspec
def register_presets(register):
    """Register model presets.

    :param register: call ``register(Preset(name=..., model_id=..., ...))`` once per preset.
    """


@hookspec
def register_judges(register):
    """Register judge backends for the ``llm_judge`` reward.

    :param register: call ``register(Judge(name=..., factory=..., description=..., params=...))`` once per
        backend. The factory receives the backend's merged params (the defaults, then the project's
        ``judge = {...}`` table of llm_judge) and returns ``f(requests)``: for each
        :class:`grpo_skill.registry.JudgeRequest` (question, answer, criteria, reference) one grade in [0, 1],
        or ``None`` where the judge gave no usable grade.
    """
