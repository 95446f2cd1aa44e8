//! Saved-tensor hooks (torch's `autograd.graph.saved_tensors_hooks`): a
//! thread-local stack of (pack, unpack) pairs. While the stack is not empty,
//! every tensor saved for backward — by a built-in op or by a custom
//! Function's `save_for_backward` — is handed to the innermost pair's
//! `pack` at save time, and only the packed object is kept; `unpack` turns
//! it back into a tensor when backward (or `_saved_*` / `saved_tensors`)
//! needs it. A node keeps the pair it saved with, so the hooks still apply
//! after the context has exited.
//!
//! Unpack order is stable and documented: within one node, saved tensors
//! are unpacked in save order (the order of `save(..)` calls, or of the
//! `save_for_backward` arguments), each at most once per access. The
//! version of the original tensor is recorded at save time and checked at
//! unpack, hooks or not.

use crate::tensor::Tensor;
use crate::{Error, Result};
use std::any::Any;
use std::cell::RefCell;
use std::sync::Arc;

/// What `pack` returns: anything.
pub type Packed = Box<dyn Any + Send + Sync>;

/// A (pack, unpack) pair.
pub trait SavedTensorHooks: Send + Sync + 'static {
    fn pack(&self, t: &Tensor) -> Result<Packed>;
    fn unpack(&self, packed: &Packed) -> Result<Tensor>;
    /// Whether unpacking checks the version recorded at save time (true
    /// unless the hooks themselves make in-place changes safe).
    fn checks_version(&self) -> bool {
        true
    }
}

thread_local! {
    static STACK: RefCell<Vec<Arc<dyn SavedTensorHooks>>> = const { RefCell::new(Vec::new()) };
    static DISABLED: RefCell<Option<String>> = const { RefCell::new(None) };
    static PACK_ERROR: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// Records an error a `pack` hook raised while a built-in op saved a tensor
/// (built-in ops cannot fail at record time): the saved tensor re-raises
/// it on unpack, and the Python context manager raises it when it exits.
pub(crate) fn set_pack_error(e: Error) {
    PACK_ERROR.with(|p| {
        let mut p = p.borrow_mut();
        if p.is_none() {
            *p = Some(e);
        }
    });
}

/// Takes the first pack error recorded on this thread since the last call.
pub fn take_pack_error() -> Option<Error> {
    PACK_ERROR.with(|p| p.borrow_mut().take())
}

/// Pushes a pair; fails with the disabling message inside
/// `disable_saved_tensors_hooks`.
pub fn push_hooks(h: Arc<dyn SavedTensorHooks>) -> Result<()> {
    if let Some(msg) = disabled_message() {
        return Err(Error::runtime(msg));
    }
    STACK.with(|s| s.borrow_mut().push(h));
    Ok(())
}

/// Pops the innermost pair (no-op on an empty stack).
pub fn pop_hooks() {
    STACK.with(|s| {
        s.borrow_mut().pop();
    });
}

/// The innermost pair, if any.
pub fn current_hooks() -> Option<Arc<dyn SavedTensorHooks>> {
    STACK.with(|s| s.borrow().last().cloned())
}

/// The message of the enclosing `disable_saved_tensors_hooks`, if any.
pub fn disabled_message() -> Option<String> {
    DISABLED.with(|d| d.borrow().clone())
}

/// Disables pushing hooks (`Some(msg)`) or enables it again (`None`).
/// Disabling while hooks are set fails with the message, as in torch, and
/// changes nothing.
pub fn set_disabled(msg: Option<String>) -> Result<()> {
    if let Some(m) = &msg {
        if STACK.with(|s| !s.borrow().is_empty()) {
            return Err(Error::runtime(m.clone()));
        }
    }
    DISABLED.with(|d| *d.borrow_mut() = msg);
    Ok(())
}

/// Hooks in a closure form, for Rust callers.
pub struct FnHooks<P, U> {
    pub pack: P,
    pub unpack: U,
}

impl<P, U> SavedTensorHooks for FnHooks<P, U>
where
    P: Fn(&Tensor) -> Result<Packed> + Send + Sync + 'static,
    U: Fn(&Packed) -> Result<Tensor> + Send + Sync + 'static,
{
    fn pack(&self, t: &Tensor) -> Result<Packed> {
        (self.pack)(t)
    }
    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        (self.unpack)(packed)
    }
}

/// Runs `f` with `hooks` pushed (popped again even on error).
pub fn with_hooks<R>(hooks: Arc<dyn SavedTensorHooks>, f: impl FnOnce() -> Result<R>) -> Result<R> {
    push_hooks(hooks)?;
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            pop_hooks();
        }
    }
    let _pop = Pop;
    f()
}

/// `save_on_cpu`: pack copies the tensor, unpack returns the copy.
pub struct SaveOnCpu;

impl SavedTensorHooks for SaveOnCpu {
    fn pack(&self, t: &Tensor) -> Result<Packed> {
        let _g = super::grad_mode::no_grad();
        Ok(Box::new(t.detach().clone_tensor()?))
    }
    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        packed
            .downcast_ref::<Tensor>()
            .cloned()
            .ok_or_else(|| Error::runtime("save_on_cpu: packed value is not a tensor"))
    }
}

// ---- allow_mutation_on_saved_tensors ----------------------------------

/// One tensor saved inside `allow_mutation_on_saved_tensors`: the original
/// (shared memory) until an in-place op is about to change it, then a clone
/// of the value it had.
struct MutableSaved {
    value: parking_lot::Mutex<Tensor>,
    cloned: std::sync::atomic::AtomicBool,
}

/// The state of one `allow_mutation_on_saved_tensors` context.
pub struct AllowMutation {
    saved: parking_lot::Mutex<Vec<std::sync::Weak<MutableSaved>>>,
    active: std::sync::atomic::AtomicBool,
}

impl AllowMutation {
    pub fn new() -> Arc<AllowMutation> {
        Arc::new(AllowMutation {
            saved: parking_lot::Mutex::new(Vec::new()),
            active: std::sync::atomic::AtomicBool::new(true),
        })
    }
    /// Marks the context as exited: later unpacks fail as in torch.
    pub fn close(&self) {
        self.active
            .store(false, std::sync::atomic::Ordering::Release);
        self.saved.lock().clear();
    }
    fn before_inplace(&self, t: &Tensor) -> Result<()> {
        let mut saved = self.saved.lock();
        saved.retain(|w| w.strong_count() > 0);
        for s in saved.iter().filter_map(|w| w.upgrade()) {
            if s.cloned.load(std::sync::atomic::Ordering::Acquire) {
                continue;
            }
            let mut v = s.value.lock();
            if Arc::ptr_eq(v.storage(), t.storage()) {
                let _g = super::grad_mode::no_grad();
                *v = v.clone_tensor()?;
                s.cloned.store(true, std::sync::atomic::Ordering::Release);
            }
        }
        Ok(())
    }
}

struct AllowMutationHooks(Arc<AllowMutation>);

impl SavedTensorHooks for AllowMutationHooks {
    fn pack(&self, t: &Tensor) -> Result<Packed> {
        let s = Arc::new(MutableSaved {
            value: parking_lot::Mutex::new(t.detach()),
            cloned: std::sync::atomic::AtomicBool::new(false),
        });
        self.0.saved.lock().push(Arc::downgrade(&s));
        Ok(Box::new(s))
    }
    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        if !self.0.active.load(std::sync::atomic::Ordering::Acquire) {
            // torch's message, missing space included (an `assert`).
            return Err(Error::assertion(
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' contextin which the graph was originally recorded.",
            ));
        }
        let s = packed
            .downcast_ref::<Arc<MutableSaved>>()
            .ok_or_else(|| Error::runtime("allow_mutation_on_saved_tensors: bad packed value"))?;
        let v = s.value.lock().clone();
        Ok(v)
    }
    fn checks_version(&self) -> bool {
        false
    }
}

thread_local! {
    static MUTATION_CTX: RefCell<Vec<Arc<AllowMutation>>> = const { RefCell::new(Vec::new()) };
}

/// Enters `allow_mutation_on_saved_tensors`: pushes its hooks. Fails, as
/// in torch, inside another such context or inside
/// `disable_saved_tensors_hooks` (with its message).
pub fn enter_allow_mutation() -> Result<Arc<AllowMutation>> {
    if MUTATION_CTX.with(|m| !m.borrow().is_empty()) {
        return Err(Error::runtime(
            "allow_mutation_on_saved_tensors contexts cannot be nested",
        ));
    }
    let ctx = AllowMutation::new();
    push_hooks(Arc::new(AllowMutationHooks(ctx.clone())))?;
    MUTATION_CTX.with(|m| m.borrow_mut().push(ctx.clone()));
    Ok(ctx)
}

/// Exits the innermost `allow_mutation_on_saved_tensors`.
pub fn exit_allow_mutation() {
    pop_hooks();
    if let Some(ctx) = MUTATION_CTX.with(|m| m.borrow_mut().pop()) {
        ctx.close();
    }
}

/// Called by in-place ops before they write into `t`: inside
/// `allow_mutation_on_saved_tensors`, saved tensors sharing its memory are
/// cloned first. One thread-local check otherwise.
pub fn before_inplace(t: &Tensor) -> Result<()> {
    let ctxs: Vec<Arc<AllowMutation>> = MUTATION_CTX.with(|m| {
        let m = m.borrow();
        if m.is_empty() {
            Vec::new()
        } else {
            m.clone()
        }
    });
    for c in ctxs {
        c.before_inplace(t)?;
    }
    Ok(())
}
