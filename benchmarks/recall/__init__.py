"""Recall studies: dense generated stories (``dense``) and real writing (``real``)."""
