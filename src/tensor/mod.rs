//! The tensor handle: an `Arc` around storage + layout + autograd metadata.

pub mod create;
pub mod dtype;
pub mod layout;
pub mod pool;
pub mod random;
pub mod storage;

use crate::autograd::node::{Edge, Node};
use crate::autograd::AccumulateGrad;
use crate::{bail, Result};
pub use dtype::{DType, Element, Float, Scalar};
pub use layout::{Dims, Layout};
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
pub use storage::{Storage, StorageData};

/// Counts in-place modifications; shared by a tensor and all its views.
#[derive(Default, Debug)]
pub struct VersionCounter(AtomicU64);

impl VersionCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// A hook on a tensor's gradient: may return a replacement gradient. As in
/// torch it is also called when the gradient is undefined (`None`), and may
/// not replace an undefined gradient.
pub type TensorHook = Arc<dyn Fn(Option<&Tensor>) -> Result<Option<Tensor>> + Send + Sync>;

/// A hook run after a leaf's `.grad` was updated.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// Autograd state of one tensor.
#[derive(Default)]
pub struct AutogradMeta {
    /// Set on leaves by the user (`requires_grad_()`); non-leaves require
    /// grad because they have a `grad_fn`.
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    pub grad_fn: Option<Arc<Node>>,
    pub output_nr: usize,
    pub grad_accumulator: Weak<Node>,
    pub retains_grad: bool,
    /// Hooks of a leaf, run by its AccumulateGrad before accumulation.
    pub hooks: Vec<(u64, TensorHook)>,
    /// Hooks run after `.grad` has been accumulated into a leaf.
    pub post_accumulate_hooks: Vec<(u64, PostAccumulateHook)>,
    /// Forward-AD tangents, by level id (see `autograd::forward`).
    pub fw_grads: Vec<(u64, Tensor)>,
}

pub struct TensorImpl {
    pub(crate) storage: Arc<Storage>,
    pub(crate) layout: Layout,
    pub(crate) dtype: DType,
    pub(crate) version: Arc<VersionCounter>,
    /// For a view: the tensor that owns the memory (never itself a view).
    pub(crate) view_base: Option<Tensor>,
    pub(crate) autograd: Mutex<AutogradMeta>,
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

impl Tensor {
    /// A fresh tensor owning `storage` laid out by `layout`.
    pub fn from_storage(storage: Arc<Storage>, layout: Layout) -> Tensor {
        let dtype = storage.dtype();
        Tensor(Arc::new(TensorImpl {
            storage,
            layout,
            dtype,
            version: Arc::default(),
            view_base: None,
            autograd: Mutex::new(AutogradMeta::default()),
        }))
    }

    /// A view of this tensor's memory with another layout. Shares storage and
    /// version counter; carries no autograd history (callers record it).
    pub fn alias_with_layout(&self, layout: Layout) -> Tensor {
        let base = self.0.view_base.clone().unwrap_or_else(|| self.clone());
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout,
            dtype: self.0.dtype,
            version: self.0.version.clone(),
            view_base: Some(base),
            autograd: Mutex::new(AutogradMeta::default()),
        }))
    }

    /// Same memory, same version counter, no history and not a view
    /// (torch's `detach()`).
    pub fn detach(&self) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            version: self.0.version.clone(),
            view_base: self.0.view_base.clone(),
            autograd: Mutex::new(AutogradMeta::default()),
        }))
    }

    /// torch's `.data`: the same memory and layout as a tensor of its own:
    /// no history, not requiring grad, not a view, and a fresh version
    /// counter, so in-place writes through it escape autograd's checks.
    /// (Also how a fresh buffer laid out with custom strides becomes a base.)
    pub fn data(&self) -> Tensor {
        Tensor(Arc::new(TensorImpl {
            storage: self.0.storage.clone(),
            layout: self.0.layout.clone(),
            dtype: self.0.dtype,
            version: Arc::default(),
            view_base: None,
            autograd: Mutex::new(AutogradMeta::default()),
        }))
    }

    // ----- plain accessors -----
    pub fn shape(&self) -> &[usize] {
        &self.0.layout.shape
    }
    pub fn dims(&self) -> Dims {
        self.0.layout.shape.clone()
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub fn strides(&self) -> &[usize] {
        &self.0.layout.strides
    }
    pub fn storage_offset(&self) -> usize {
        self.0.layout.offset
    }
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    pub fn is_view(&self) -> bool {
        self.0.view_base.is_some()
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
    pub fn bump_version(&self) {
        self.0.version.bump()
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
        self.0.storage.data_ptr() + self.0.layout.offset * self.dtype().itemsize()
    }

    // ----- autograd metadata -----
    pub(crate) fn meta(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.autograd.lock()
    }
    pub fn requires_grad(&self) -> bool {
        let m = self.meta();
        m.requires_grad || m.grad_fn.is_some()
    }
    pub fn is_leaf(&self) -> bool {
        self.meta().grad_fn.is_none()
    }
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        self.meta().grad_fn.clone()
    }
    pub fn output_nr(&self) -> usize {
        self.meta().output_nr
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.dtype() != self.dtype() {
                bail!(
                    runtime,
                    "attempting to assign a gradient with dtype '{}' to a tensor with grad_dtype '{}'. The gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.",
                    g.dtype().cpp_type_name(),
                    self.dtype().scalar_type_name()
                );
            }
            if g.shape() != self.shape() {
                bail!(
                    runtime,
                    "attempting to assign a gradient of size '{:?}' to a tensor of size '{:?}'. Please ensure that the gradient and the tensor are the same size",
                    g.shape(),
                    self.shape()
                );
            }
        }
        self.meta().grad = grad;
        Ok(())
    }
    /// torch's `requires_grad_()`: only on leaves, only for floating dtypes.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<&Tensor> {
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            if !requires_grad {
                bail!(
                    runtime,
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
                );
            }
            return Ok(self);
        }
        if requires_grad && !self.dtype().is_floating() {
            bail!(
                runtime,
                "only Tensors of floating point dtype can require gradients"
            );
        }
        m.requires_grad = requires_grad;
        Ok(self)
    }
    /// Builder form of `set_requires_grad(true)` for fresh leaves.
    pub fn requires_grad_(self, requires_grad: bool) -> Result<Tensor> {
        self.set_requires_grad(requires_grad)?;
        Ok(self)
    }
    pub fn retain_grad(&self) -> Result<()> {
        let mut m = self.meta();
        if m.grad_fn.is_none() {
            if !m.requires_grad {
                bail!(
                    runtime,
                    "can't retain_grad on Tensor that has requires_grad=False"
                );
            }
            return Ok(()); // leaves always keep their grad
        }
        if m.retains_grad {
            return Ok(());
        }
        m.retains_grad = true;
        let node = m.grad_fn.clone().unwrap();
        let nr = m.output_nr;
        drop(m);
        node.add_retain_grad(nr, Arc::downgrade(&self.0));
        Ok(())
    }
    pub fn retains_grad(&self) -> bool {
        self.meta().retains_grad
    }
    /// Sets the history of a fresh op output.
    pub(crate) fn set_history(&self, node: Arc<Node>, output_nr: usize) {
        let mut m = self.meta();
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
    }
    /// Drops history in place (`detach_()`).
    pub fn detach_(&self) -> Result<()> {
        if self.is_view() && self.requires_grad() && !self.is_leaf() {
            bail!(
                runtime,
                "Can't detach views in-place. Use detach() instead."
            );
        }
        let mut m = self.meta();
        m.grad_fn = None;
        m.output_nr = 0;
        m.requires_grad = false;
        Ok(())
    }
    /// torch's `.data = data`: the tensor that takes this one's place, with
    /// `data`'s memory, layout and dtype and this tensor's version counter
    /// and autograd state (grad, grad_fn, hooks). The state moves: this
    /// handle is left a plain tensor, and the AccumulateGrad of graphs that
    /// already end at it adds into the new one (unless shape or dtype
    /// changed, as torch then starts a new accumulator). Those graphs keep
    /// the values they saved.
    pub fn replace_data(&self, data: &Tensor) -> Result<Tensor> {
        let mut m = self.meta();
        if (m.requires_grad || m.grad_fn.is_some()) && !data.dtype().is_floating() {
            bail!(
                runtime,
                "data set to a tensor that requires gradients must be floating point or complex dtype"
            );
        }
        let mut moved = std::mem::take(&mut *m);
        drop(m);
        let new = Tensor(Arc::new(TensorImpl {
            storage: data.0.storage.clone(),
            layout: data.0.layout.clone(),
            dtype: data.0.dtype,
            version: self.0.version.clone(),
            view_base: None,
            autograd: Mutex::new(AutogradMeta::default()),
        }));
        if let Some(acc) = moved.grad_accumulator.upgrade() {
            let same_kind = data.shape() == self.shape() && data.dtype() == self.dtype();
            match acc.as_any().downcast_ref::<AccumulateGrad>() {
                Some(acc) if same_kind => acc.set_variable(new.clone()),
                _ => moved.grad_accumulator = Weak::new(),
            }
        }
        if let (true, Some(f)) = (moved.retains_grad, &moved.grad_fn) {
            f.add_retain_grad(moved.output_nr, Arc::downgrade(&new.0));
        }
        *new.meta() = moved;
        Ok(new)
    }
    /// The edge a gradient for this tensor flows along: its grad_fn, or its
    /// AccumulateGrad if it is a leaf that requires grad.
    pub fn gradient_edge(&self) -> Option<Edge> {
        let mut m = self.meta();
        if let Some(f) = &m.grad_fn {
            return Some(Edge {
                node: f.clone(),
                input_nr: m.output_nr,
            });
        }
        if !m.requires_grad {
            return None;
        }
        if let Some(acc) = m.grad_accumulator.upgrade() {
            return Some(Edge {
                node: acc,
                input_nr: 0,
            });
        }
        let acc = AccumulateGrad::new_node(self);
        m.grad_accumulator = Arc::downgrade(&acc);
        Some(Edge {
            node: acc,
            input_nr: 0,
        })
    }
    /// The AccumulateGrad node of a leaf that requires grad, if one exists.
    pub fn grad_accumulator(&self) -> Option<Arc<Node>> {
        if !self.is_leaf() || !self.requires_grad() {
            return None;
        }
        self.gradient_edge().map(|e| e.node)
    }
    pub fn add_hook(&self, id: u64, hook: TensorHook) {
        let m = self.meta();
        match m.grad_fn.clone() {
            Some(node) => {
                let nr = m.output_nr;
                drop(m);
                node.add_tensor_pre_hook(id, nr, hook);
            }
            None => {
                drop(m);
                self.meta().hooks.push((id, hook));
            }
        }
    }
    pub fn remove_hook(&self, id: u64) -> bool {
        let mut m = self.meta();
        let before = m.hooks.len() + m.post_accumulate_hooks.len();
        m.hooks.retain(|(i, _)| *i != id);
        m.post_accumulate_hooks.retain(|(i, _)| *i != id);
        let removed = before != m.hooks.len() + m.post_accumulate_hooks.len();
        let node = m.grad_fn.clone();
        drop(m);
        removed || node.map(|n| n.remove_hook(id)).unwrap_or(false)
    }

    // ----- data access -----
    /// Reads every element in row-major order, converted to f64.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        crate::kernels::copy::to_vec_as::<f64>(self)
    }
    /// Reads every element as `T` (converting from the tensor's dtype).
    pub fn to_vec<T: Element>(&self) -> Vec<T> {
        crate::kernels::copy::to_vec_as::<T>(self)
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
        let st = self.0.storage.read();
        let o = self.0.layout.offset;
        Ok(match &*st {
            StorageData::Bool(b) => Scalar::Bool(b[o]),
            StorageData::I64(b) => Scalar::Int(b[o]),
            StorageData::F32(b) => Scalar::Float(b[o] as f64),
            StorageData::F64(b) => Scalar::Float(b[o]),
        })
    }
}
