"""Helpers the test modules share (one place, instead of modules importing each other)."""
