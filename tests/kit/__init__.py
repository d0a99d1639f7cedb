"""Helpers the test modules share (one place, instead of modules importing each other).

Pytest rewrites the ``assert`` statements of test modules and ``conftest.py`` files only;
the kit's modules are registered here, before any of them is imported, so that a helper's
failed assertion shows its values as it did in the test module it came from.
"""

import pkgutil

import pytest

pytest.register_assert_rewrite(*(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__)))
