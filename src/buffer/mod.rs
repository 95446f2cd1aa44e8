//! The buffer layer: element types, typed storage, strided layouts and the
//! buffer cache. Kernels (`crate::kernels`) see only these; the tensor
//! handle (`crate::tensor`) and everything above build on them. Nothing
//! here knows about tensors or autograd.

pub mod dtype;
pub mod layout;
pub mod pool;
pub mod storage;
mod strided;

pub use dtype::{DType, Element, Float, Scalar};
pub use layout::{Dims, Layout};
pub use storage::{Storage, StorageData};
pub use strided::Strided;
