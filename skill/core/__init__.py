"""The plugin core: hookspecs, the plugin manager, the registry of rewards/presets/judges, config.toml's schema and a
loaded project, errors and messages. Imports nothing else of the package (see docs/architecture.md)."""

__version__ = "0.1.0"  # pyproject.toml's; generated projects record it (.copier-answers.yml)
