"""A real OpenAI-compatible HTTP server on loopback, the test double for language models."""
