//! The buffer cache (`crate::tensor::pool`), for tests and for users who
//! want the memory back.

use crate::python::core::bind::bind_functions;
use crate::tensor::pool;
use pyo3::prelude::*;

bind_functions! { register_functions:
    /// Bytes held by the cache of freed big buffers.
    fn _buffer_cache_bytes() -> usize {
        pool::cached_bytes()
    }
    /// Releases every cached buffer to the system allocator.
    fn _empty_buffer_cache() {
        pool::empty_cache()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_functions(m)?;
    Ok(())
}
