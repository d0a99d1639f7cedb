"""The prompt: what a turn sends the narrator and why, as a pipeline of values. ``inputs``
gathers what the prompt is made of (frozen); ``build`` makes a frozen ``BuiltContext`` of it,
the retrieval and the knowledge, and the request from that; ``context`` lays the sections out
within the budget (``sections``: the parts and how they render; ``history``: the actions
that fit; ``floating``: the ``cache`` layout's placement; ``built``: the result and its
report); ``prefix`` tracks what the narrator's cache kept of the previous prompt,
``insights`` records the exact context with every reply (a view, never read back to build a
prompt), and ``placement`` keeps what the next turn needs of this one.
"""
