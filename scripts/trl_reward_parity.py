"""Run TRL's own reward tests against grpo-skill's built-ins, through adapters with TRL's call signatures.

    git clone https://github.com/huggingface/trl && python scripts/trl_reward_parity.py trl/tests/test_rewards.py

TRL's test file is copied into a temporary folder with its ``from trl.rewards import (...)`` replaced by the
adapters below (think_format_reward -> think_format, get_soft_overlong_punishment -> soft_overlong,
get_repetition_penalty_reward -> repetition, accuracy_reward -> accuracy, reasoning_accuracy_reward ->
reasoning_accuracy, get_cosine_scaled_reward -> cosine_length), then pytest runs it; its exit status is pytest's.
Expected differences are documented in references/rewards.md (a gold in number words is read as its number).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ADAPTERS = '''
import warnings
from grpo_skill import plugins


class TrlTestCase:
    pass


def require_math_latex(f):
    return f


def _build(name, **params):
    return plugins.get_reward(name).build(params=params)


def think_format_reward(completions, **kwargs):
    return _build("think_format", template_opens_think=False)(completions=completions)


class _IdsReward:
    """Module-level, so that it pickles exactly when the built reward it holds does."""

    def __init__(self, reward, trl_name):
        self.reward, self.__name__ = reward, trl_name

    def __call__(self, completion_ids, **kwargs):
        return self.reward(completions=[""] * len(completion_ids), completion_ids=completion_ids)


class _CosineReward:
    __name__ = "cosine_scaled_reward"

    def __init__(self, reward):
        self.reward = reward

    def __call__(self, completions, solution, completion_ids, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.reward(completions=completions, answer=solution, completion_ids=completion_ids)


def _ids_reward(name, trl_name, **params):
    return _IdsReward(_build(name, **params), trl_name)


def get_soft_overlong_punishment(max_completion_len, soft_punish_cache):
    return _ids_reward("soft_overlong", "soft_overlong_punishment_reward", max_completion_len=max_completion_len,
                       soft_punish_cache=soft_punish_cache)


def get_repetition_penalty_reward(ngram_size, max_penalty):
    try:
        return _ids_reward("repetition", "repetition_penalty_reward", ngram_size=ngram_size, max_penalty=max_penalty)
    except Exception as error:  # grpo-skill says it in one line (a UserError); TRL raises ValueError
        raise ValueError(str(error)) from error


def accuracy_reward(completions, solution, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _build("accuracy", template_opens_think=False)(completions=completions, answer=solution)


def reasoning_accuracy_reward(completions, solution, reasoning_delimiters=None, **kwargs):
    params = {"think_end_token": reasoning_delimiters[0]} if reasoning_delimiters else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _build("reasoning_accuracy", **params)(completions=completions, answer=solution)


def get_cosine_scaled_reward(max_len, min_value_wrong=-1.0, max_value_wrong=-0.5, min_value_correct=0.5,
                             max_value_correct=1.0):
    reward = _build("cosine_length", max_len=max_len, min_value_wrong=min_value_wrong, max_value_wrong=max_value_wrong,
                    min_value_correct=min_value_correct, max_value_correct=max_value_correct,
                    template_opens_think=False)
    return _CosineReward(reward)
'''


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: python scripts/trl_reward_parity.py PATH/TO/trl/tests/test_rewards.py", file=sys.stderr)
        return 2
    text = Path(argv[0]).read_text(encoding="utf-8")
    text, imports = re.subn(r"from trl\.rewards import \([^)]*\)", "from adapters import *", text)
    text, helpers = re.subn(r"from \.testing_utils import [^\n]*", "from adapters import TrlTestCase, "
                                                                  "require_math_latex", text)
    if not imports or not helpers:
        print(f"error: {argv[0]} does not import from trl.rewards and .testing_utils as expected", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "adapters.py").write_text(ADAPTERS, encoding="utf-8")
        Path(folder, "test_trl_rewards.py").write_text(text, encoding="utf-8")
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
                                "test_trl_rewards.py"], cwd=folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
