"""Settings: ``base`` (development defaults), ``test`` and ``production``; ``env`` reads the environment."""
