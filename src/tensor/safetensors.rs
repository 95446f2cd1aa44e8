//! safetensors files through the `safetensors` crate: named tensors and
//! string metadata to bytes ([`serialize`], [`save_file`]) and back
//! ([`deserialize`], [`load_file`]). The Python front is
//! `ferrograd.utils.safetensors` (`save`/`load`/`save_file`/`load_file`,
//! as `safetensors.torch` names them).

use crate::{bail, DType, Error, Result, Tensor};
use ::safetensors::tensor::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// Named tensors (sorted by name when loaded) and the file's metadata.
pub type Loaded = (Vec<(String, Tensor)>, Option<HashMap<String, String>>);

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

fn entry(t: &Tensor) -> Result<Entry> {
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
    Ok(Entry {
        dtype,
        shape: t.shape().to_vec(),
        bytes: t.to_le_bytes()?,
    })
}

fn format_error(e: ::safetensors::SafeTensorError) -> Error {
    Error::runtime(format!("Error while (de)serializing safetensors: {e:?}"))
}

/// The safetensors bytes of `tensors` (contiguous or not) with optional
/// string `metadata`.
pub fn serialize<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
) -> Result<Vec<u8>> {
    let entries = tensors
        .into_iter()
        .map(|(name, t)| Ok((name, entry(t)?)))
        .collect::<Result<Vec<_>>>()?;
    ::safetensors::tensor::serialize(entries.iter().map(|(n, e)| (*n, e)), metadata)
        .map_err(format_error)
}

/// The tensors (sorted by name) and metadata of safetensors bytes.
pub fn deserialize(data: &[u8]) -> Result<Loaded> {
    let st = SafeTensors::deserialize(data).map_err(format_error)?;
    let (_, meta) = SafeTensors::read_metadata(data).map_err(format_error)?;
    let mut views = st.tensors();
    views.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(views.len());
    for (name, view) in views {
        let dtype = match view.dtype() {
            Dtype::BOOL => DType::Bool,
            Dtype::U8 => DType::U8,
            Dtype::I8 => DType::I8,
            Dtype::I16 => DType::I16,
            Dtype::I32 => DType::I32,
            Dtype::I64 => DType::I64,
            Dtype::F16 => DType::F16,
            Dtype::BF16 => DType::BF16,
            Dtype::F32 => DType::F32,
            Dtype::F64 => DType::F64,
            other => bail!(
                type_error,
                "ferrograd cannot load the safetensors dtype {other:?} (tensor `{name}`)"
            ),
        };
        let t = Tensor::from_le_bytes(view.data(), dtype, view.shape())?;
        out.push((name, t));
    }
    Ok((out, meta.metadata().clone()))
}

/// Writes `tensors` and `metadata` to the safetensors file `path`.
pub fn save_file<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
    path: impl AsRef<Path>,
) -> Result<()> {
    let bytes = serialize(tensors, metadata)?;
    std::fs::write(path.as_ref(), bytes)
        .map_err(|e| Error::runtime(format!("cannot write {}: {e}", path.as_ref().display())))
}

/// The tensors (sorted by name) and metadata of the safetensors file `path`.
pub fn load_file(path: impl AsRef<Path>) -> Result<Loaded> {
    let bytes = std::fs::read(path.as_ref())
        .map_err(|e| Error::runtime(format!("cannot read {}: {e}", path.as_ref().display())))?;
    deserialize(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_and_metadata_round_trip_through_a_file() {
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        let at = a.transpose(0, 1).unwrap(); // saved as its values, row-major
        let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
        let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
        let path = std::env::temp_dir().join(format!("fg_st_{}.safetensors", std::process::id()));
        save_file([("w", &at), ("mask", &b)], Some(meta.clone()), &path).unwrap();
        let (loaded, got_meta) = load_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(got_meta, Some(meta));
        let names: Vec<&str> = loaded.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["mask", "w"]);
        assert_eq!(loaded[1].1.shape(), &[3, 2]);
        assert_eq!(loaded[1].1.to_vec::<f32>(), at.to_vec::<f32>());
        assert_eq!(loaded[0].1.to_vec::<bool>(), vec![true, false]);
        assert!(deserialize(b"not a safetensors file").is_err());
    }
}
