"""Recall on real writing: public-domain texts played as stories, questions written from them."""
