"""Writes tokens.parquet with DuckDB: two documents of 2 and 1 sentences of 3 floats each,
as FLOAT[][] (a plain list<list<float>>: DuckDB keeps no element shape).

Run from this directory: python make.py (needs duckdb).
"""
import duckdb

duckdb.sql(
    "COPY (SELECT * FROM (VALUES "
    "(1, [[1, 2, 3], [4, 5, 6]]::FLOAT[][]), "
    "(2, [[7, 8, 9]]::FLOAT[][])) t(id, tokens) ORDER BY id) "
    "TO 'tokens.parquet' (FORMAT parquet)"
)
