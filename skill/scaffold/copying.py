"""copier without the work `grpo-skill new` does not need: its prompt libraries before a question is asked, and
compiling the same templates again.

`new`, `update` and `plugin new` answer every question themselves (``data=``, ``defaults=True``), yet ``import
copier`` imports questionary, prompt_toolkit and pygments' lexers at its top (copier/_main.py, _user_data.py): a
fifth of `new`'s time, for prompts it never shows. While copier is imported, placeholders stand in for those
modules; a name copier takes from one imports the real module the first time it is used, so a prompt copier does
show behaves as before. Compiling the project template's files, and the hundred-odd path parts copier renders as
template strings, was most of the rest: `keep_compiled` keeps both.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import sys
import types
from pathlib import Path

from ..core import __version__

# The modules copier imports only to ask questions; nothing else imports them while copier loads.
PROMPT_MODULES = ("questionary", "questionary.prompts.common", "prompt_toolkit.lexers", "pygments.lexers.data")


class _Deferred(types.ModuleType):
    """Sits in ``sys.modules`` while copier is imported; ``from <module> import name`` gets a `_Later`."""

    def __getattr__(self, name: str):
        if name.startswith("__"):  # the import system's own questions (__path__, __spec__...)
            raise AttributeError(name)
        return _Later(self.__name__, name)


class _Later:
    """``module.name``, imported the first time it is called or looked into."""

    def __init__(self, module: str, name: str):
        self._module, self._name = module, name

    def resolve(self):
        return getattr(importlib.import_module(self._module), self._name)

    def __call__(self, *args, **kwargs):
        args = [arg.resolve() if isinstance(arg, _Later) else arg for arg in args]
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute: str):
        return getattr(self.resolve(), attribute)

    def __repr__(self) -> str:
        return f"<{self._module}.{self._name}, imported when used>"


def load() -> types.ModuleType:
    """The ``copier`` module (``run_copy``, ``run_update``, ``errors``)."""
    if "copier" in sys.modules:
        return sys.modules["copier"]
    placed = [name for name in PROMPT_MODULES if name not in sys.modules]
    for name in placed:
        sys.modules[name] = _Deferred(name)
    try:
        import copier
    finally:  # from here on, importing these modules imports the real ones
        for name in placed:
            if isinstance(sys.modules.get(name), _Deferred):
                del sys.modules[name]
    return copier


def copy_into_new_folder(template: Path, destination: Path, **options) -> None:
    """``copier.run_copy`` from a template folder of this package into a folder that does not exist yet, without
    the git work copier does that cannot change what is written there (20 git processes, a tenth of `new`):

    - whether the template is a git repository or a bundle: a package's folder without ``.git`` is neither;
    - after each file, whether the destination's git index must learn the file's executable bit: a new folder's
      files are in no index.

    Another copier version, whose internals have other names, does that work as before."""
    copier = load()
    if destination.exists():
        raise FileExistsError(destination)
    template_module, main_module = sys.modules.get("copier._template"), sys.modules.get("copier._main")
    skipped = []
    if not (template / ".git").exists() and hasattr(template_module, "get_repo"):
        get_repo, folder = template_module.get_repo, str(template)
        skipped.append((template_module, "get_repo", lambda url: None if url == folder else get_repo(url)))
    if hasattr(main_module, "is_git_available"):
        skipped.append((main_module, "is_git_available", lambda: False))
    originals = [(module, name, getattr(module, name)) for module, name, _ in skipped]
    for module, name, replacement in skipped:
        setattr(module, name, replacement)
    try:
        copier.run_copy(str(template), destination, **options)
    finally:
        for module, name, original in originals:
            setattr(module, name, original)


def keep_compiled(environment) -> None:
    """Keep what ``environment`` (copier's, for one render) compiles: template files in jinja's bytecode cache,
    which outlives the process, and template strings for the process."""
    environment.bytecode_cache = _bytecode_cache(environment)
    environment.from_string = _compiled_once(environment)


# What shapes the code jinja compiles from a text, besides the text: its syntax and output settings.
_COMPILE_SETTINGS = ("block_start_string", "block_end_string", "variable_start_string", "variable_end_string",
                     "comment_start_string", "comment_end_string", "line_statement_prefix", "line_comment_prefix",
                     "trim_blocks", "lstrip_blocks", "newline_sequence", "keep_trailing_newline", "optimized",
                     "autoescape", "finalize", "is_async")


def _bytecode_cache(environment):
    """Jinja's file cache of compiled templates in its own per-user temporary folder, or None where it finds no
    safe one. A file is named by the versions and settings that shape its code and by the template's name (not
    its folder: `update` renders old versions from fresh scratch folders); jinja compiles a file again when its
    text is not the one cached."""
    import copier
    import jinja2
    from jinja2.bccache import FileSystemBytecodeCache

    settings = repr([_named(getattr(environment, name, None)) for name in _COMPILE_SETTINGS])
    prefix = f"grpo-skill-{__version__}|jinja-{jinja2.__version__}|copier-{copier.__version__}|{settings}|"

    class Cache(FileSystemBytecodeCache):
        def get_cache_key(self, name: str, filename: str | None = None) -> str:
            return hashlib.sha1((prefix + name).encode("utf-8")).hexdigest()

        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # a cache that cannot be written only makes the next `new` slower
                pass

    try:
        return Cache(pattern="grpo-skill-%s.cache")
    except (OSError, RuntimeError):
        return None


def _named(setting):
    """A setting as the same text in every process (a function by its name, not its address)."""
    return f"{setting.__module__}.{setting.__qualname__}" if callable(setting) else setting


def _compiled_once(environment):
    """``environment.from_string`` compiling each text once: copier renders every part of every path and the
    answers file's name as template strings, over a hundred a project, mostly the same few. A compiled template
    keeps no render state, so one serves every render; its code goes to the bytecode cache as a file's does."""
    from_string, cache = environment.from_string, environment.bytecode_cache

    @functools.lru_cache(maxsize=512)
    def compiled(source: str):
        if cache is None:
            return from_string(source)
        bucket = cache.get_bucket(environment, f"<string>{source}", None, source)
        if bucket.code is None:
            bucket.code = environment.compile(source)
            cache.set_bucket(bucket)
        return environment.template_class.from_code(environment, bucket.code, environment.make_globals(None), None)

    @functools.wraps(from_string)
    def remembered(source, globals=None, template_class=None):
        if globals is None and template_class is None and isinstance(source, str):  # else jinja's TypeError
            return compiled(source)
        return from_string(source, globals, template_class)

    return remembered
