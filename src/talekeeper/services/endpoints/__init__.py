"""The models a player uses: which model does what (``models``), the local servers found
on this machine (``detect``), the connection test and health checks (``diagnostics``), the
AI call log (``ai_calls``) and the provider benchmark (``bench``).
"""
