"""What a generated project's train.py uses while it runs: the machine, the data, callbacks, metrics.

Light enough to import before unsloth, except ``callbacks`` (it imports transformers).
"""
