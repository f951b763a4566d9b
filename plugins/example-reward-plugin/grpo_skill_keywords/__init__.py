"""Reward completions for using required words (case-insensitive), e.g. a domain's key terms."""

from grpo_skill import Reward, completion_text, hookimpl


def keywords_factory(context):
    words = [word.lower() for word in context.params["words"]]
    if not words:
        raise ValueError("the keywords reward needs params.words, e.g. words = [\"because\"]")

    def keywords(completions, prompts=None, **kwargs):
        # completion_text: a string, or the assistant's text of chat messages (a tool's reply is not the model's)
        texts = [completion_text(c).lower() for c in completions]
        return [sum(word in text for word in words) / len(words) for text in texts]

    return keywords


@hookimpl
def register_rewards(register):
    register(Reward(
        "keywords", keywords_factory,
        "Share of params.words found in the completion: 0.0 to 1.0.",
        params={"words": ["because", "therefore"]},
        param_help={"words": "the words to use, matched case-insensitively anywhere in the completion"},
        example=("--completion", "It is 42 because 6 x 7 = 42, therefore 42.", "--completion", "It is 42."),
    ))
