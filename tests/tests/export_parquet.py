"""Reads a framescope Parquet export with pyarrow (an independent reader) and prints, as JSON,
its row count, its column types and a few values the test compares with the dump."""
import json
import sys

import pyarrow.parquet as pq

table = pq.read_table(sys.argv[1])
schema = {f.name: str(f.type) for f in table.schema}
col = lambda name: table.column(name).to_pylist()
print(json.dumps({
    "rows": table.num_rows,
    "types": schema,
    "frame": col("frame"),
    "gpu_busy_ns": col("gpu_busy_ns"),
    "draws": sorted(set(col("draws")), key=lambda v: (v is None, v)),
    "dump": sorted(set(col("dump"))),
    "exe": sorted(set(col("exe"))),
}))
