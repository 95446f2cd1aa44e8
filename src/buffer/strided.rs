//! A strided array: shared storage and a layout over it. What a kernel sees
//! of a tensor, and what it hands back.

use super::{DType, Dims, Layout, Storage, StorageData};
use std::sync::Arc;

/// Storage + layout, and the dtype read once from the storage (the fields
/// are kept consistent by the constructors: `dtype` is always the
/// storage's).
#[derive(Clone)]
pub struct Strided {
    pub(crate) storage: Arc<Storage>,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
}

impl Strided {
    pub fn new(storage: Arc<Storage>, layout: Layout) -> Strided {
        let dtype = storage.dtype();
        Strided {
            storage,
            layout,
            dtype,
        }
    }
    /// Fresh storage holding `data`, laid out by `layout`.
    pub fn fresh(data: StorageData, layout: Layout) -> Strided {
        Strided::new(Arc::new(Storage::new(data)), layout)
    }
    /// Fresh storage holding `data` in row-major order of `shape`.
    pub fn contiguous(data: StorageData, shape: &[usize]) -> Strided {
        debug_assert_eq!(data.len(), shape.iter().product::<usize>());
        Strided::fresh(data, Layout::contiguous(shape))
    }
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }
    pub fn dims(&self) -> Dims {
        self.layout.shape.clone()
    }
    pub fn ndim(&self) -> usize {
        self.layout.shape.len()
    }
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    pub fn strides(&self) -> &[usize] {
        &self.layout.strides
    }
    pub fn storage_offset(&self) -> usize {
        self.layout.offset
    }
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }
    /// The same storage under another layout.
    pub fn with_layout(&self, mut layout: Layout) -> Strided {
        if layout.numel() == 0 {
            // An empty view may start past its storage's end (a piece of a
            // split along an empty dim); kernels slice from the offset, so
            // keep it inside. It addresses no element either way.
            layout.offset = layout.offset.min(self.storage.read_recursive().len());
        }
        Strided {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
        }
    }
}

impl std::fmt::Debug for Strided {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Strided({:?}, {})", self.layout, self.dtype.name())
    }
}
