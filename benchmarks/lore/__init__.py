"""The lore clerk's benchmark: card proposals on generated and real stories."""
