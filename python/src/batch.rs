//! `Batch`: one training batch, handed to numpy, pyarrow and torch without copying values.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList, PyTuple};

use crate::array::{Array, i64_numpy, rebased_offsets, values_array, values_view, view_numpy};
use crate::error::{IntoPy, invalid};
use crate::ffi;
use crate::loader::state_dict;

/// One batch of a `Loader`: every column for the batch's samples.
///
/// A batch of consecutive rows of one record batch is a view into the mapping; any other
/// was gathered (copied once). Arrays from a batch keep it, and the mapping, alive.
#[pyclass(frozen, module = "lodtensor")]
pub struct Batch {
    inner: Arc<lodtensor::Batch>,
    schema: Arc<PyOnceLock<Py<PyAny>>>,
}

impl Batch {
    /// `batch`, sharing the loader's pyarrow schema cache.
    pub fn new(batch: lodtensor::Batch, schema: Arc<PyOnceLock<Py<PyAny>>>) -> Self {
        Batch {
            inner: Arc::new(batch),
            schema,
        }
    }

    fn tensor(&self, column: &str) -> PyResult<&lodtensor::LodTensor> {
        self.inner.data().column(column).py_err()
    }
}

/// `ds.take(rows, columns)` of a dataset of `len` rows: `rows` ints (a sequence, or a
/// numpy integer array) from 0 to `len - 1`, an `IndexError` naming the first other one;
/// `take` (the crate's, given the rows and the projection) run without the GIL.
pub fn take<F>(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    columns: Option<Vec<String>>,
    len: usize,
    take: F,
) -> PyResult<Batch>
where
    F: FnOnce(&[usize], Option<&[&str]>) -> lodtensor::Result<lodtensor::Batch> + Send,
{
    let asked: Vec<i64> = rows.extract()?;
    let rows = (asked.iter())
        .map(|&r| match usize::try_from(r) {
            Ok(row) if row < len => Ok(row),
            _ => Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "take: row {r} is out of range: the dataset has {len} rows"
            ))),
        })
        .collect::<PyResult<Vec<usize>>>()?;
    let batch = py
        .detach(|| {
            let names: Option<Vec<&str>> =
                (columns.as_ref()).map(|c| c.iter().map(String::as_str).collect());
            take(&rows, names.as_deref())
        })
        .py_err()?;
    Ok(Batch::new(batch, Arc::new(PyOnceLock::new())))
}

#[lodtensor_python_guard::guard]
#[pymethods]
impl Batch {
    /// The samples (row numbers of the file; of a mixture, rows within each sample's
    /// source; packed, window numbers), in batch order, as numpy `int64` (a view).
    #[getter]
    fn samples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(rows) = self.inner.source_rows() {
            // A mixture's: the rows within each sample's source.
            let n = rows.len();
            return Array::owned(rows.into_iter().map(|r| r as i64).collect(), vec![n])
                .into_numpy(py);
        }
        let samples = self.inner.samples();
        let n = samples.len();
        let array = if cfg!(target_pointer_width = "64") {
            // `usize` is 8 bytes here, and no row number reaches 2^63.
            Array::view(
                self.inner.clone(),
                samples.as_ptr().cast(),
                vec![n],
                lodtensor::DType::Int64,
            )
        } else {
            Array::owned(samples.iter().map(|&s| s as i64).collect(), vec![n])
        };
        array.into_numpy(py)
    }

    /// The number of samples.
    fn __len__(&self) -> usize {
        self.inner.data().num_rows()
    }

    /// The column names.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.inner
            .data()
            .columns()
            .iter()
            .map(|c| c.name().to_owned())
            .collect()
    }

    /// The number of levels of `column` (0 for a dense column).
    fn num_levels(&self, column: &str) -> PyResult<usize> {
        Ok(self.tensor(column)?.num_levels())
    }

    /// The sum of the samples' lengths (the unit of the token budget).
    #[getter]
    fn tokens(&self) -> usize {
        self.inner.tokens()
    }

    /// The batch's cost as the planner counted it: the sum of ``n + w·n²`` over its samples
    /// of ``n`` tokens (a packed window: over its documents' pieces as ``cu_seqlens`` splits
    /// them, its padding counting its length), ``w`` the loader's ``attention_weight``
    /// (0 with ``balance="tokens"`` or without balance: the tokens then).
    #[getter]
    fn cost(&self) -> f64 {
        self.inner.cost()
    }

    /// The longest sample's length.
    #[getter]
    fn max_len(&self) -> usize {
        self.inner.max_len()
    }

    /// Whether this is a single sample longer than the token budget (never dropped as
    /// incomplete).
    #[getter]
    fn is_oversize(&self) -> bool {
        self.inner.is_oversize()
    }

    /// Whether the batch is a view into the mapping (else it was gathered, copied once).
    #[getter]
    fn is_view(&self) -> bool {
        self.inner.is_view()
    }

    /// With `shared_memory=True`, the shared memory a gathered batch lies in, marked lent:
    /// `(fd, inode, address, size)` — the `memfd` (`/proc/PID/fd/FD` for another process),
    /// the region's address in this process and its size. Every array of the batch lies
    /// in it. The loader writes the region again only once its first byte, the lend flag
    /// set here, is 0 again (the process it was lent to clears it when done) and no batch
    /// holds it. `None`: a view of the file, or gathered on the heap.
    fn lend_shared_memory(&self) -> Option<(i32, u64, usize, usize)> {
        let region = self.inner.shared_memory()?;
        region.lend();
        Some((
            region.fd(),
            region.inode(),
            region.as_ptr() as usize,
            region.len(),
        ))
    }

    /// Where the values of `column` (as `values(column)` gives them) lie, for another
    /// process to map: `("file", path, dev, ino, size, mtime_ns, offset)` in a mapped file
    /// (its identity when the loader opened it: a node-cache file of a URL dataset too),
    /// `("shm", pid, fd, ino, size, offset)` in the shared memory the batch was gathered
    /// into, or `None` (on the heap; a side or boolean column).
    fn values_place<'py>(
        &self,
        py: Python<'py>,
        column: &str,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        match self.inner.values_place(column).py_err()? {
            Some(place) => crate::place::place_tuple(py, place).map(Some),
            None => Ok(None),
        }
    }

    /// The share of padding were the samples padded to the longest, in `[0, 1]` (packed:
    /// the share of the windows' tokens that are padding).
    #[getter]
    fn padding_ratio(&self) -> f64 {
        self.inner.padding_ratio()
    }

    /// The epoch this batch belongs to.
    #[getter]
    fn epoch(&self) -> u64 {
        self.inner.position().epoch
    }

    /// The batch's index in its epoch's plan (with `elastic=True`, each rank reads its turns).
    #[getter]
    fn index(&self) -> usize {
        self.inner.index()
    }

    /// The loader state right after this batch: save it once the batch is trained on, and
    /// `Loader.load_state_dict` continues with the next one (also with prefetching, where
    /// the loader itself has read ahead).
    fn next_state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        state_dict(py, &self.inner.next_state())
    }

    /// A mixture's batch (`lt.mix`): the index of each sample's source, numpy `int64`
    /// beside `samples` (then the row within that source); `None` for one source.
    #[getter]
    fn source<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(sources) = self.inner.sources() else {
            return Ok(None);
        };
        let n = sources.len();
        let items = sources.into_iter().map(|k| k as i64).collect();
        Array::owned(items, vec![n]).into_numpy(py).map(Some)
    }

    /// A packed batch's windows (loader option `pack`): one list per window of its pieces
    /// of documents, `(row, first_token, n_tokens)` (the row of the dataset, the piece's
    /// first token within that row's tokens); `None` for a batch that is not packed.
    #[getter]
    fn windows(&self) -> Option<Vec<Vec<(usize, usize, usize)>>> {
        let windows = self.inner.windows()?;
        let piece = |p: &lodtensor::loader::Piece| (p.row, p.first_token, p.n_tokens);
        Some(
            windows
                .iter()
                .map(|w| w.iter().map(piece).collect())
                .collect(),
        )
    }

    /// A packed batch's pieces of documents as arrays: `(pieces, offsets)`, `pieces` numpy
    /// `int64 [P, 3]` of `(row, first_token, n_tokens)`, window after window, and `offsets`
    /// numpy `int64 [B + 1]`, window `w`'s pieces being `pieces[offsets[w]:offsets[w + 1]]`
    /// (the rows of `windows`, without a Python object per piece); `None` unless packed.
    #[allow(clippy::type_complexity)]
    fn pieces<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let Some(windows) = self.inner.windows() else {
            return Ok(None);
        };
        let mut offsets = Vec::with_capacity(windows.len() + 1);
        offsets.push(0);
        let mut flat = Vec::new();
        for window in &windows {
            for p in window {
                flat.extend([p.row as i64, p.first_token as i64, p.n_tokens as i64]);
            }
            offsets.push((flat.len() / 3) as i64);
        }
        let (n, b) = (flat.len() / 3, windows.len());
        Ok(Some((
            Array::owned(flat, vec![n, 3]).into_numpy(py)?,
            Array::owned(offsets, vec![b + 1]).into_numpy(py)?,
        )))
    }

    /// Whether `column` is a side column (strings, lists, ... beside the tensors), whose
    /// `values` are its rows and which has no offsets.
    fn is_side(&self, column: &str) -> PyResult<bool> {
        let found = self.inner.data().column_by_name(column).py_err()?;
        Ok(found.side_array().is_some())
    }

    /// A packed batch's `cu_seqlens` for `column`, numpy `int32` from 0 to the batch's
    /// tokens: a boundary at every window edge and every document edge inside a window (and
    /// where a window's padding starts), as FlashAttention's varlen kernels take them.
    fn cu_seqlens<'py>(&self, py: Python<'py>, column: &str) -> PyResult<Bound<'py, PyAny>> {
        let cu = self.inner.cu_seqlens(column).py_err()?;
        let n = cu.len();
        Array::owned(cu, vec![n]).into_numpy(py)
    }

    /// `(cu_seqlens, position_ids, max_seqlen)` of a packed batch's `column` in one call
    /// (what `lodtensor.torch`'s packed collate gives): `cu_seqlens` and `position_ids` as
    /// the methods of those names, `max_seqlen` the longest piece. Without `positions`,
    /// `position_ids` is `None` (`_position_ids_into` writes them where they go).
    #[pyo3(signature = (column, positions = true))]
    fn _packed<'py>(
        &self,
        py: Python<'py>,
        column: &str,
        positions: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>, usize)> {
        let cu = self.inner.cu_seqlens(column).py_err()?;
        let ids = if positions {
            let mut ids = vec![0; cu.last().map_or(0, |&n| n as usize)];
            fill_positions(&cu, &mut ids);
            Some(Array::owned(ids, vec![tokens(&cu)]).into_numpy(py)?)
        } else {
            None
        };
        let longest = cu.windows(2).map(|w| (w[1] - w[0]) as usize).max();
        let n = cu.len();
        Ok((
            Array::owned(cu, vec![n]).into_numpy(py)?,
            ids,
            longest.unwrap_or(0),
        ))
    }

    /// Writes `position_ids(column)` (native `int64`) into `out` from byte `start`, and
    /// returns how many: `out` a writable byte array of `RegionPool.take` (its region,
    /// which this process alone writes while it holds the array), `start` a multiple of 8.
    /// An `ArgumentError` for any other array or for positions that do not fit.
    fn _position_ids_into(
        &self,
        column: &str,
        out: &Bound<'_, PyAny>,
        start: usize,
    ) -> PyResult<usize> {
        let cu = self.inner.cu_seqlens(column).py_err()?;
        let base = out.getattr("base")?;
        let bytes = base
            .cast::<Array>()
            .ok()
            .and_then(|a| a.get().writable_range());
        let Some((address, len)) = bytes else {
            return Err(invalid(
                "_position_ids_into: out is not a writable array of RegionPool.take",
            ));
        };
        let n = tokens(&cu);
        let end = n.checked_mul(8).and_then(|b| b.checked_add(start));
        if end.is_none_or(|end| end > len) || !(address as usize + start).is_multiple_of(8) {
            let e = format!(
                "_position_ids_into: {n} positions from byte {start} do not fit \
                 {len} bytes at {address:p}, 8-byte aligned"
            );
            return Err(invalid(e));
        }
        // SAFETY: `start..start + 8n` lies inside the `len` writable bytes at `address`
        // (checked above), 8-byte aligned; the array `out` over them, borrowed for this
        // call, keeps the region alive and busy in its pool, and only its holder writes it.
        let ids = unsafe { std::slice::from_raw_parts_mut(address.add(start).cast::<i64>(), n) };
        fill_positions(&cu, ids);
        Ok(n)
    }

    /// A side column's rows as one Python list (a packed batch's: one value per piece, the
    /// windows' lists flattened), as `values(column)`'s `to_pylist()` gives them; `None`
    /// for a kind left to pyarrow (or a column that is not a side column).
    fn _side_list<'py>(
        &self,
        py: Python<'py>,
        column: &str,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let found = self.inner.data().column_by_name(column).py_err()?;
        let Some(array) = found.side_array() else {
            return Ok(None);
        };
        crate::pylist::side_list(py, array, self.inner.is_packed())
    }

    /// A side column of strings without nulls as two buffers, `(data, offsets)` (a
    /// packed batch's: one string per piece): the strings' UTF-8 bytes one after another
    /// and `n + 1` native `int64` offsets into them, which `_native.utf8_list` makes the list
    /// of `_side_list` again; `None` for another kind (or a column that is not a side column).
    #[allow(clippy::type_complexity)]
    fn _side_utf8<'py>(
        &self,
        py: Python<'py>,
        column: &str,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        let found = self.inner.data().column_by_name(column).py_err()?;
        let Some(array) = found.side_array() else {
            return Ok(None);
        };
        crate::pylist::side_utf8(py, array, self.inner.is_packed())
    }

    /// A packed batch's position of every token of `column` within its piece of a
    /// document, numpy `int64`: 0 at every boundary of `cu_seqlens`, then counting up.
    fn position_ids<'py>(&self, py: Python<'py>, column: &str) -> PyResult<Bound<'py, PyAny>> {
        let ids = self.inner.position_ids(column).py_err()?;
        let n = ids.len();
        Array::owned(ids, vec![n]).into_numpy(py)
    }

    /// The values of `column` in this batch, `[n_elements, *element_shape]`, as a numpy
    /// array: a read-only view when the batch is a view of the mapping (booleans, packed in
    /// bits by Arrow, are copied into bytes). A side column gives its rows: a numpy view
    /// for primitives without nulls, else a `pyarrow.Array` (sharing the buffers).
    fn values<'py>(slf: &Bound<'py, Self>, column: &str) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get();
        let found = this.inner.data().column_by_name(column).py_err()?;
        if let Some(array) = found.side_array() {
            return side_values(slf.py(), found.arrow_field(), array.clone());
        }
        let tensor = this.tensor(column)?;
        let (values, elements) = (tensor.values(), tensor.elements());
        if let Some((address, shape)) = values_view(values, elements.clone()) {
            // SAFETY: the items lie in the batch's buffers, which the `Batch` (the base)
            // keeps alive.
            let made = unsafe { view_numpy(slf.as_any(), address, &shape, values.dtype()) };
            if let Some(array) = made {
                return array;
            }
        }
        values_array(this.inner.clone(), values, elements)?.into_numpy(slf.py())
    }

    /// The offsets of level `level` of `column` (0 the outermost), as numpy `int64` starting
    /// at 0: level `l`'s offsets index the sequences of level `l + 1` of this batch, the last
    /// level's the rows of `values(column)`. Every level's, as a list (level 0 first), when
    /// `level` is `None`. A small copy (offsets only).
    #[pyo3(signature = (column, level = None))]
    fn offsets<'py>(
        &self,
        py: Python<'py>,
        column: &str,
        level: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let lod = self.tensor(column)?.lod();
        let levels = lod.num_levels();
        let Some(level) = level else {
            let arrays = (0..levels).map(|l| i64_numpy(py, rebased_offsets(lod, l)));
            return Ok(PyList::new(py, arrays.collect::<PyResult<Vec<_>>>()?)?.into_any());
        };
        if level >= levels {
            let e = lodtensor::ArgumentError::LevelOutOfBounds { level, levels };
            return Err(crate::error::to_py(e.into()));
        }
        i64_numpy(py, rebased_offsets(lod, level))
    }

    /// The sequences of level `level` of `column`, zero-padded to the longest:
    /// `(values [n, max_len, *element_shape], lengths int64 [n], mask bool [n, max_len])`,
    /// as numpy arrays (a copy, as padding needs one).
    fn to_padded<'py>(
        &self,
        py: Python<'py>,
        column: &str,
        level: usize,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let padded = py.detach(|| self.inner.to_padded(column, level)).py_err()?;
        let (rows, max_len) = (padded.shape[0], padded.max_len());
        let owner = Arc::new(padded.values.clone());
        let mut values = values_array(owner, &padded.values, 0..rows * max_len)?;
        values.reshape(padded.shape.clone());
        let lengths = padded.lengths.iter().map(|&l| l as i64).collect();
        Ok((
            values.into_numpy(py)?,
            Array::owned(lengths, vec![rows]).into_numpy(py)?,
            Array::owned(padded.mask, vec![rows, max_len]).into_numpy(py)?,
        ))
    }

    /// The batch as a `pyarrow.RecordBatch`, sharing every buffer.
    fn to_pyarrow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let data = self.inner.data();
        let schema = self.schema.get_or_try_init(py, || {
            ffi::to_pyarrow_schema(py, &data.schema()).map(Bound::unbind)
        })?;
        ffi::to_pyarrow_batch(py, data.to_record_batch(), schema.bind(py))
    }

    /// The Arrow PyCapsule protocol: the batch as a struct array of its columns.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        ffi::array_capsules(py, self.inner.data().to_record_batch())
    }

    /// Level `level` (default: the last) of `column` as a `torch.nested` jagged tensor: one
    /// entry per sequence of that level, `[length, *element_shape]`, over the batch's values
    /// without a copy when the batch is a view. Needs torch.
    #[pyo3(signature = (column, level = None))]
    fn to_torch_nested<'py>(
        slf: &Bound<'py, Self>,
        column: &str,
        level: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("lodtensor._torch")?
            .call_method1("to_nested", (slf, column, level))
    }

    fn __repr__(&self) -> String {
        let p = self.inner.position();
        format!(
            "lodtensor.Batch(epoch={}, index={}, samples={}, tokens={}, view={})",
            p.epoch,
            p.batch,
            self.inner.data().num_rows(),
            self.inner.tokens(),
            self.inner.is_view()
        )
    }
}

/// The number of tokens `cu` (`cu_seqlens`) bounds.
fn tokens(cu: &[i32]) -> usize {
    cu.last().map_or(0, |&n| n as usize)
}

/// `ids` (`tokens(cu)` of them) the position of each token within its piece of `cu`.
/// `cu` is a batch's `cu_seqlens`: from 0, non-decreasing (the batch's offsets, validated).
fn fill_positions(cu: &[i32], ids: &mut [i64]) {
    for w in cu.windows(2) {
        let piece = &mut ids[w[0] as usize..w[1] as usize];
        for (id, position) in piece.iter_mut().zip(0..) {
            *id = position;
        }
    }
}

/// A side column's rows as a `pyarrow.Array` sharing its buffers, or its numpy view (no
/// copy) when it is a primitive array without nulls.
fn side_values(
    py: Python<'_>,
    field: arrow_schema::Field,
    array: arrow_array::ArrayRef,
) -> PyResult<Bound<'_, PyAny>> {
    let numeric = array.data_type().is_primitive() && array.null_count() == 0;
    let schema = Arc::new(arrow_schema::Schema::new(vec![field]));
    let batch = arrow_array::RecordBatch::try_new(schema.clone(), vec![array])
        .map_err(|e| crate::error::to_py(e.into()))?;
    let pyarrow_schema = ffi::to_pyarrow_schema(py, &schema)?;
    let column = ffi::to_pyarrow_batch(py, batch, &pyarrow_schema)?.call_method1("column", (0,))?;
    if numeric {
        let kwargs = PyDict::new(py);
        kwargs.set_item("zero_copy_only", true)?;
        return column.call_method("to_numpy", (), Some(&kwargs));
    }
    Ok(column)
}
