"""``Filters``: the filter vocabulary of ``filters.py`` as a pydantic model, for the
faces that receive filters by their public names (the HTTP request's ``filters``
object, the MCP tool's argument, the CLI's ``--filter`` options). Its own module so
that pydantic loads only where a model is wanted: a CLI search needs none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from docshelf.errors import InvalidInput
from docshelf.knowledge.taxonomy import Taxonomy
from docshelf.search.filters import (
    ALIASES,
    DATE_PATTERN,
    FILTER_KEYS,
    SearchFilters,
    _lookup,
    _meaning,
    concept_group,
    date_range,
    document_types,
    file_type_names,
    known_value,
)

__all__ = ["Filters", "Values"]


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


# A repeatable filter's values (tag, concept): a list, or one string for a list of one.
Values = Annotated[list[str], BeforeValidator(_one_or_many, json_schema_input_type=str | list[str])]


def _enum(schema: dict[str, Any], values: Iterable[str]) -> None:
    schema["enum"] = [*values, None]


class Filters(BaseModel):
    """Filters by their public names, as a face receives them (the HTTP request's
    ``filters`` object, the MCP tool's argument, the CLI's ``--filter`` options)."""

    model_config = ConfigDict(extra="forbid")

    source: str | None = Field(default=None, description=_meaning("source"))
    path: str | None = Field(default=None, description=_meaning("path"))
    # The known values are listed in the schema (lazily: enrich imports this module).
    type: str | None = Field(
        default=None,
        description=_meaning("type"),
        json_schema_extra=lambda schema: _enum(schema, file_type_names()),
    )
    doctype: str | None = Field(
        default=None,
        description=_meaning("doctype"),
        json_schema_extra=lambda schema: _enum(schema, document_types()),
    )
    tag: Values = Field(default_factory=list, description=_meaning("tag"))
    concept: Values = Field(default_factory=list, description=_meaning("concept"))
    date: str | None = Field(
        default=None,
        description=_meaning("date"),
        json_schema_extra={"pattern": DATE_PATTERN},  # checked by _date, in its own words
    )

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        """``filetype`` is ``type`` (named apart from ``doctype``); both at once is an error."""
        if isinstance(data, dict) and any(a in data for a in ALIASES):
            data = dict(data)
            for alias, key in ALIASES.items():
                if alias in data:
                    if key in data:
                        raise ValueError(f"Give {key} or {alias}, not both: they are one filter")
                    data[key] = data.pop(alias)
        return data

    @field_validator("date")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                date_range(value)
            except InvalidInput as exc:
                raise ValueError(exc.message) from None
        return value

    @field_validator("type", "doctype")
    @classmethod
    def _known(cls, value: str | None, info: Any) -> str | None:
        try:
            return None if value is None else known_value(info.field_name, value, fold=False)
        except InvalidInput as exc:  # pydantic reports only ValueError as the input's fault
            raise ValueError(exc.message) from None

    @classmethod
    def parse(cls, items: Iterable[str]) -> Filters:
        """``KEY=VALUE`` strings (the CLI's ``--filter``); a repeated tag or concept adds
        up, a repeated single-valued key replaces."""
        values: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            found = _lookup(key)
            if not sep or found is None or not value:
                raise InvalidInput(
                    f"Bad filter {item!r}; use KEY=VALUE with KEY one of {', '.join(FILTER_KEYS)}"
                )
            if found.repeatable:
                values[found.key] = [*values.get(found.key, []), value]
            else:
                values[found.key] = value
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise InvalidInput("; ".join(_reason(e) for e in exc.errors())) from None

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any]) -> Filters:
        """A plain mapping (the LangChain retriever's ``filters``): a tag or concept may be
        one string or a list. Raises ValueError naming an unknown key."""
        unknown = sorted(set(given) - set(FILTER_KEYS) - set(ALIASES))
        if unknown:
            raise ValueError(f"Unknown filter {', '.join(unknown)}; use {', '.join(FILTER_KEYS)}")
        values = {key: value for key, value in given.items() if value is not None}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ValueError(f"Bad filters {dict(given)!r}: {exc}") from None

    def as_json(self) -> dict[str, Any]:
        """The filters given, in the HTTP API's shape (defaults left out)."""
        return self.model_dump(exclude_defaults=True)

    def as_pairs(self) -> list[str]:
        """The filters given as ``KEY=VALUE`` strings (what ``parse`` reads; a notebook's);
        an empty value is a filter not given, as in a search."""
        pairs: list[str] = []
        for key, value in self.as_json().items():
            pairs += [f"{key}={v}" for v in (value if isinstance(value, list) else [value]) if v]
        return pairs

    def to_search_filters(self, taxonomy: Taxonomy) -> SearchFilters:
        """The store's form: tags without ``#``, each concept as the group of concept ids
        it matches in ``taxonomy``, the date as its range."""
        dated_from, dated_before = date_range(self.date) if self.date else (None, None)
        return SearchFilters(
            source_id=self.source,
            path_prefix=self.path,
            file_type=self.type,
            document_type=self.doctype,
            tags=tuple(t.lstrip("#") for t in self.tag),
            concept_groups=tuple(concept_group(taxonomy, c) for c in self.concept),
            dated_from=dated_from,
            dated_before=dated_before,
        )


def _reason(error: Any) -> str:
    """A validation error as its message alone (a value check's own words)."""
    cause = error.get("ctx", {}).get("error")
    return str(cause) if cause is not None else f"{error['loc'][0]}: {error['msg']}"
