//! Reverse-mode autograd: graph nodes, saved tensors, grad mode, the engine
//! and the `backward` / `grad` entry points.

pub mod accumulate;
pub mod anomaly;
pub mod autocast;
pub mod batched_grad;
pub mod custom;
pub mod dot;
pub mod engine;
pub mod forward;
pub mod function;
pub mod grad_mode;
pub mod gradcheck;
pub mod meta;
pub mod multi_grad_hook;
pub mod node;
pub mod profiler;
pub mod saved;
pub mod saved_hooks;

pub use accumulate::AccumulateGrad;
pub use function::{check_history_first, record, would_record, BackwardCtx, Record};
pub use grad_mode::{
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard,
    InferenceModeGuard,
};
pub use meta::{AutogradMeta, PostAccumulateHook, TensorHook, ViewCreation};
pub use node::{Backward, Edge, Node, SavedAttr};

use crate::tensor::Tensor;
use crate::{bail, Result};

/// The root gradient: the given one (checked) or ones for a scalar output.
fn root_grad(t: &Tensor, g: Option<&Tensor>, i: usize) -> Result<Tensor> {
    match g {
        Some(g) => {
            if g.shape() != t.shape() {
                bail!(
                    runtime,
                    "Mismatch in shape: grad_output[{}] has a shape of {:?} and output[{}] has a shape of {:?}.",
                    i,
                    g.shape(),
                    i,
                    t.shape()
                );
            }
            Ok(g.clone())
        }
        None => {
            if t.numel() != 1 {
                bail!(
                    runtime,
                    "grad can be implicitly created only for scalar outputs"
                );
            }
            Ok(Tensor::ones(t.shape(), t.dtype()))
        }
    }
}

fn root_edges(outputs: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<(Edge, Tensor)>> {
    if grads.len() != outputs.len() {
        bail!(
            runtime,
            "grad requires one gradient per output: got {} tensors and {} gradients",
            outputs.len(),
            grads.len()
        );
    }
    let mut roots = Vec::with_capacity(outputs.len());
    for (i, (t, g)) in outputs.iter().zip(grads).enumerate() {
        t.check_view_history()?;
        let Some(edge) = t.gradient_edge() else {
            bail!(
                runtime,
                "element {} of tensors does not require grad and does not have a grad_fn",
                i
            );
        };
        if !t.dtype().is_floating() {
            bail!(
                runtime,
                "only Tensors of floating point dtype can require gradients"
            );
        }
        roots.push((edge, root_grad(t, g.as_ref(), i)?));
    }
    Ok(roots)
}

/// `torch.autograd.backward`: accumulates into the `.grad` of leaves (or
/// only of `inputs`, when given).
pub fn backward(
    tensors: &[Tensor],
    grad_tensors: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: Option<&[Tensor]>,
) -> Result<()> {
    let roots = root_edges(tensors, grad_tensors)?;
    let keep_graph = retain_graph.unwrap_or(create_graph);
    match inputs {
        None => {
            engine::execute(engine::Request {
                roots,
                keep_graph,
                create_graph,
                capture: Vec::new(),
                run_all: true,
                run_targets: Vec::new(),
            })?;
        }
        Some(inputs) => {
            if inputs.is_empty() {
                bail!(
                    runtime,
                    "`inputs` argument to `backward()` cannot be empty."
                );
            }
            // As torch: every input retains its grad (a no-op for leaves; a
            // non-leaf's retain_grad hook fills its `.grad` when the engine
            // reaches its node, which the capture below makes it do).
            let mut capture = Vec::new();
            let mut run_targets = Vec::new();
            for t in inputs {
                t.check_view_history()?;
                t.retain_grad()?;
                let Some(edge) = t.gradient_edge() else {
                    if t.requires_grad() {
                        // a view made under no_grad of a leaf: it requires
                        // grad through its base but has no edge of its own,
                        // so it is unreachable (torch: nothing accumulates)
                        continue;
                    }
                    bail!(
                        runtime,
                        "One of the differentiated Tensors does not require grad"
                    );
                };
                if t.is_leaf() {
                    run_targets.push(edge.node);
                } else {
                    capture.push(edge);
                }
            }
            engine::execute(engine::Request {
                roots,
                keep_graph,
                create_graph,
                capture,
                run_all: false,
                run_targets,
            })?;
        }
    }
    Ok(())
}

/// `torch.autograd.grad`: returns d(outputs)/d(inputs) without touching `.grad`.
#[allow(clippy::too_many_arguments)]
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> Result<Vec<Option<Tensor>>> {
    if inputs.is_empty() {
        bail!(runtime, "`inputs` argument to `grad()` cannot be empty.");
    }
    let roots = root_edges(outputs, grad_outputs)?;
    let mut capture = Vec::with_capacity(inputs.len());
    // the index in `capture` of each input's edge; None for an input that
    // requires grad without an edge (a view made under no_grad of a leaf):
    // unreachable, as torch's "Autograd Unreachable Input"
    let mut slot = Vec::with_capacity(inputs.len());
    for t in inputs {
        t.check_view_history()?;
        match t.gradient_edge() {
            Some(e) => {
                slot.push(Some(capture.len()));
                capture.push(e);
            }
            None if t.requires_grad() => slot.push(None),
            None => bail!(
                runtime,
                "One of the differentiated Tensors does not require grad"
            ),
        }
    }
    let keep_graph = retain_graph.unwrap_or(create_graph);
    let grads = engine::execute(engine::Request {
        roots,
        keep_graph,
        create_graph,
        capture,
        run_all: false,
        run_targets: Vec::new(),
    })?;
    let allow_unused = allow_unused || materialize_grads;
    let mut grads: Vec<Option<Tensor>> = grads;
    slot.iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (s, t))| match s.and_then(|s| grads[s].take()) {
            Some(g) => Ok(Some(g)),
            None if materialize_grads => Ok(Some(t.zeros_like())),
            None if allow_unused => Ok(None),
            None => Err(crate::Error::runtime(format!(
                "The differentiated Tensor at index {i} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
            ))),
        })
        .collect()
}

impl Tensor {
    /// `tensor.backward(gradient, retain_graph, create_graph)`.
    pub fn backward(&self) -> Result<()> {
        backward(std::slice::from_ref(self), &[None], None, false, None)
    }
    pub fn backward_with(
        &self,
        gradient: Option<Tensor>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> Result<()> {
        backward(
            std::slice::from_ref(self),
            &[gradient],
            retain_graph,
            create_graph,
            None,
        )
    }
}
