"""The prompt: what a turn sends the narrator and why. ``inputs`` gathers what the prompt is
made of, ``context`` lays it out within the budget (fixed and floating sections, the
``cache`` layout's placement), ``prefix`` tracks what the narrator's cache kept of the
previous prompt, ``insights`` records the exact context with every reply (a view, never read
back to build a prompt), and ``placement`` keeps what the next turn needs of this one.
"""
