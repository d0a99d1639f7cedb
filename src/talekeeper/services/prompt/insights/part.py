"""The base of every part of a stored Insights snapshot (``insights.stored`` states the
format's invariants): built from the services' own objects by attribute, read back from
JSON, unknown keys kept, written with only the keys it was written or read with."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Part(BaseModel):
    """A part of a stored snapshot (see the module docstring): built from the services'
    own objects by attribute, read back from JSON; unknown keys are kept."""

    model_config = ConfigDict(extra="allow", frozen=True, from_attributes=True)

    def public(self) -> dict[str, object]:
        """As JSON values, with only the keys it was written or read with."""
        return self.model_dump(mode="json", exclude_unset=True)
