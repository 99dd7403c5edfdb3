"""The farm query README shows, run by DuckDB over `export --parquet` files: per driver, the
runs' mean fps (frame times counted / their sum, as framescope defines it) and p99 frame time
(nearest rank), aggregated by run. Prints the groups as JSON.

usage: report_html_duckdb.py DIR_OF_PARQUET_FILES
"""

import json
import sys

import duckdb

rows = duckdb.sql(f"""
    SELECT driver, count(*) AS runs, avg(fps) AS fps_mean, median(fps) AS fps_median,
           min(fps) AS fps_min, max(fps) AS fps_max, avg(p99_ms) AS p99_ms
    FROM (
        SELECT driver, dump,
               count(cpu_frame_ns) * 1e9 / sum(cpu_frame_ns) AS fps,
               quantile_disc(cpu_frame_ns, 0.99) / 1e6 AS p99_ms
        FROM read_parquet('{sys.argv[1]}/*.parquet')
        GROUP BY driver, dump
    )
    GROUP BY driver ORDER BY driver
""").fetchall()
cols = ["group", "runs", "fps_mean", "fps_median", "fps_min", "fps_max", "p99_ms"]
print(json.dumps([dict(zip(cols, r)) for r in rows]))
