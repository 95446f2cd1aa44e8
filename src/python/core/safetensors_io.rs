//! safetensors files through the `safetensors` crate: `_C._safetensors_save`
//! (name -> tensor dict and string metadata to bytes) and
//! `_C._safetensors_load` (bytes to a dict and the metadata). The Python
//! front is `ferrograd.utils.safetensors` (`save`/`load`/`save_file`/
//! `load_file`, as `safetensors.torch` names them).
//!
//! Dtypes ferrograd lacks load widened, as torch checkpoints do
//! (F16/BF16 as float32, I8/I16/I32/U8 as int64).

use crate::python::core::storage_io::tensor_from_le_bytes;
use crate::python::core::tensor::{wrap, PyTensor};
use crate::tensor::Layout;
use crate::{DType, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use safetensors::tensor::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::HashMap;

/// A loaded file: its tensors by name and its metadata.
type Loaded<'py> = (Bound<'py, PyDict>, Option<HashMap<String, String>>);

struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &Entry {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

fn entry(t: &Tensor) -> crate::Result<Entry> {
    let dtype = match t.dtype() {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
    };
    let bytes = t.to_le_bytes()?;
    Ok(Entry {
        dtype,
        shape: t.shape().to_vec(),
        bytes,
    })
}

fn st_err(e: safetensors::SafeTensorError) -> PyErr {
    PyRuntimeError::new_err(format!("Error while (de)serializing safetensors: {e:?}"))
}

/// The safetensors bytes of `tensors` (a dict of name -> contiguous or not
/// tensor) with optional string `metadata`.
#[pyfunction]
#[pyo3(signature = (tensors, metadata=None))]
fn _safetensors_save<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyDict>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut entries = Vec::with_capacity(tensors.len());
    for (k, v) in tensors.iter() {
        let name: String = k.extract()?;
        let t = v.cast::<PyTensor>().map_err(|_| {
            PyTypeError::new_err(format!(
                "Key `{name}` is invalid, expected ferrograd.Tensor but received {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        entries.push((name, entry(&t.borrow().inner)?));
    }
    let out =
        safetensors::tensor::serialize(entries.iter().map(|(n, e)| (n.as_str(), e)), metadata)
            .map_err(st_err)?;
    Ok(PyBytes::new(py, &out))
}

/// A dict of name -> tensor and the metadata (or None) of safetensors bytes.
#[pyfunction]
fn _safetensors_load<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Loaded<'py>> {
    let st = SafeTensors::deserialize(data).map_err(st_err)?;
    let (_, meta) = SafeTensors::read_metadata(data).map_err(st_err)?;
    let mut views = st.tensors();
    views.sort_by(|a, b| a.0.cmp(&b.0));
    let out = PyDict::new(py);
    for (name, view) in views {
        let dtype = match view.dtype() {
            Dtype::BOOL => "bool",
            Dtype::U8 => "uint8",
            Dtype::I8 => "int8",
            Dtype::I16 => "int16",
            Dtype::I32 => "int32",
            Dtype::I64 => "int64",
            Dtype::F16 => "float16",
            Dtype::BF16 => "bfloat16",
            Dtype::F32 => "float32",
            Dtype::F64 => "float64",
            other => {
                return Err(PyTypeError::new_err(format!(
                    "ferrograd cannot load the safetensors dtype {other:?} (tensor `{name}`)"
                )))
            }
        };
        let flat = tensor_from_le_bytes(view.data(), dtype)?;
        let t = Tensor::from_storage(flat.storage().clone(), Layout::contiguous(view.shape()));
        out.set_item(name, wrap(t))?;
    }
    Ok((out, meta.metadata().clone()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_safetensors_save, m)?)?;
    m.add_function(wrap_pyfunction!(_safetensors_load, m)?)
}
