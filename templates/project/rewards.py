"""This project's own rewards, registered through the same plugin hooks as the built-in ones.

train.py and `grpo-skill rewards --project .` find them here. Add a reward: write a factory that returns
f(completions, prompts=None, completion_ids=None, **kwargs) -> list[float], then register it below and
name it in config.toml under [[rewards]].
"""

from grpo_skill import Reward, hookimpl


def completion_text(completion) -> str:
    # plain-text prompts give strings; chat-message prompts give [{"role": "assistant", "content": ...}]
    return completion if isinstance(completion, str) else completion[-1]["content"]


def no_repetition_factory(context):
    n = context.params["ngram"]

    def no_repetition(completions, prompts=None, **kwargs):
        scores = []
        for completion in completions:
            words = completion_text(completion).split()
            ngrams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
            repeated = 1 - len(set(ngrams)) / len(ngrams) if ngrams else 0.0
            scores.append(-repeated)  # 0.0 when nothing repeats, towards -1.0 for a loop
        return scores

    return no_repetition


@hookimpl
def register_rewards(register):
    register(Reward(
        "no_repetition", no_repetition_factory,
        "Penalty for repeated word n-grams: 0.0 when none repeats, towards -1.0 for a loop.",
        params={"ngram": 3},
    ))
