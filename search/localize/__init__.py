"""Issue localisation: which files (and functions) an issue or a stack trace points at."""
