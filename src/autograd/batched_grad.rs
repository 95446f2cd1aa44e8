//! `autograd.grad(..., is_grads_batched=True)`: every grad_output carries a
//! leading batch dim; the result for each input is the stack over the batch
//! of the vector-Jacobian products. The engine runs once per batch entry on
//! the same graph (kept alive until the last entry); no batching rules are
//! used, so this costs what a loop over the rows costs, without Python.

use crate::{Result, Tensor};

/// `grad` with `grad_outputs[i]` of shape `(B, *outputs[i].shape)` (None
/// entries are passed through unbatched; with none batched, plain `grad`). Returns, per input, `(B,
/// *input.shape)` or None where the input is unused.
pub fn grad_batched(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
    materialize_grads: bool,
) -> Result<Vec<Option<Tensor>>> {
    let mut batch: Option<usize> = None;
    for (i, (g, out)) in grad_outputs.iter().zip(outputs).enumerate() {
        let Some(g) = g else { continue };
        if g.ndim() == 0 {
            crate::bail!(
                index,
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or \
                 `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            );
        }
        if &g.shape()[1..] != out.shape() {
            crate::bail!(
                runtime,
                "If `is_grads_batched=True`, we interpret the first dimension of each \
                 grad_output as the batch dimension. The sizes of the remaining dimensions \
                 are expected to match the shape of corresponding output, but a mismatch \
                 was detected: grad_output[{i}] has a shape of ferrograd.Size({:?}) and \
                 output[{i}] has a shape of ferrograd.Size({:?}). If you only want some \
                 tensors in `grad_output` to be considered batched, consider using vmap.",
                &g.shape()[1..],
                out.shape()
            );
        }
        let b = g.shape()[0];
        match batch {
            Some(prev) if prev != b => crate::bail!(
                value,
                "vmap: Expected all tensors to have the same size in the mapped dimension, \
                 got sizes [{prev}, {b}] for the mapped dimension"
            ),
            _ => batch = Some(b),
        }
    }
    let Some(batch) = batch else {
        // Nothing batched: implicit grad_outputs only (torch's errors).
        return crate::autograd::grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        );
    };
    if batch == 0 {
        crate::bail!(
            index,
            "index 0 is out of bounds for dimension 0 with size 0"
        );
    }
    let mut rows: Vec<Vec<Option<Tensor>>> = Vec::with_capacity(batch);
    for b in 0..batch {
        let slice: Vec<Option<Tensor>> = grad_outputs
            .iter()
            .map(|g| g.as_ref().map(|g| g.select(0, b as i64)).transpose())
            .collect::<Result<_>>()?;
        let last = b + 1 == batch;
        let retain = if last { retain_graph } else { Some(true) };
        rows.push(crate::autograd::grad(
            outputs,
            inputs,
            &slice,
            retain,
            create_graph,
            allow_unused,
            materialize_grads,
        )?);
    }
    let mut result = Vec::with_capacity(inputs.len());
    for i in 0..inputs.len() {
        let col: Vec<Tensor> = rows.iter().filter_map(|r| r[i].clone()).collect();
        if col.len() == batch {
            result.push(Some(Tensor::stack(&col, 0)?));
        } else {
            result.push(None);
        }
    }
    Ok(result)
}
