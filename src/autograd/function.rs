//! Recording built-in ops into the graph. An op computes its result without
//! history, then states its derivative once, here:
//!
//! ```ignore
//! let rec = record("MulBackward0", &[a, b]);
//! let out = kernels::binary(a, b, Mul)?;
//! rec.save("self", a).save("other", b)
//!     .finish(out, |c| Ok(vec![Some(c.grad().mul(&c.saved(1)?)?), Some(c.grad().mul(&c.saved(0)?)?)]))
//! ```
//!
//! `record` is called at the op's entry, before its kernel: while the
//! profiler is on, the op's event spans from `record` to `finish` (or to
//! the drop of the [`Record`] when the op fails). `finish` fails with the
//! error a saved-tensor `pack` hook raised, and then attaches nothing.
//!
//! The backward closure is written in ferrograd ops, so with
//! `create_graph=True` it records a graph of its own (double backward).
//! Gradients may be returned in the broadcast shape: the engine sums them
//! to each input's shape and casts them to its dtype.

use super::forward;
use super::grad_mode::is_grad_enabled;
use super::meta::ViewCreation;
use super::node::{Backward, Edge, InputMeta, Node, SavedAttr};
use super::saved::{SavedList, SavedTensor};
use crate::tensor::Tensor;
use crate::Result;
use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

/// What a backward closure sees.
pub struct BackwardCtx<'a> {
    grads: &'a [Option<Tensor>],
    saved: &'a SavedList,
    /// Which inputs need a gradient.
    needs: &'a [bool],
}

impl<'a> BackwardCtx<'a> {
    pub(crate) fn new(
        grads: &'a [Option<Tensor>],
        saved: &'a SavedList,
        needs: &'a [bool],
    ) -> Self {
        BackwardCtx {
            grads,
            saved,
            needs,
        }
    }
    /// The gradient of output 0.
    pub fn grad(&self) -> &Tensor {
        self.grads[0].as_ref().expect("materialized")
    }
    /// The gradient of output `i`.
    pub fn grad_of(&self, i: usize) -> &Tensor {
        self.grads[i].as_ref().expect("materialized")
    }
    /// Saved tensor `i` (in `save` order), version checked.
    pub fn saved(&self, i: usize) -> Result<Tensor> {
        self.saved.unpack(i)
    }
    /// Whether input `i` needs a gradient (torch's needs_input_grad).
    pub fn needs(&self, i: usize) -> bool {
        self.needs[i]
    }
    /// `f()`, input `i`'s gradient, when that input needs one; else None
    /// (and `f` does not run).
    pub fn grad_for(&self, i: usize, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
        if self.needs[i] {
            f().map(Some)
        } else {
            Ok(None)
        }
    }
}

pub(crate) type BackwardFn = dyn Fn(&BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// A built-in op's node: a name, its saved tensors and its derivative.
pub struct FnBackward {
    name: &'static str,
    saved_names: Vec<&'static str>,
    attrs: Vec<(&'static str, SavedAttr)>,
    saved: SavedList,
    f: Box<BackwardFn>,
}

impl Backward for FnBackward {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.name)
    }
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // No gradient at all flows through (a hook dropped it): as torch's
        // formulas do, return undefined gradients.
        if grads.iter().all(Option::is_none) {
            return Ok(vec![None; node.next_edges().len()]);
        }
        // Built-in formulas expect defined gradients: materialize zeros.
        let grads: Vec<Option<Tensor>> = grads
            .into_iter()
            .zip(node.input_meta())
            .map(|(g, m)| Some(g.unwrap_or_else(|| Tensor::zeros(&m.shape, m.dtype))))
            .collect();
        let _prefetched = self.saved.prefetch();
        let needs: Vec<bool> = node.next_edges().iter().map(Option::is_some).collect();
        let ctx = BackwardCtx::new(&grads, &self.saved, &needs);
        let mut out = (self.f)(&ctx)?;
        // Drop gradients nobody asked for.
        for (g, e) in out.iter_mut().zip(node.next_edges()) {
            if e.is_none() {
                *g = None;
            }
        }
        Ok(out)
    }
    fn release_saved(&self) {
        self.saved.release();
    }
    fn saved_names(&self) -> Vec<&'static str> {
        self.saved_names.clone()
    }
    fn saved(&self, name: &str, _node: &Node) -> Option<Result<Tensor>> {
        let i = self.saved_names.iter().position(|n| *n == name)?;
        Some(self.saved.unpack(i))
    }
    fn saved_attrs(&self) -> &[(&'static str, SavedAttr)] {
        &self.attrs
    }
    fn saved_ranges(&self, out: &mut Vec<(usize, usize)>) {
        self.saved.ranges(out)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

enum ToSave {
    Input(Tensor),
    Output(usize),
}

/// Builder returned by [`record`].
pub struct Record {
    name: &'static str,
    edges: Option<Vec<Option<Edge>>>,
    to_save: Vec<(&'static str, ToSave)>,
    /// Non-tensor arguments kept for inspection (`_saved_<name>`).
    attrs: Vec<(&'static str, SavedAttr)>,
    /// Forward AD: the inputs and their tangents per level, when any.
    fw: Option<(Vec<Tensor>, forward::LevelTangents)>,
    /// The first input's view restriction, which views of it inherit.
    parent_view: Option<ViewCreation>,
    /// torch's error for an input whose history is a view's that may not be
    /// rebuilt ([`Tensor::check_view_history`]): torch raises it while
    /// collecting the op's edges; here `finish` returns it.
    error: Option<crate::Error>,
    _prof: Option<super::profiler::RangeGuard>,
}

/// torch's VariableType reads every input's `grad_fn` (collecting the op's
/// edges) before the kernel checks its arguments, so a view whose history
/// may not be rebuilt ([`Tensor::check_view_history`]) raises its error
/// before an invalid argument's. An op that validates its arguments before
/// calling [`record`] calls this first (torch's composite ops, which check
/// before dispatching, e.g. `flatten`/`narrow`/`movedim`, do not). Costs one
/// pointer test per input that is not a view.
pub fn check_history_first(inputs: &[&Tensor]) -> crate::Result<()> {
    if inputs.iter().any(|t| t.is_view())
        && is_grad_enabled()
        && inputs.iter().any(|t| t.requires_grad())
    {
        for t in inputs {
            t.check_view_history()?;
        }
    }
    Ok(())
}

/// True when an op over `inputs` would be recorded ([`Record::active`]):
/// grad mode is on and an input requires grad, or an input has a forward
/// tangent. Ops that have a faster kernel for values alone ask this first.
pub fn would_record(inputs: &[&Tensor]) -> bool {
    (is_grad_enabled() && inputs.iter().any(|t| t.requires_grad()))
        || forward::input_tangents(inputs).is_some()
}

/// Starts recording op `name` over `inputs`; call it before the op's kernel.
/// Inert (no node, nothing saved) when grad mode is off or no input
/// requires grad; the profiler range still opens while a session is on.
pub fn record(name: &'static str, inputs: &[&Tensor]) -> Record {
    let _prof = super::profiler::op_range(name, inputs);
    let mut error = None;
    let edges = if is_grad_enabled() && inputs.iter().any(|t| t.requires_grad()) {
        error = inputs.iter().find_map(|t| t.check_view_history().err());
        Some(inputs.iter().map(|t| t.gradient_edge()).collect())
    } else {
        None
    };
    let fw =
        forward::input_tangents(inputs).map(|t| (inputs.iter().map(|&x| x.clone()).collect(), t));
    let parent_view = inputs
        .first()
        .filter(|t| t.is_view())
        .and_then(|t| t.view_creation());
    Record {
        name,
        edges,
        to_save: Vec::new(),
        attrs: Vec::new(),
        fw,
        parent_view,
        error,
        _prof,
    }
}

impl Record {
    /// True when the op will be recorded (use to skip work only backward needs).
    pub fn active(&self) -> bool {
        self.edges.is_some() || self.fw.is_some()
    }
    pub fn save(mut self, name: &'static str, t: &Tensor) -> Self {
        if self.active() {
            self.to_save.push((name, ToSave::Input(t.clone())));
        }
        self
    }
    /// Keeps a non-tensor argument of the call, shown as torch's
    /// `_saved_<name>` on the node (nothing when not recorded).
    pub fn attr(mut self, name: &'static str, value: impl Into<SavedAttr>) -> Self {
        if self.edges.is_some() {
            self.attrs.push((name, value.into()));
        }
        self
    }
    /// Saves forward output `i` (without a reference cycle).
    pub fn save_output(mut self, name: &'static str, i: usize) -> Self {
        if self.active() {
            self.to_save.push((name, ToSave::Output(i)));
        }
        self
    }
    /// Attaches the node to the single output and returns it.
    pub fn finish<F>(self, out: Tensor, f: F) -> Result<Tensor>
    where
        F: Fn(&BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    {
        Ok(self.attach(vec![out], f, false)?.pop().unwrap())
    }
    /// Attaches the node to every output (output i gets output_nr i). Fails,
    /// attaching nothing, when a saved-tensor `pack` hook raises. Outputs
    /// that are views are views of a multi-output op (`unbind`, `split`):
    /// autograd refuses in-place ops on them.
    pub fn finish_many<F>(self, outs: Vec<Tensor>, f: F) -> Result<Vec<Tensor>>
    where
        F: Fn(&BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    {
        self.attach(outs, f, true)
    }

    fn attach<F>(self, outs: Vec<Tensor>, f: F, multi_output: bool) -> Result<Vec<Tensor>>
    where
        F: Fn(&BackwardCtx) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    {
        if let Some(e) = self.error {
            return Err(e);
        }
        for t in outs.iter().filter(|t| t.is_view()) {
            t.mark_view(ViewCreation::for_new_view(self.parent_view, multi_output));
        }
        let Some(edges) = self.edges else {
            if let Some((inputs, tangents)) = self.fw {
                // Forward AD only: the derivative without a node.
                let saved = self
                    .to_save
                    .into_iter()
                    .map(|(_, s)| match s {
                        ToSave::Input(t) => SavedTensor::input(&t, self.name),
                        ToSave::Output(i) => SavedTensor::input(&outs[i], self.name),
                    })
                    .collect();
                let saved = SavedList::new(saved);
                check_packed(&saved)?;
                if let Err(e) = forward::propagate(&f, &saved, &inputs, &outs, tangents) {
                    forward::report_error(e);
                }
            }
            return Ok(outs);
        };
        for (_, s) in &self.to_save {
            if let ToSave::Input(t) = s {
                super::saved::check_saveable(t)?;
            }
        }
        let fw = self.fw;
        let input_meta = outs
            .iter()
            .map(|t| InputMeta {
                shape: t.dims(),
                dtype: t.dtype(),
            })
            .collect();
        let name = self.name;
        let saved_names = self.to_save.iter().map(|(n, _)| *n).collect();
        let to_save = self.to_save;
        let attrs = self.attrs;
        let node = Arc::new_cyclic(|weak| {
            let saved = to_save
                .into_iter()
                .map(|(_, s)| match s {
                    ToSave::Input(t) => SavedTensor::input(&t, name),
                    ToSave::Output(i) => SavedTensor::output(&outs[i], weak.clone(), i, name),
                })
                .collect();
            Node::new(
                Box::new(FnBackward {
                    name,
                    saved_names,
                    attrs,
                    saved: SavedList::new(saved),
                    f: Box::new(f),
                }),
                edges,
                input_meta,
            )
        });
        {
            let b = node.backward().as_any().downcast_ref::<FnBackward>();
            check_packed(&b.expect("recorded nodes are FnBackward").saved)?;
        }
        for (i, t) in outs.iter().enumerate() {
            t.set_history(node.clone(), i);
        }
        if let Some((inputs, tangents)) = fw {
            let b = node.backward().as_any().downcast_ref::<FnBackward>();
            let b = b.expect("recorded nodes are FnBackward");
            if let Err(e) = forward::propagate(&b.f, &b.saved, &inputs, &outs, tangents) {
                forward::report_error(e);
            }
        }
        Ok(outs)
    }
}

/// The error a `pack` hook raised while `saved` was built, if any (cleared
/// from the thread's pending pack error: the op raises it itself).
fn check_packed(saved: &SavedList) -> Result<()> {
    if let Some(e) = saved.pack_error() {
        super::saved_hooks::take_pack_error();
        return Err(e);
    }
    Ok(())
}
