"""Story cards: ``rules`` validates them and decides which enter a turn's context,
``match`` finds their keywords in the story (one matcher per card set).
"""
