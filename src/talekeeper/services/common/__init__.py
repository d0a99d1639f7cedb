"""Small tools every service shares: the caps on what a client may send (``limits``),
units of work (``units``), the database's housekeeping (``database``), the stored
vocabularies re-exported for the entry points (``vocabulary``) and bounded ZIP reading
(``archives``).
"""
