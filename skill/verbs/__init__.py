"""The CLI's verbs, by what they are for; cli.py puts them under `grpo-skill`. Each verb parses its options, calls
one function of the package, and prints text or --json; heavy libraries are imported inside the verb."""
