//! The tensor handle: an `Arc` around storage + layout + autograd metadata.

pub mod create;
pub mod dlpack;
pub mod print;
pub mod random;
pub mod safetensors;
pub mod sampling;
pub mod sampling_more;

pub use crate::buffer::{dtype, layout, pool, storage};
pub use crate::buffer::{
    DType, Dims, Element, Float, Layout, Scalar, Storage, StorageData, Strided,
};
use crate::{bail, Result};
use parking_lot::Mutex;
use std::any::Any;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

thread_local! {
    /// torch's InferenceMode, per thread: tensors made while it is on are
    /// inference tensors ([`TensorImpl::inference`]). Switched by
    /// `autograd::grad_mode` (with grad mode).
    static INFERENCE_MODE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is in inference mode.
pub fn is_inference_mode_enabled() -> bool {
    INFERENCE_MODE.with(|m| m.get())
}

/// Turns this thread's inference mode on or off.
pub fn set_inference_mode(enabled: bool) {
    INFERENCE_MODE.with(|m| m.set(enabled));
}

/// Counts in-place modifications; shared by a tensor and all its views.
/// Remembers the last one, so that the error for a saved tensor modified
/// in place can name the op that did it.
#[derive(Default)]
pub struct VersionCounter {
    version: AtomicU64,
    last: Mutex<Option<LastWrite>>,
}

/// The in-place op that made a version, and (under anomaly mode) an opaque
/// record of where it was called, which the autograd layer formats.
#[derive(Clone)]
pub struct LastWrite {
    pub op: Cow<'static, str>,
    pub version: u64,
    pub trace: Option<Arc<dyn Any + Send + Sync>>,
}

impl VersionCounter {
    pub fn get(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
    /// One more in-place modification, by `op`.
    pub fn bump(&self, op: Cow<'static, str>, trace: Option<Arc<dyn Any + Send + Sync>>) {
        let mut last = self.last.lock();
        let version = self.version.fetch_add(1, Ordering::AcqRel) + 1;
        *last = Some(LastWrite { op, version, trace });
    }
    /// The last in-place modification, if any.
    pub fn last_write(&self) -> Option<LastWrite> {
        self.last.lock().clone()
    }
}

impl std::fmt::Debug for VersionCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VersionCounter({})", self.get())
    }
}

pub struct TensorImpl {
    pub(crate) data: Strided,
    pub(crate) version: Arc<VersionCounter>,
    /// For a view: the tensor that owns the memory (never itself a view).
    pub(crate) view_base: Option<Tensor>,
    /// Autograd state, made on first use by `crate::autograd::meta` (the
    /// tensor layer does not know its type, as torch's TensorImpl holds an
    /// `AutogradMetaInterface`): tensors that never meet autograd carry none.
    pub(crate) autograd: Mutex<Option<Box<dyn Any + Send>>>,
    /// torch's inference tensor: made in inference mode, or a view (or
    /// `detach()`, `.data`) of one. Outside inference mode it may not be
    /// written in place, saved for backward or made to require grad.
    pub(crate) inference: bool,
}

#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}",
            self.shape(),
            self.dtype().name()
        )?;
        if self.numel() <= 16 {
            write!(f, ", data={:?}", self.to_f64_vec())?;
        }
        write!(f, ")")
    }
}

impl std::ops::Deref for Tensor {
    type Target = Strided;
    /// A tensor is a handle around a strided array: its shape, dtype,
    /// layout and storage are the array's, and kernels take it as one.
    fn deref(&self) -> &Strided {
        &self.0.data
    }
}

impl From<Strided> for Tensor {
    /// A fresh tensor (no history, not a view) around a kernel's output;
    /// an inference tensor when made in inference mode.
    fn from(data: Strided) -> Tensor {
        let inference = is_inference_mode_enabled();
        Tensor::with_parts(data, Arc::default(), None, inference)
    }
}

impl Tensor {
    fn with_parts(
        data: Strided,
        version: Arc<VersionCounter>,
        view_base: Option<Tensor>,
        inference: bool,
    ) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            data,
            version,
            view_base,
            autograd: Mutex::new(None),
            inference,
        }))
    }

    /// A fresh tensor owning `storage` laid out by `layout`.
    pub fn from_storage(storage: Arc<Storage>, layout: Layout) -> Tensor {
        Tensor::from(Strided::new(storage, layout))
    }

    /// A view of this tensor's memory with another layout. Shares storage and
    /// version counter; carries no autograd history (callers record it).
    pub fn alias_with_layout(&self, layout: Layout) -> Tensor {
        let base = self.0.view_base.clone().unwrap_or_else(|| self.clone());
        let data = self.0.data.with_layout(layout);
        Tensor::with_parts(data, self.0.version.clone(), Some(base), self.0.inference)
    }

    /// Same memory, same version counter, no history and not a view
    /// (torch's `detach()`): views of it are views of it, not of the
    /// tensor it was detached from, so autograd never links the two.
    pub fn detach(&self) -> Tensor {
        Tensor::with_parts(
            self.0.data.clone(),
            self.0.version.clone(),
            None,
            self.0.inference,
        )
    }

    /// torch's `.data`: the same memory and layout as a tensor of its own:
    /// no history, not requiring grad, not a view, and a fresh version
    /// counter, so in-place writes through it escape autograd's checks.
    /// (Also how a fresh buffer laid out with custom strides becomes a base.)
    pub fn data(&self) -> Tensor {
        let version = Arc::default();
        Tensor::with_parts(self.0.data.clone(), version, None, self.0.inference)
    }

    /// The tensor that takes this one's place under `.data = data` (see
    /// `replace_data`): `data`'s array with this tensor's version counter.
    pub(crate) fn with_data_of(&self, data: &Tensor) -> Tensor {
        let version = self.0.version.clone();
        Tensor::with_parts(data.0.data.clone(), version, None, self.0.inference)
    }

    // ----- plain accessors (shape, dtype, layout, storage: see `Strided`) -----
    pub fn storage_offset(&self) -> usize {
        self.layout.offset
    }
    pub fn is_view(&self) -> bool {
        self.0.view_base.is_some()
    }
    /// torch's `is_inference()`: made in inference mode, or a view of such
    /// a tensor (see [`TensorImpl::inference`]).
    pub fn is_inference(&self) -> bool {
        self.0.inference
    }
    /// torch's refusal of an in-place write into an inference tensor
    /// outside inference mode (checked before anything is written).
    pub fn check_inference_write(&self) -> Result<()> {
        if self.0.inference && !is_inference_mode_enabled() {
            bail!(runtime, "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.");
        }
        Ok(())
    }
    pub fn view_base(&self) -> Option<&Tensor> {
        self.0.view_base.as_ref()
    }
    pub fn version(&self) -> u64 {
        self.0.version.get()
    }
    pub fn version_counter(&self) -> &Arc<VersionCounter> {
        &self.0.version
    }
    /// Records an in-place modification by `op` (see
    /// `Tensor::modified_by`, which also captures the anomaly-mode trace).
    pub fn bump_version(&self, op: Cow<'static, str>, trace: Option<Arc<dyn Any + Send + Sync>>) {
        self.0.version.bump(op, trace)
    }
    /// Size along a (possibly negative) dim.
    pub fn size(&self, dim: i64) -> Result<usize> {
        Ok(self.shape()[layout::wrap_dim(dim, self.ndim())?])
    }
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
    pub fn data_ptr(&self) -> usize {
        self.storage.data_ptr() + self.layout.offset * self.dtype().itemsize()
    }
    /// The address of the storage's first element: equal for tensors that
    /// view the same storage.
    pub fn storage_ptr(&self) -> usize {
        self.storage.data_ptr()
    }

    // ----- data access -----
    /// Reads every element in row-major order, converted to f64.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        crate::buffer::pool::or_panic(crate::kernels::copy::to_vec_as::<f64>(self))
    }
    /// Reads every element as `T` (converting from the tensor's dtype).
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        crate::buffer::pool::or_panic(self.try_to_vec())
    }
    /// [`Tensor::to_vec`], failing with torch's out-of-memory error where
    /// the system refuses the memory (a broadcast view can be far larger
    /// than its storage).
    pub fn try_to_vec<T: Element>(&self) -> Result<Vec<T>> {
        crate::kernels::copy::to_vec_as::<T>(self)
    }
    /// The elements in row-major order as little-endian bytes of the
    /// tensor's dtype (bool: one byte, 0 or 1).
    pub fn to_le_bytes(&self) -> Result<Vec<u8>> {
        crate::dispatch_all!(self.dtype(), T => {
            let v = self.try_to_vec::<T>()?;
            let mut out = Vec::new();
            out.try_reserve_exact(v.len() * self.dtype().itemsize())
                .map_err(|_| crate::buffer::pool::alloc_error(v.len() * self.dtype().itemsize()))?;
            v.into_iter().for_each(|x| x.put_le(&mut out));
            Ok(out)
        })
    }
    /// A contiguous tensor of `dtype` and `shape` read from little-endian
    /// `data`, which must hold exactly that many elements.
    pub fn from_le_bytes(data: &[u8], dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let size = dtype.itemsize();
        if !data.len().is_multiple_of(size) {
            bail!(
                value,
                "{} bytes are not a whole number of {} elements",
                data.len(),
                dtype.name()
            );
        }
        crate::dispatch_all!(dtype, T => Tensor::from_vec(
            data.chunks_exact(size).map(T::read_le).collect::<Vec<T>>(),
            shape,
        ))
    }
    /// The value of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            bail!(
                runtime,
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            );
        }
        let st = self.storage.read();
        let o = self.layout.offset;
        Ok(match &*st {
            StorageData::Bool(b) => Scalar::Bool(b[o]),
            StorageData::F32(b) => Scalar::Float(b[o] as f64),
            StorageData::F64(b) => Scalar::Float(b[o]),
            StorageData::F16(b) => Scalar::Float(b[o].to_f64()),
            StorageData::BF16(b) => Scalar::Float(b[o].to_f64()),
            ints => {
                crate::dispatch_ints!(ints.dtype(), T => Scalar::Int(ints.as_slice::<T>()[o].to_i64()))
            }
        })
    }
}
