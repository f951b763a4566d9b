"""Reward completions for using required words (case-insensitive), e.g. a domain's key terms."""

from grpo_skill import Reward, hookimpl


def keywords_factory(context):
    words = [word.lower() for word in context.params["words"]]
    if not words:
        raise ValueError("the keywords reward needs params.words, e.g. words = [\"because\"]")

    def keywords(completions, prompts=None, **kwargs):
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        return [sum(word in text.lower() for word in words) / len(words) for text in texts]

    return keywords


@hookimpl
def register_rewards(register):
    register(Reward(
        "keywords", keywords_factory,
        "Share of params.words found in the completion: 0.0 to 1.0.",
        params={"words": ["because", "therefore"]},
    ))
