//! `autograd.grad(..., is_grads_batched=True)`: every grad_output carries a
//! leading batch dim; the result for each input is the stack over the batch
//! of the vector-Jacobian products. The engine runs once per batch entry on
//! the same graph (kept alive until the last entry); no batching rules are
//! used, so this costs what a loop over the rows costs, without Python.

use crate::{Result, Tensor};

/// `grad` with `grad_outputs[i]` of shape `(B, *outputs[i].shape)` (None
/// entries are passed through unbatched). Returns, per input, `(B,
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
    for g in grad_outputs.iter().flatten() {
        if g.ndim() == 0 {
            crate::bail!(
                runtime,
                "vmap: Expected all tensors to have a batch dim with is_grads_batched=True, \
                 got a 0-dim grad_output"
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
        crate::bail!(
            runtime,
            "is_grads_batched=True expects at least one grad_output with a batch dim"
        );
    };
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
    for (i, input) in inputs.iter().enumerate() {
        let col: Vec<Tensor> = rows.iter().filter_map(|r| r[i].clone()).collect();
        if batch == 0 {
            let mut shape = vec![0];
            shape.extend_from_slice(input.shape());
            result.push(Some(Tensor::zeros(&shape, input.dtype())));
        } else if col.len() == batch {
            result.push(Some(Tensor::stack(&col, 0)?));
        } else {
            result.push(None);
        }
    }
    Ok(result)
}
