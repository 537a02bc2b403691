"""The example of format-spec.md, section 9: writes a valid lodtensor file with pyarrow only.

usage: spec_example.py OUT.arrow
"""
import sys

import numpy as np
import pyarrow as pa

# Three articles of 3, 1 and 2 sentences of 3, 2, 4, 1, 2 and 3 words; each word an f32[2].
level_offsets = [
    np.array([0, 3, 4, 6], dtype=np.int64),             # level 0: articles -> sentences
    np.array([0, 3, 5, 9, 10, 12, 15], dtype=np.int64),  # level 1: sentences -> words
]
values = np.arange(30, dtype=np.float32).reshape(15, 2)   # 15 elements of shape [2]

elements = pa.FixedShapeTensorArray.from_numpy_ndarray(values)
column = elements
for offsets in reversed(level_offsets):
    column = pa.LargeListArray.from_arrays(pa.array(offsets), column)

field = pa.field("words", column.type, metadata={
    "lodtensor.lod_levels": "2",
    "lodtensor.level_names": '["articles","sentences"]',
    "lodtensor.dtype": "float32",
    "lodtensor.element_shape": "[2]",
})
schema = pa.schema([field], metadata={"lodtensor.format_version": "1"})
with pa.OSFile(sys.argv[1], "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
    writer.write_batch(pa.record_batch([column], schema=schema))
