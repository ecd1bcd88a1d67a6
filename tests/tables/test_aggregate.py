"""aggregate_scores: one schema, and an error that names the file at fault."""

import pandas as pd
import pytest

from geneb.tables.aggregate import concat_tables
from geneb.tables.scores import SCHEMA_VERSION


def _write(path, version=SCHEMA_VERSION, extra=False):
    df = pd.DataFrame({"schema_version": [version], "model": ["m"], "value": [0.5]})
    if extra:
        df["other"] = 1
    df.to_parquet(path, index=False)
    return path


def test_the_file_with_another_schema_version_is_named_even_when_it_comes_first(tmp_path):
    good, odd = _write(tmp_path / "good.parquet"), _write(tmp_path / "odd.parquet", version="1")
    for order in ([odd, good], [good, odd]):
        with pytest.raises(ValueError, match=rf"odd.parquet: schema_version \['1'\], expected \['{SCHEMA_VERSION}'\]"):
            concat_tables(order, tmp_path / "out.parquet")
    with pytest.raises(ValueError, match=r"more.parquet: columns differ .*extra \['other'\]"):
        concat_tables([good, _write(tmp_path / "more.parquet", extra=True)], tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    assert len(concat_tables([good, good], tmp_path / "out.parquet")) == 2
