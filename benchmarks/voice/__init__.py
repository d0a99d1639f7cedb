"""The placeholder narrator's voice: how often the embedded narrator speaks as the player."""
