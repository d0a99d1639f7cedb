"""The models package: one module per aggregate, and a public interface that names them all.
Importing ``talekeeper.storage.models`` registers every table on ``Base.metadata`` (what the
migrations' environment compares against) and exports every model by name."""

from __future__ import annotations

import pkgutil

import pytest

from talekeeper.storage import models

pytestmark = pytest.mark.no_database


def test_the_package_exports_every_model_and_every_table_is_a_model() -> None:
    mapped = {mapper.class_ for mapper in models.Base.registry.mappers}
    assert all(getattr(models, cls.__name__) is cls for cls in mapped)
    assert {cls.__name__ for cls in mapped} <= set(models.__all__)
    assert {cls.__tablename__ for cls in mapped} == set(models.Base.metadata.tables)
    assert all(name in models.__all__ for name in ("Base", "ID", "NAMING", "UtcDateTime"))


def test_each_model_lives_in_its_aggregates_module_on_the_one_base() -> None:
    modules = {m.name for m in pkgutil.iter_modules(models.__path__)}
    assert modules == {
        "accounts",
        "ai_calls",
        "base",
        "jobs",
        "library",
        "memory",
        "proposals",
        "replies",
        "sharing",
        "story",
        "world",
    }
    for mapper in models.Base.registry.mappers:
        home = mapper.class_.__module__.rsplit(".", 1)[-1]
        assert home in modules - {"base"}, mapper.class_
        assert mapper.class_.metadata is models.Base.metadata
