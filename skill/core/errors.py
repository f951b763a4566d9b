"""Errors a user can cause and fix: the CLI, train.py and evaluate.py print them in one line, without a traceback.

``GRPO_SKILL_DEBUG=1`` (or the CLI's ``--debug``) shows the full traceback instead.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import sys
import sysconfig
import time
import traceback
from pathlib import Path

from . import launch

DEBUG_ENV = "GRPO_SKILL_DEBUG"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
# Under accelerate launch the processes of a machine read the same settings, data and output folder: a mistake
# found before training is found by all of them alike, and the machine's first process reports it (one line per
# machine). Once training has started, an error may concern one process (its completions, its GPU): each reports
# its own.
_training = {"started": False}
# How long the other processes wait for the first one to report a mistake they share: it does so before loading
# anything, within seconds.
MAIN_PROCESS_REPORT_WAIT_S = 60.0


# What `pip install 'grpo-skill[train]'` brings (pyproject's train extra, by import name): the light CLI runs
# without them, and a verb that needs one says so in one line.
TRAINING_MODULES = {"torch", "transformers", "trl", "datasets", "peft", "accelerate", "dotenv", "matplotlib",
                    "math_verify", "py3langid", "httpx"}


class UserError(Exception):
    """What is wrong and how to fix it, in one or two lines."""

    exit_code = 1


class MissingColumn(UserError):
    """A reward needs a dataset column that the batch lacks; ``column`` names it, for `rewards try` to say how to
    give it there (it has no dataset)."""

    def __init__(self, message: str, column: str):
        super().__init__(message)
        self.column = column


class MissingPackage(UserError):
    """A package a reward needs (one the [train] extra brings) is not installed. A factory checks its params before
    its packages: `new` writes a project without them, as grpo-skill without its [train] extra must."""


def debug_wanted() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def shown_path(path: str | os.PathLike) -> str:
    """``path`` relative to the working folder when it lies inside it (shorter messages), else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def home_expanded(path: str | os.PathLike) -> Path:
    """``path`` with a leading ~ or ~user expanded; a user this machine does not know is a UserError (pathlib raises
    a RuntimeError, which would end in a traceback)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        from .i18n import _

        raise UserError(_("{path}: this machine has no home folder for {user}; give the folder's full path").format(
            path=path, user=str(path).split("/", 1)[0])) from None


def user_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of ``error``'s traceback in a user's or a plugin's code: outside grpo_skill and the
    standard library; None when it was raised in neither."""
    stdlib = Path(sysconfig.get_path("stdlib")).resolve()
    theirs = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not (frame.filename.startswith("<") or _inside(frame.filename, PACKAGE_DIR)
                      or _inside(frame.filename, stdlib))]
    return theirs[-1] if theirs else None


def one_line(error: BaseException) -> str:
    """A library's exception as one line: transformers' tokenizer errors, for one, run to six."""
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip()) or type(error).__name__


def where_raised(error: BaseException) -> str:
    """``file:line: ErrorType: message`` for an exception raised in a user's or a plugin's code (SyntaxError: the
    line it names; elsewhere: the innermost frame, see ``user_frame``)."""
    from .i18n import _

    kind = type(error).__name__
    message = str(error) or _("(no message)")
    if isinstance(error, SyntaxError) and error.filename:
        if re.match(r"(<{7}|={7}|>{7})( |$)", error.text or ""):  # what `grpo-skill update` (or git) left unmerged
            return _("{where}: a merge conflict left unresolved; keep the lines you want, remove the <<<<<<< ======= "
                     ">>>>>>> lines, then commit").format(where=f"{shown_path(error.filename)}:{error.lineno}")
        return f"{shown_path(error.filename)}:{error.lineno}: {kind}: {error.msg}"
    frame = user_frame(error)
    if frame is None:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<")]
        frame = frames[-1] if frames else None
    return f"{shown_path(frame.filename)}:{frame.lineno}: {kind}: {message}" if frame else f"{kind}: {message}"


def _inside(filename: str, folder: Path) -> bool:
    try:
        Path(filename).resolve().relative_to(folder)
        return True
    except (ValueError, OSError):
        return False


def user_message(error: BaseException) -> str | None:
    """One line for an error the user can fix (a UserError, a file they cannot write, Ctrl-C); None for a bug,
    which keeps its traceback."""
    from .i18n import _

    if isinstance(error, UserError):
        return str(error)
    if isinstance(error, KeyboardInterrupt):
        return _("interrupted")
    if isinstance(error, OSError) and error.filename is not None:
        where = shown_path(error.filename)
        if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return _("{path}: {reason}; choose a folder you can write to").format(path=where, reason=error.strerror)
        return f"{where}: {error.strerror or error}"
    if isinstance(error, ModuleNotFoundError) and error.name and error.name.split(".")[0] in TRAINING_MODULES:
        return _("{module} is not installed; this needs the training packages: pip install 'grpo-skill[train]'").format(
            module=error.name.split(".")[0])
    if isinstance(error, UnicodeDecodeError):  # a file read as text that is not: the reader names it where it can
        return _("a file that should be UTF-8 text is not (byte {position}: {reason}); save it as UTF-8").format(
            position=error.start, reason=error.reason)
    if isinstance(error, json.JSONDecodeError):
        return _("not valid JSON: {reason} (line {line}, column {column})").format(
            reason=error.msg, line=error.lineno, column=error.colno)
    return None


def exit_code(error: BaseException) -> int:
    if isinstance(error, KeyboardInterrupt):
        return 130
    return getattr(error, "exit_code", 1) if isinstance(error, UserError) else 1


def training_started() -> None:
    _training["started"] = True


def reported_by_the_main_process(error: BaseException) -> bool:
    """True on the other processes of a launch for a mistake that their machine's first process reports."""
    if _training["started"] or not isinstance(error, UserError):
        return False
    return launch.is_launched() and launch.local_rank() != 0


def install() -> None:
    """For a script (train.py, evaluate.py): a mistake the user can fix ends in one line on stderr and a
    non-zero exit instead of a traceback; ``GRPO_SKILL_DEBUG=1`` keeps the traceback."""
    previous = sys.excepthook

    def report(kind, error, trace):
        message = None if debug_wanted() else user_message(error)
        if message is None:
            previous(kind, error, trace)
            return
        code = exit_code(error)
        if reported_by_the_main_process(error):
            _wait_for_the_main_process_to_report()
        print(_error_line(message), file=sys.stderr)
        if code not in (1, 130):  # Python exits 1 (130 for Ctrl-C) after an uncaught exception
            sys.stderr.flush()
            os._exit(code)

    sys.excepthook = report


def _wait_for_the_main_process_to_report() -> None:
    """Stay alive until the launcher ends this process. Exiting first would make the launcher stop the main process
    (SIGTERM) before it has printed the line that says what is wrong. If the main process did not hit the same
    mistake, nobody else reports it: after a while this process does, and returns."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the launcher's stop ends this process quietly
    try:
        time.sleep(MAIN_PROCESS_REPORT_WAIT_S)
    except KeyboardInterrupt:
        os._exit(130)


def _error_line(message: str) -> str:
    from .i18n import _

    return _("error: {message}").format(message=message)
