"""The text of a completion and of a prompt, in either form TRL passes them: strings, or chat messages."""

from __future__ import annotations

from typing import Mapping, Sequence


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):  # multimodal parts: [{"type": "text", "text": ...}, ...]
        return "".join(part.get("text") or "" if isinstance(part, Mapping) else str(part) for part in content)
    return str(content)


def completion_text(completion) -> str:
    """The text of one completion, as TRL passes it: a string, or chat messages
    ``[{"role": "assistant", "content": ...}]`` when the dataset's prompts are conversations (the assistant
    messages' text, joined by newlines, when a tool-using run gives several)."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else completion
    if not isinstance(messages, Sequence):
        raise TypeError(f"a completion is a string or a list of chat messages, not {type(completion).__name__}")
    texts = [
        _content_text(message.get("content")) if isinstance(message, Mapping) else _content_text(message)
        for message in messages
        if not isinstance(message, Mapping) or message.get("role", "assistant") == "assistant"
    ]
    return "\n".join(texts)


def prompt_text(prompt) -> str:
    """The text of one prompt: a string, or the last user message of a conversation."""
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    users = [m for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
    return _content_text((users or list(prompt) or [{}])[-1].get("content"))
