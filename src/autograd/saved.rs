//! Tensors saved for backward, checked against their version on unpack.

use super::node::Node;
use crate::tensor::Tensor;
use crate::{bail, Result};
use std::sync::Weak;

pub struct SavedTensor {
    /// The saved value. For an op's own output this is a detached alias, so
    /// the node does not own itself through it.
    data: Tensor,
    saved_version: u64,
    /// Set when `data` is an output of the saving node: unpacking re-attaches
    /// that node (if it is still alive) as the grad_fn.
    output_of: Option<(Weak<Node>, usize)>,
    /// Name of the saving node, for the error message once it is gone.
    saved_by: &'static str,
}

impl SavedTensor {
    /// Saves an input (or any tensor that is not the saving node's output).
    pub fn input(t: &Tensor, saved_by: &'static str) -> SavedTensor {
        SavedTensor {
            data: t.clone(),
            saved_version: t.version(),
            output_of: None,
            saved_by,
        }
    }
    /// Saves output `output_nr` of `node` without a strong cycle.
    pub fn output(
        t: &Tensor,
        node: Weak<Node>,
        output_nr: usize,
        saved_by: &'static str,
    ) -> SavedTensor {
        SavedTensor {
            data: t.detach(),
            saved_version: t.version(),
            output_of: Some((node, output_nr)),
            saved_by,
        }
    }
    pub fn saved_version(&self) -> u64 {
        self.saved_version
    }

    /// The saved tensor, failing with torch's message if it was modified in
    /// place since it was saved.
    pub fn unpack(&self) -> Result<Tensor> {
        let now = self.data.version();
        if now != self.saved_version {
            let shape: Vec<String> = self.data.shape().iter().map(|d| d.to_string()).collect();
            // torch names the producing op without its `Backward<N>` suffix.
            let short = |name: &str| match name.rfind("Backward") {
                Some(i) if name[i + 8..].bytes().all(|b| b.is_ascii_digit()) => {
                    name[..i].to_string()
                }
                _ => name.to_string(),
            };
            let producer = match &self.output_of {
                Some((n, nr)) => match n.upgrade() {
                    Some(n) => format!(", which is output {} of {},", nr, short(&n.name())),
                    None => format!(", which is output {} of {},", nr, short(self.saved_by)),
                },
                None => match self.data.grad_fn() {
                    Some(f) => format!(
                        ", which is output {} of {},",
                        self.data.output_nr(),
                        short(&f.name())
                    ),
                    None => String::new(),
                },
            };
            bail!(
                runtime,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} [{}]]{} is at version {}; expected version {} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).",
                match self.data.dtype() {
                    crate::tensor::DType::F32 => "torch.FloatTensor",
                    crate::tensor::DType::F64 => "torch.DoubleTensor",
                    crate::tensor::DType::I64 => "torch.LongTensor",
                    crate::tensor::DType::Bool => "torch.BoolTensor",
                },
                shape.join(", "),
                producer,
                now,
                self.saved_version
            );
        }
        match &self.output_of {
            Some((node, nr)) => match node.upgrade() {
                Some(node) => {
                    let t = self.data.detach();
                    t.copy_fw_grads_from(&self.data);
                    t.set_history(node, *nr);
                    Ok(t)
                }
                None => Ok(self.data.clone()),
            },
            None => Ok(self.data.clone()),
        }
    }
}

/// The list of tensors one node saved, released after backward.
pub struct SavedList {
    inner: parking_lot::Mutex<Option<Vec<SavedTensor>>>,
}

pub const FREED_MSG: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

impl SavedList {
    pub fn new(v: Vec<SavedTensor>) -> Self {
        SavedList {
            inner: parking_lot::Mutex::new(Some(v)),
        }
    }
    pub fn len(&self) -> usize {
        self.inner.lock().as_ref().map_or(0, |v| v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn unpack(&self, i: usize) -> Result<Tensor> {
        match &*self.inner.lock() {
            Some(v) => v[i].unpack(),
            None => Err(crate::Error::runtime(FREED_MSG)),
        }
    }
    /// True when a saved tensor requires grad (its uses are differentiable).
    pub fn any_requires_grad(&self) -> bool {
        self.inner.lock().as_ref().is_some_and(|v| {
            v.iter()
                .any(|s| s.data.requires_grad() || s.output_of.is_some())
        })
    }
    /// Gives the saved copies of output `output_nr` the tangent `t` at
    /// `level` (forward-over-reverse sees the output's tangent).
    pub(crate) fn set_output_fw_grad(&self, output_nr: usize, level: u64, t: &Tensor) {
        if let Some(v) = self.inner.lock().as_ref() {
            for s in v {
                if matches!(&s.output_of, Some((_, nr)) if *nr == output_nr) {
                    s.data.store_fw_grad(level, t.clone());
                }
            }
        }
    }
    pub fn release(&self) {
        let taken = self.inner.lock().take();
        drop(taken);
    }
    pub fn is_released(&self) -> bool {
        self.inner.lock().is_none()
    }
}
