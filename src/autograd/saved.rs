//! Tensors saved for backward, checked against their version on unpack.

use super::node::Node;
use super::saved_hooks::{current_hooks, set_pack_error, Packed, SavedTensorHooks};
use crate::tensor::{DType, Tensor, VersionCounter};
use crate::Result;
use std::sync::{Arc, Weak};

/// Where the saved value lives.
enum Value {
    /// Kept as is (no hooks were set at save time).
    Plain(Tensor),
    /// Given to `hooks.pack`; `unpack` gives it back.
    Packed {
        hooks: Arc<dyn SavedTensorHooks>,
        packed: Packed,
    },
    /// `pack` failed: the error is raised again on unpack.
    PackFailed(crate::Error),
}

pub struct SavedTensor {
    /// The saved value. For an op's own output this is a detached alias, so
    /// the node does not own itself through it.
    value: Value,
    /// The original tensor's version counter and its version at save time.
    version: Arc<VersionCounter>,
    saved_version: u64,
    shape: Vec<usize>,
    dtype: DType,
    /// Set when `data` is an output of the saving node: unpacking re-attaches
    /// that node (if it is still alive) as the grad_fn.
    output_of: Option<(Weak<Node>, usize)>,
    /// For a packed input: its gradient edge at save time (grad_fn and
    /// output_nr, or the AccumulateGrad of a leaf) so that the unpacked
    /// tensor keeps the original's autograd identity (double backward).
    input_edge: Option<(Arc<Node>, usize, bool)>,
    /// Name of the saving node, for the error message once it is gone.
    saved_by: &'static str,
    /// A plain saved input that had a grad_fn when saved (torch's
    /// `!is_leaf_`): unpacking refuses it once `detach_()` took that away.
    had_grad_fn: bool,
}

/// torch's refusal to save an inference tensor for backward.
pub fn check_saveable(t: &Tensor) -> Result<()> {
    if t.is_inference() {
        crate::bail!(runtime, "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.");
    }
    Ok(())
}

impl SavedTensor {
    fn make(
        t: &Tensor,
        data: Tensor,
        output_of: Option<(Weak<Node>, usize)>,
        saved_by: &'static str,
    ) -> SavedTensor {
        let saved_version = t.version();
        let had_grad_fn = output_of.is_none() && !t.is_leaf();
        let (value, input_edge) = match current_hooks() {
            None => (Value::Plain(data), None),
            Some(hooks) => {
                let edge = if output_of.is_none() {
                    let leaf = t.is_leaf();
                    t.gradient_edge().map(|e| (e.node, e.input_nr, leaf))
                } else {
                    None
                };
                let value = match hooks.pack(&data) {
                    Ok(packed) if t.version() != saved_version => {
                        drop(packed);
                        let e = crate::Error::runtime(PACK_INPLACE_MSG);
                        set_pack_error(e.clone());
                        Value::PackFailed(e)
                    }
                    Ok(packed) => Value::Packed { hooks, packed },
                    Err(e) => {
                        set_pack_error(e.clone());
                        Value::PackFailed(e)
                    }
                };
                (value, edge)
            }
        };
        SavedTensor {
            value,
            version: t.version_counter().clone(),
            saved_version,
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            output_of,
            input_edge,
            saved_by,
            had_grad_fn,
        }
    }
    /// Saves an input (or any tensor that is not the saving node's output).
    pub fn input(t: &Tensor, saved_by: &'static str) -> SavedTensor {
        Self::make(t, t.clone(), None, saved_by)
    }
    /// Saves output `output_nr` of `node` without a strong cycle.
    pub fn output(
        t: &Tensor,
        node: Weak<Node>,
        output_nr: usize,
        saved_by: &'static str,
    ) -> SavedTensor {
        Self::make(t, t.detach(), Some((node, output_nr)), saved_by)
    }
    pub fn saved_version(&self) -> u64 {
        self.saved_version
    }
    /// The error `pack` raised at save time, if it failed (see
    /// [`take_pack_error`]).
    pub fn pack_error(&self) -> Option<&crate::Error> {
        match &self.value {
            Value::PackFailed(e) => Some(e),
            _ => None,
        }
    }

    fn version_error(&self, now: u64) -> crate::Error {
        let shape: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        // torch names the producing op without its `Backward<N>` suffix.
        let short = |name: &str| match name.rfind("Backward") {
            Some(i) if name[i + 8..].bytes().all(|b| b.is_ascii_digit()) => name[..i].to_string(),
            _ => name.to_string(),
        };
        let producer = match &self.output_of {
            Some((n, nr)) => match n.upgrade() {
                Some(n) => format!(", which is output {} of {},", nr, short(&n.name())),
                None => format!(", which is output {} of {},", nr, short(self.saved_by)),
            },
            None => {
                let f = match &self.value {
                    Value::Plain(d) => d.grad_fn().map(|f| (f, d.output_nr())),
                    _ => self
                        .input_edge
                        .as_ref()
                        .filter(|(_, _, leaf)| !leaf)
                        .map(|(n, nr, _)| (n.clone(), *nr)),
                };
                match f {
                    Some((f, nr)) => format!(", which is output {} of {},", nr, short(&f.name())),
                    None => String::new(),
                }
            }
        };
        // Beyond torch: which in-place op made the current version, and
        // (anomaly mode on when it ran) where it was called.
        let (culprit, stack) = match self.version.last_write() {
            Some(w) if w.version == now => {
                let count = match now.checked_sub(self.saved_version) {
                    Some(1) => String::new(),
                    Some(n) => format!(
                        " (the last of {} in-place modifications since it was saved)",
                        n
                    ),
                    None => String::new(),
                };
                let at = match w.trace.as_ref().and_then(super::anomaly::describe) {
                    Some(stack) => format!("\n{} was called at:\n{}", w.op, stack.trim_end()),
                    None => String::new(),
                };
                (
                    format!(" It was modified in place by {}{}.", w.op, count),
                    at,
                )
            }
            _ => (String::new(), String::new()),
        };
        crate::Error::runtime(format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [torch.{} [{}]]{} is at version {}; expected version {} instead.{} Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).{}",
            self.dtype.legacy_tensor_name(),
            shape.join(", "),
            producer,
            now,
            self.saved_version,
            culprit,
            stack
        ))
    }

    /// The saved tensor, failing with torch's message if it was modified in
    /// place since it was saved. With hooks, calls `unpack` (its errors
    /// propagate unchanged).
    pub fn unpack(&self) -> Result<Tensor> {
        self.unpack_checked(true)
    }

    /// [`Self::unpack`] for a custom Function's `saved_tensors`: torch
    /// refuses a tensor detached in place since it was saved only where it
    /// unpacks without the node it was saved for, which a custom Function's
    /// ctx always passes, so this gives the detached tensor.
    pub fn unpack_for_ctx(&self) -> Result<Tensor> {
        self.unpack_checked(false)
    }

    fn unpack_checked(&self, refuse_detached: bool) -> Result<Tensor> {
        let check = match &self.value {
            Value::Packed { hooks, .. } => hooks.checks_version(),
            _ => true,
        };
        if let Value::Plain(d) = &self.value {
            // torch's SavedVariable::unpack: an input saved with a grad_fn
            // whose grad_fn is gone (detach_() cleared it)
            if refuse_detached && self.had_grad_fn && d.is_leaf() {
                return Err(crate::Error::runtime(DETACHED_MSG));
            }
        }
        let now = self.version.get();
        if check && now != self.saved_version {
            return Err(self.version_error(now));
        }
        let data = match &self.value {
            Value::Plain(d) => d.clone(),
            Value::PackFailed(e) => return Err(e.clone()),
            Value::Packed { hooks, packed } => {
                let t = hooks.unpack(packed)?;
                // The unpacked tensor takes the original's autograd identity.
                match (&self.output_of, &self.input_edge) {
                    (None, Some((node, nr, leaf))) => {
                        let t = t.detach();
                        if *leaf {
                            let mut m = t.meta();
                            m.requires_grad = true;
                            m.grad_accumulator = Arc::downgrade(node);
                            drop(m);
                        } else {
                            t.set_history(node.clone(), *nr);
                        }
                        return Ok(t);
                    }
                    (None, None) => return Ok(t),
                    (Some(_), _) => t,
                }
            }
        };
        match &self.output_of {
            Some((node, nr)) => match node.upgrade() {
                Some(node) => {
                    let t = data.detach();
                    t.copy_fw_grads_from(&data);
                    t.set_history(node, *nr);
                    Ok(t)
                }
                None => Ok(data),
            },
            None => Ok(data),
        }
    }
}

pub const DETACHED_MSG: &str = "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is not supported, please use out-of-place `.detach()` instead";

pub const PACK_INPLACE_MSG: &str = "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook.";

/// The list of tensors one node saved, released after backward.
pub struct SavedList {
    inner: parking_lot::Mutex<Option<Vec<SavedTensor>>>,
    /// Values unpacked by [`SavedList::prefetch`] for the running backward.
    batch: parking_lot::Mutex<Option<Vec<Result<Tensor>>>>,
}

pub const FREED_MSG: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// Ends a [`SavedList::prefetch`] batch when dropped.
pub struct Prefetched<'a>(Option<&'a SavedList>);

impl Drop for Prefetched<'_> {
    fn drop(&mut self) {
        if let Some(l) = self.0 {
            l.batch.lock().take();
        }
    }
}

impl SavedList {
    pub fn new(v: Vec<SavedTensor>) -> Self {
        SavedList {
            inner: parking_lot::Mutex::new(Some(v)),
            batch: parking_lot::Mutex::new(None),
        }
    }
    pub fn len(&self) -> usize {
        self.inner.lock().as_ref().map_or(0, |v| v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first error a `pack` hook raised while these were saved.
    pub fn pack_error(&self) -> Option<crate::Error> {
        let inner = self.inner.lock();
        inner.as_ref()?.iter().find_map(|s| s.pack_error().cloned())
    }
    /// When saved-tensor hooks packed any of the tensors: unpacks all of
    /// them now, in save order (the documented, stable unpack order), for
    /// the backward that runs while the returned guard lives. Errors are
    /// kept per tensor and raised by the `unpack` that asks for it.
    pub fn prefetch(&self) -> Prefetched<'_> {
        let inner = self.inner.lock();
        let Some(v) = inner.as_ref() else {
            return Prefetched(None);
        };
        if !v.iter().any(|s| !matches!(s.value, Value::Plain(_))) {
            return Prefetched(None);
        }
        let vals = v.iter().map(SavedTensor::unpack).collect();
        drop(inner);
        *self.batch.lock() = Some(vals);
        Prefetched(Some(self))
    }
    pub fn unpack(&self, i: usize) -> Result<Tensor> {
        if let Some(b) = &*self.batch.lock() {
            return b[i].clone();
        }
        match &*self.inner.lock() {
            Some(v) => v[i].unpack(),
            None => Err(crate::Error::runtime(FREED_MSG)),
        }
    }
    /// True when a saved tensor requires grad (its uses are differentiable).
    pub fn any_requires_grad(&self) -> bool {
        self.inner.lock().as_ref().is_some_and(|v| {
            v.iter().any(|s| {
                s.output_of.is_some()
                    || s.input_edge.is_some()
                    || matches!(&s.value, Value::Plain(t) if t.requires_grad())
            })
        })
    }
    /// Gives the saved copies of output `output_nr` the tangent `t` at
    /// `level` (forward-over-reverse sees the output's tangent).
    pub(crate) fn set_output_fw_grad(&self, output_nr: usize, level: u64, t: &Tensor) {
        if let Some(v) = self.inner.lock().as_ref() {
            for s in v {
                if matches!(&s.output_of, Some((_, nr)) if *nr == output_nr) {
                    if let Value::Plain(data) = &s.value {
                        data.store_fw_grad(level, t.clone());
                    }
                }
            }
        }
    }
    /// Byte ranges of the contiguous tensors saved as they are (not packed
    /// by hooks, not released yet), in save order.
    pub fn ranges(&self, out: &mut Vec<(usize, usize)>) {
        if let Some(v) = self.inner.lock().as_ref() {
            for s in v {
                if let Value::Plain(t) = &s.value {
                    if t.is_contiguous() {
                        let start = t.data_ptr();
                        out.push((start, start + t.numel() * t.dtype().itemsize()));
                    }
                }
            }
        }
    }
    pub fn release(&self) {
        let taken = self.inner.lock().take();
        drop(taken);
        self.batch.lock().take();
    }
    pub fn is_released(&self) -> bool {
        self.inner.lock().is_none()
    }
}
