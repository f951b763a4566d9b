"""Copier templates shipped with grpo-skill (package data)."""
