"""What writes files: a project (`new`), its update, the template history, the skill files, a plugin package
(`plugin new`) and the tables in SKILL.md. Imports the core and the runtime, never the advisors or the CLI."""
