"""The prompt-prefix harness: how much of each turn's prompt the narrator has to evaluate in a
long game, and which section of the context broke the prefix it could have kept."""
