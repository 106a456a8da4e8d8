"""The base of every wire model: camelCase on the wire, absent is not null, order kept.

* Field names are snake_case in Python and camelCase in JSON (explicit aliases where the wire
  uses snake_case, such as the ``budget_skipped`` coverage buckets).
* A key that was never set is *absent* and is not written; a key set to ``None`` is written as
  ``null``. This is pydantic's ``exclude_unset``, so reading a file and writing it back keeps
  exactly the keys it had.
* Key order is declaration order. ``EvalItem`` is the exception (its order differs per
  outcome and in legacy files): parsed from a file (``model_validate(..., context=WIRE)``) it
  remembers its keys' order and writes them back in that order, so round trips are
  byte-identical; code that builds one can fix another order with ``set_key_order`` (the
  runner does, for the per-outcome orders of the reference). Keys added later follow in
  declaration order.
* Unknown keys are kept (``extra="allow"``) and written back where they were, except inside
  ``accounting.usage``: its six counts are fixed by the spec and read into the one usage value
  type, :class:`~axl_action.schema.accounting.TokenUsage`, which also carries a provider call's.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

#: Validation context for models parsed from a file: remember each object's key order.
WIRE: dict[str, Any] = {"keep_order": True}


class WireModel(BaseModel):
    """Base class for result-file models (see module docstring)."""

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, alias_generator=to_camel, defer_build=True
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for this model: aliases, absent keys omitted, order kept."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def has(self, name: str) -> bool:
        """True when the field was present in the file (or set by the code that built it)."""
        return name in self.model_fields_set


class CompleteWireModel(WireModel):
    """A wire model whose fields are always all written, even when left at their defaults.

    Accounting records and coverage maps always carry every key; code that builds one with
    only the non-zero fields (``Usage(input_tokens=5)``) still writes all of them.
    """

    def model_post_init(self, context: Any, /) -> None:
        # Optional extensions (None by default) stay absent unless they were set.
        values = self.__dict__
        self.model_fields_set.update(k for k in type(self).model_fields if values[k] is not None)


class OrderedWireModel(WireModel):
    """A wire model whose key order varies between files and must survive a round trip.

    Only models whose order really varies pay for this (``EvalItem``: the reference writes a
    different order per outcome, and legacy files yet another); every other model's order is
    its declaration order.
    """

    _key_order: tuple[str, ...] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(
        cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo
    ) -> Self:
        model = handler(data)
        if isinstance(data, dict) and info.context is not None and info.context.get("keep_order"):
            model._key_order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _ordered(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        order = self._key_order
        if not order:
            return data
        fields = type(self).model_fields
        ordered: dict[str, Any] = {}
        for key in order:
            info = fields.get(key)
            wire = (info.alias or key) if info is not None else key
            if wire in data and wire not in ordered:
                ordered[wire] = data[wire]
        if len(ordered) != len(data):
            for wire, value in data.items():
                if wire not in ordered:
                    ordered[wire] = value
        return ordered

    def set_key_order(self, *keys: str) -> Self:
        """Fix the order keys are written in (field names or wire names); returns self."""
        self._key_order = keys
        return self
