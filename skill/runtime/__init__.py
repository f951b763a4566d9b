"""What a generated project imports while it runs: the machine, the model and data, callbacks, metrics, resuming,
the tiny model builder, SFT warm start and the arithmetic task. Imports only the core.

Light enough to import before unsloth, except ``callbacks`` (it imports transformers).
"""
