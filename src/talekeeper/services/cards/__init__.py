"""Story cards: ``model`` declares a card's fields (``Card``), ``rules`` validates cards and
decides which enter a turn's context, ``match`` finds their keywords in the story (one
matcher per card set).
"""
