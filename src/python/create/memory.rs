//! The buffer cache (`crate::tensor::pool`), for tests and for users who
//! want the memory back.

use crate::tensor::pool;
use pyo3::prelude::*;

/// Bytes held by the cache of freed big buffers.
#[pyfunction]
fn _buffer_cache_bytes() -> usize {
    pool::cached_bytes()
}

/// Releases every cached buffer to the system allocator.
#[pyfunction]
fn _empty_buffer_cache() {
    pool::empty_cache()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_buffer_cache_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_empty_buffer_cache, m)?)?;
    Ok(())
}
