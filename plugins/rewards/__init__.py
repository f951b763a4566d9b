"""The built-in rewards, one plugin module per kind, each registered like a third-party plugin.

- ``seed``: the seed guide's rule-based and thinking rewards (length, format, thinking, thinking_comprehensive);
- ``verifiable``: answers checked against the dataset (accuracy, reasoning_accuracy, cosine_length, kimi_length),
  through ``answers`` (and ``cjk`` for Chinese text);
- ``shaping``: the form of a completion (soft_overlong, repetition, think_format, answer_format, tag_count,
  reasoning_steps, language);
- ``structured``: json_match, one JSON object against a gold object;
- ``execution``: code_tests, the completion's Python run against the dataset's tests;
- ``judge``: llm_judge and its backends (an OpenAI-compatible server, a local transformers model).

Nothing heavy is imported at module level: ``grpo-skill rewards`` lists them without torch, TRL or math-verify.
"""
