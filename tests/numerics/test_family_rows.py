"""The family table's `numerics` column names what its row has: its own
fixtures, options that are choices of its adapter options, caches the fixture
is exported at. A typo there would silently drop or misname a run, since the
table-driven files take the column as given."""
from __future__ import annotations

import pytest

from conftest import DEFAULT, FAMILIES, FIXTURES, export_caches, reference


@pytest.mark.parametrize("fam", [pytest.param(f, id=f.adapter) for f in FAMILIES])
def test_numerics_column_names_the_rows_own_things(fam):
    n = fam.numerics
    choices = {DEFAULT} | {c for cs in fam.options.values() for c in cs}
    assert n.options and set(n.options) <= choices, (n.options, choices)
    assert set(n.approximate) <= choices, n.approximate
    for fixture in fam.fixtures:
        assert (FIXTURES / fixture / "fixture.json").is_file(), fixture
        assert export_caches(fixture), f"{fixture}: no cache to export at"
    for fixture in (*n.caches, *n.consistency, *n.short_references):
        assert fixture in fam.fixtures, fixture
    every_cache = {c for f in fam.fixtures for c in export_caches(f)}
    assert set(n.consistency_caches) <= every_cache and set(n.contract_caches) <= every_cache
    for fixture, cache, option in n.extra:
        assert fixture in fam.fixtures and option in choices, (fixture, option)
        assert cache in reference(fixture), f"{fixture}: no reference of length {cache}"
