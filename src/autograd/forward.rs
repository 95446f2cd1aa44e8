//! Forward-mode AD (torch's `autograd.forward_ad`): dual levels and the
//! tangents tensors carry at each level.
//!
//! A tangent is stored on the tensor (`AutogradMeta::fw_grads`), keyed by a
//! level id, and always has its primal's shape and strides, so a view's
//! tangent is the same view of its base's tangent (they share memory, and an
//! in-place op on either side is seen by the other).
//!
//! Tangents of op outputs are derived from the op's stated derivative (the
//! backward closure recorded by [`super::record`]): a vjp `g -> J^T g` is
//! linear in `g`, so `J t` is the gradient of `<J^T g, t>` with respect to
//! `g`. Each op's derivative is thus stated once and serves both modes; the
//! jvp is computed with the ops' own (differentiable) formulas, so tangents
//! carry a graph when grad mode is on (forward-over-reverse works).
//!
//! Cost when no level is open: one atomic load per recorded op.

use super::function::{BackwardCtx, BackwardFn};
use super::grad_mode::{is_grad_enabled, GradModeGuard};
use super::saved::SavedList;
use crate::tensor::{Layout, Tensor, TensorImpl};
use crate::{bail, Result};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Weak;

/// Number of open dual levels (the fast "is forward AD on" check).
static OPEN: AtomicUsize = AtomicUsize::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// An open level: its unique id and the tensors given a tangent at it (their
/// tangents are dropped when the level exits).
struct Level {
    id: u64,
    holders: Vec<Weak<TensorImpl>>,
}

static LEVELS: Mutex<Vec<Level>> = Mutex::new(Vec::new());

thread_local! {
    /// The first error met while computing a tangent on this thread: ops
    /// return their primal result regardless; `unpack_dual` and
    /// `exit_dual_level` raise it.
    static PENDING: RefCell<Option<crate::Error>> = const { RefCell::new(None) };
    /// Level ids whose tangents are not propagated on this thread (while the
    /// jvp of an op at that level is being computed).
    static SUSPENDED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

pub(crate) fn report_error(e: crate::Error) {
    PENDING.with(|p| {
        p.borrow_mut().get_or_insert(e);
    });
}

/// The pending tangent error of this thread, if any (see `PENDING`).
pub fn take_error() -> Result<()> {
    match PENDING.with(|p| p.borrow_mut().take()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// True when at least one dual level is open.
#[inline]
pub fn is_active() -> bool {
    OPEN.load(Ordering::Acquire) > 0
}

/// Opens a new (innermost) level; returns its index (0 for the outermost).
pub fn enter_dual_level() -> usize {
    let mut levels = LEVELS.lock();
    levels.push(Level {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        holders: Vec::new(),
    });
    OPEN.fetch_add(1, Ordering::AcqRel);
    levels.len() - 1
}

/// Closes the innermost level (`level`, when given, must be it); every
/// tangent at that level is dropped.
pub fn exit_dual_level(level: Option<usize>) -> Result<()> {
    let pending = take_error();
    let mut levels = LEVELS.lock();
    let Some(top) = levels.len().checked_sub(1) else {
        bail!(runtime, "Trying to exit a forward AD level that was not the last one that was created. This is not supported.");
    };
    if level.is_some_and(|l| l != top) {
        bail!(runtime, "Trying to exit a forward AD level that was not the last one that was created. This is not supported.");
    }
    let gone = levels.pop().expect("checked above");
    OPEN.fetch_sub(1, Ordering::AcqRel);
    drop(levels);
    for h in gone.holders {
        if let Some(t) = h.upgrade() {
            Tensor(t).meta().fw_grads.retain(|(id, _)| *id != gone.id);
        }
    }
    pending
}

/// The id of level `index` (`None`: the innermost), or an error when no
/// such level is open.
pub fn level_id(index: Option<usize>) -> Result<u64> {
    let levels = LEVELS.lock();
    let l = match index {
        None => levels.last(),
        Some(i) => levels.get(i),
    };
    match l {
        Some(l) => Ok(l.id),
        None if levels.is_empty() => bail!(runtime, "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."),
        None => bail!(runtime, "Invalid forward AD level {}", index.unwrap_or(0)),
    }
}

/// Ids of the open levels, outermost first, minus suspended ones.
fn live_levels() -> Vec<u64> {
    let ids: Vec<u64> = LEVELS.lock().iter().map(|l| l.id).collect();
    SUSPENDED.with(|s| {
        let s = s.borrow();
        ids.into_iter().filter(|id| !s.contains(id)).collect()
    })
}

/// The levels suspended on this thread (the engine hands them to the
/// threads that run a backward started here).
pub(crate) fn suspended() -> Vec<u64> {
    if !is_active() {
        return Vec::new();
    }
    SUSPENDED.with(|s| s.borrow().clone())
}

/// Stops propagating tangents of `levels` on this thread until dropped.
pub(crate) struct Suspend(Vec<u64>);
impl Suspend {
    pub(crate) fn new(levels: Vec<u64>) -> Suspend {
        if !levels.is_empty() {
            SUSPENDED.with(|s| s.borrow_mut().extend(levels.iter().copied()));
        }
        Suspend(levels)
    }
}
impl Drop for Suspend {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        SUSPENDED.with(|s| {
            let mut s = s.borrow_mut();
            for l in &self.0 {
                if let Some(i) = s.iter().rposition(|x| x == l) {
                    s.remove(i);
                }
            }
        });
    }
}

impl Tensor {
    /// This tensor's tangent at level `level` (an id from [`level_id`]).
    pub fn fw_grad(&self, level: u64) -> Option<Tensor> {
        if !is_active() {
            return None;
        }
        self.peek_meta(|m| {
            m.fw_grads
                .iter()
                .find(|(l, _)| *l == level)
                .map(|(_, t)| t.clone())
        })
    }

    /// Sets (or, with `None`, removes) the tangent at `level`. The tangent
    /// must have this tensor's shape; it is copied into this tensor's
    /// strides when its own differ (torch's rule).
    pub fn set_fw_grad(&self, level: u64, tangent: Option<&Tensor>) -> Result<()> {
        let Some(t) = tangent else {
            self.meta().fw_grads.retain(|(l, _)| *l != level);
            return Ok(());
        };
        if t.shape() != self.shape() {
            bail!(runtime, "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.", self.shape(), t.shape());
        }
        let t = tangent_like(self, t)?;
        self.store_fw_grad(level, t);
        Ok(())
    }

    pub(crate) fn store_fw_grad(&self, level: u64, t: Tensor) {
        {
            let mut m = self.meta();
            m.fw_grads.retain(|(l, _)| *l != level);
            m.fw_grads.push((level, t));
        }
        let mut levels = LEVELS.lock();
        if let Some(l) = levels.iter_mut().find(|l| l.id == level) {
            l.holders.push(std::sync::Arc::downgrade(&self.0));
        }
    }

    /// Gives this tensor `other`'s tangents (an alias of the same value).
    pub(crate) fn copy_fw_grads_from(&self, other: &Tensor) {
        if !is_active() {
            return;
        }
        let fw = other.peek_meta(|m| m.fw_grads.clone());
        if !fw.is_empty() {
            self.meta().fw_grads = fw;
        }
    }

    /// True when this tensor has a tangent at a live level.
    pub fn has_fw_grad(&self) -> bool {
        is_active() && self.peek_meta(|m| !m.fw_grads.is_empty())
    }
}

/// `t` with `primal`'s dtype, shape and strides (a copy unless it already
/// has them).
fn tangent_like(primal: &Tensor, t: &Tensor) -> Result<Tensor> {
    let t = if t.dtype() == primal.dtype() {
        t.clone()
    } else {
        t.to_dtype(primal.dtype())?
    };
    if t.strides() == primal.strides() {
        return Ok(t);
    }
    let layout = Layout {
        shape: primal.shape().into(),
        strides: primal.strides().into(),
        offset: 0,
    };
    let buf = Tensor::zeros(&[layout.storage_extent()], primal.dtype());
    let out = buf.alias_with_layout(layout).data();
    let _g = GradModeGuard::new(false);
    crate::kernels::copy::copy_into(&out, &t)?;
    Ok(out)
}

/// The tangent of `view` (a view of `source`'s memory) as the same view of
/// `source_tangent`, which has `source`'s strides.
fn view_of_tangent(source: &Tensor, source_tangent: &Tensor, view: &Layout) -> Option<Tensor> {
    let shift = source_tangent.storage_offset() as isize - source.storage_offset() as isize;
    let offset = view.offset as isize + shift;
    if offset < 0 || source_tangent.strides() != source.strides() {
        return None;
    }
    Some(source_tangent.alias_with_layout(Layout {
        shape: view.shape.clone(),
        strides: view.strides.clone(),
        offset: offset as usize,
    }))
}

/// Input tangents per live level: `(level id, one tangent or None per input)`.
pub type LevelTangents = Vec<(u64, Vec<Option<Tensor>>)>;

/// Tangents of the inputs of an op about to be recorded, per live level:
/// `None` when no input has a tangent at any level.
pub(crate) fn input_tangents(inputs: &[&Tensor]) -> Option<LevelTangents> {
    if !is_active() || !inputs.iter().any(|t| t.has_fw_grad()) {
        return None;
    }
    let per_level: Vec<_> = live_levels()
        .into_iter()
        .filter_map(|level| {
            let ts: Vec<Option<Tensor>> = inputs.iter().map(|t| t.fw_grad(level)).collect();
            ts.iter().any(Option::is_some).then_some((level, ts))
        })
        .collect();
    (!per_level.is_empty()).then_some(per_level)
}

/// Sets the tangents of an op's outputs from its inputs' tangents, using
/// the op's backward closure `f` (see the module docs).
pub(crate) fn propagate(
    f: &BackwardFn,
    saved: &SavedList,
    inputs: &[Tensor],
    outs: &[Tensor],
    tangents: LevelTangents,
) -> Result<()> {
    for (level, tin) in tangents {
        // A view of one input: its tangent is the same view of that input's
        // tangent (shared memory), unless the tangent carries a graph.
        if outs.len() == 1 && inputs.len() == 1 {
            let (x, out) = (&inputs[0], &outs[0]);
            if let Some(t) = &tin[0] {
                if std::sync::Arc::ptr_eq(x.storage(), out.storage()) && !t.requires_grad() {
                    if let Some(v) = view_of_tangent(x, t, out.layout()) {
                        out.store_fw_grad(level, v);
                        continue;
                    }
                }
            }
        }
        let touts = jvp_by_transpose(f, saved, &tin, outs, level)?;
        for (i, (o, t)) in outs.iter().zip(touts).enumerate() {
            if let Some(t) = t {
                let t = tangent_like(o, &t)?;
                saved.set_output_fw_grad(i, level, &t);
                o.store_fw_grad(level, t);
            }
        }
    }
    Ok(())
}

/// `J t` for each output, from the vjp closure `f`: the gradient of
/// `sum_i <f(g)_i, t_i>` with respect to `g`.
fn jvp_by_transpose(
    f: &BackwardFn,
    saved: &SavedList,
    tin: &[Option<Tensor>],
    outs: &[Tensor],
    level: u64,
) -> Result<Vec<Option<Tensor>>> {
    let outer_grad = is_grad_enabled();
    let _suspend = Suspend::new(vec![level]);
    let _grad = GradModeGuard::new(true);
    let float_out: Vec<bool> = outs.iter().map(|o| o.dtype().is_floating()).collect();
    if !float_out.iter().any(|&b| b) {
        return Ok(vec![None; outs.len()]);
    }
    let gs: Vec<Tensor> = outs
        .iter()
        .map(|o| {
            let dt = if o.dtype().is_floating() {
                o.dtype()
            } else {
                crate::DType::F32
            };
            Tensor::zeros(o.shape(), dt).requires_grad_(true)
        })
        .collect::<Result<_>>()?;
    let grads: Vec<Option<Tensor>> = gs.iter().cloned().map(Some).collect();
    let needs: Vec<bool> = tin.iter().map(Option::is_some).collect();
    let ctx = BackwardCtx::new(&grads, saved, &needs);
    let r = f(&ctx)?;
    let mut total: Option<Tensor> = None;
    for (ri, ti) in r.iter().zip(tin) {
        let (Some(ri), Some(ti)) = (ri, ti) else {
            continue;
        };
        let term = ri.mul(ti)?.sum()?;
        total = Some(match total {
            None => term,
            Some(acc) => acc.add(&term)?,
        });
    }
    let Some(total) = total.filter(|t| t.requires_grad()) else {
        return Ok(outs
            .iter()
            .zip(&float_out)
            .map(|(o, &fl)| fl.then(|| o.zeros_like()))
            .collect());
    };
    let create_graph = outer_grad
        && (tin.iter().flatten().any(|t| t.requires_grad()) || saved.any_requires_grad());
    let gg = super::grad(
        &[total],
        &gs,
        &[None],
        Some(false),
        create_graph,
        true,
        false,
    )?;
    Ok(gg
        .into_iter()
        .zip(outs)
        .zip(&float_out)
        .map(|((g, o), &fl)| fl.then(|| g.unwrap_or_else(|| o.zeros_like())))
        .collect())
}

/// After an in-place op wrote `r` (the op's out-of-place result) into
/// `target`: `target`'s tangent becomes `r`'s, written into the existing
/// tangent memory (so views and bases see it). A view of a base without a
/// tangent gives the base a zero tangent first, as torch does.
pub(crate) fn inplace_update(target: &Tensor, r: &Tensor) -> Result<()> {
    if !is_active() {
        return Ok(());
    }
    for level in live_levels() {
        let new = r.fw_grad(level);
        let mut current = target.fw_grad(level);
        if current.is_none() && new.is_some() {
            current = Some(match target.view_base() {
                Some(base) => {
                    let bt = match base.fw_grad(level) {
                        Some(bt) => bt,
                        None => {
                            let bt = tangent_like(base, &base.zeros_like())?;
                            base.store_fw_grad(level, bt.clone());
                            bt
                        }
                    };
                    let Some(v) = view_of_tangent(base, &bt, target.layout()) else {
                        bail!(runtime, "forward AD: cannot place the tangent of an in-place result into its base");
                    };
                    target.store_fw_grad(level, v.clone());
                    v
                }
                None => {
                    let t = tangent_like(target, &target.zeros_like())?;
                    target.store_fw_grad(level, t.clone());
                    t
                }
            });
        }
        let Some(current) = current else { continue };
        let _g = GradModeGuard::new(false);
        match new {
            Some(new) => crate::kernels::copy::copy_into(&current, &new)?,
            None => crate::kernels::copy::fill(&current, crate::Scalar::Int(0))?,
        }
    }
    Ok(())
}
