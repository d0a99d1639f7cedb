"""The story engine: an adventure's tree of actions (``tree``: takes, undo and redo, edit,
delete, fork, branches), the turn (``turns``: the player's action saved before the model is
called, then the reply), adventures and their cards (``adventures``), how actions read as
prose (``rendering``), what clients see of it (``view``) and the shipped scenarios
(``scenarios``). It asks the memory system through ``memory.base`` and builds prompts
through ``prompt``; it never writes SQL (``storage.repositories``).
"""
