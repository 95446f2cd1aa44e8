//! The autograd profiler (`torch.autograd.profiler.profile`).
//!
//! While a session is on, every forward op (from `record(...)` to its
//! `finish`), every backward node the engine evaluates and every user range
//! (`record_function`) becomes an [`Event`]: name, start and duration in
//! nanoseconds, the thread it ran on and, with `record_shapes`, its input
//! shapes. Self time (duration less the time of ranges nested in it on the
//! same thread) is computed here when a range closes. When no session is on,
//! each instrumentation point costs one relaxed atomic load.
//!
//! Options of a session: `record_shapes` (input shapes of ops and backward
//! nodes), `with_stack` (the caller's stack for forward ops and user ranges,
//! from a capture callback the Python bindings register: the core knows
//! nothing of Python) and `profile_memory` (bytes of tensor storage
//! allocated, positive, and freed, negative, while each range is the
//! innermost open one on its thread). Starting a session while one is on
//! replaces it, as torch does: the outer one then ends with no events.

use super::node::Node;
use crate::tensor::Tensor;
use crate::Result;
use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// What an event stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A forward op (recorded by `record(...)`).
    Op,
    /// A backward node run by the engine.
    Backward,
    /// A user range (`record_function`).
    User,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Op => "cpu_op",
            EventKind::Backward => "backward",
            EventKind::User => "user_annotation",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Event {
    pub name: Cow<'static, str>,
    pub kind: EventKind,
    /// Nanoseconds since the process's profiler epoch.
    pub start_ns: u64,
    pub dur_ns: u64,
    /// `dur_ns` less the time of events nested in this one on its thread.
    pub self_ns: u64,
    /// A small per-thread id (1 = the first thread that recorded anything).
    pub tid: u64,
    pub shapes: Vec<Vec<usize>>,
    /// The caller's stack (innermost frame first), with `with_stack`.
    pub stack: Vec<String>,
    /// Storage bytes allocated less bytes freed in this range and in the
    /// ranges nested in it (`profile_memory`).
    pub memory: i64,
    /// The same, counting only this range's own allocations and frees.
    pub self_memory: i64,
}

/// What a session records besides names and times.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    pub record_shapes: bool,
    pub with_stack: bool,
    pub profile_memory: bool,
}

/// Captures the caller's stack, innermost frame first (see [`set_stack_capture`]).
pub type StackCapture = fn() -> Vec<String>;

static ENABLED: AtomicBool = AtomicBool::new(false);
static RECORD_SHAPES: AtomicBool = AtomicBool::new(false);
static WITH_STACK: AtomicBool = AtomicBool::new(false);
static STACK_CAPTURE: OnceLock<StackCapture> = OnceLock::new();
/// Incremented by every `start`; a range only reports into its own session.
static SESSION: AtomicU64 = AtomicU64::new(0);
static NEXT_TID: AtomicU64 = AtomicU64::new(1);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static EPOCH: OnceLock<Instant> = OnceLock::new();

thread_local! {
    static TID: Cell<u64> = const { Cell::new(0) };
    /// Per open range on this thread: child time, own and children's memory.
    static STACK: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}

#[derive(Default)]
struct Open {
    /// A backward node's range: ops in it get no stack (as in torch).
    backward: bool,
    child_ns: u64,
    self_mem: i64,
    child_mem: i64,
}

/// Registers the stack capture used by `with_stack` sessions (the Python
/// bindings set one; without it stacks stay empty). The first one wins.
pub fn set_stack_capture(f: StackCapture) {
    let _ = STACK_CAPTURE.set(f);
}

/// Accounts `bytes` of tensor storage allocated (positive) or freed
/// (negative) to the innermost open range on this thread; the storage layer
/// calls it while a `profile_memory` session is on (`observe_memory`).
fn memory_event(bytes: i64) {
    STACK.with(|s| {
        if let Some(top) = s.borrow_mut().last_mut() {
            top.self_mem += bytes;
        }
    });
}

fn thread_id() -> u64 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_TID.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

fn epoch() -> Instant {
    *EPOCH.get_or_init(Instant::now)
}

#[inline]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Starts a session (clearing earlier events) recording input shapes or not.
pub fn start(record_shapes: bool) -> Result<()> {
    start_with(Options {
        record_shapes,
        ..Options::default()
    })
}

/// Starts a session with `opts`. A session already on is replaced (its
/// events so far are dropped), as in torch: the outer `stop` then returns
/// no events.
pub fn start_with(opts: Options) -> Result<()> {
    epoch();
    EVENTS.lock().clear();
    RECORD_SHAPES.store(opts.record_shapes, Ordering::Relaxed);
    WITH_STACK.store(opts.with_stack, Ordering::Relaxed);
    crate::buffer::storage::observe_memory(memory_event, opts.profile_memory);
    SESSION.fetch_add(1, Ordering::AcqRel);
    ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// Ends the session and returns its events, sorted by start time (none
/// when no session is on).
pub fn stop() -> Vec<Event> {
    ENABLED.store(false, Ordering::Release);
    crate::buffer::storage::observe_memory(memory_event, false);
    WITH_STACK.store(false, Ordering::Relaxed);
    let mut ev = std::mem::take(&mut *EVENTS.lock());
    ev.sort_by_key(|e| (e.start_ns, std::cmp::Reverse(e.dur_ns)));
    ev
}

/// An open range: reports an event when dropped.
pub struct RangeGuard {
    name: Cow<'static, str>,
    kind: EventKind,
    start: Instant,
    depth: usize,
    session: u64,
    shapes: Vec<Vec<usize>>,
    stack: Vec<String>,
}

impl RangeGuard {
    fn open(name: Cow<'static, str>, kind: EventKind, shapes: Vec<Vec<usize>>) -> RangeGuard {
        let capture = STACK_CAPTURE
            .get()
            .filter(|_| WITH_STACK.load(Ordering::Relaxed));
        let (depth, capture) = STACK.with(|s| {
            let mut s = s.borrow_mut();
            // No stack for backward nodes and the ops they run.
            let capture =
                capture.filter(|_| kind != EventKind::Backward && !s.iter().any(|o| o.backward));
            s.push(Open {
                backward: kind == EventKind::Backward,
                ..Open::default()
            });
            (s.len() - 1, capture)
        });
        let stack = capture.map_or_else(Vec::new, |f| f());
        RangeGuard {
            name,
            kind,
            session: SESSION.load(Ordering::Acquire),
            shapes,
            stack,
            depth,
            start: Instant::now(),
        }
    }
}

impl Drop for RangeGuard {
    fn drop(&mut self) {
        let end = Instant::now();
        let dur = end.duration_since(self.start).as_nanos() as u64;
        let (child, self_mem, mem) = STACK.with(|s| {
            let mut s = s.borrow_mut();
            let (child, self_mem, mem) = s.get(self.depth).map_or((0, 0, 0), |o| {
                (o.child_ns, o.self_mem, o.self_mem + o.child_mem)
            });
            s.truncate(self.depth);
            if let Some(parent) = s.last_mut() {
                parent.child_ns += dur;
                parent.child_mem += mem;
            }
            (child, self_mem, mem)
        });
        if !is_enabled() || SESSION.load(Ordering::Acquire) != self.session {
            return;
        }
        let ev = Event {
            name: std::mem::take(&mut self.name),
            kind: self.kind,
            start_ns: self.start.duration_since(epoch()).as_nanos() as u64,
            dur_ns: dur,
            self_ns: dur.saturating_sub(child),
            tid: thread_id(),
            shapes: std::mem::take(&mut self.shapes),
            stack: std::mem::take(&mut self.stack),
            memory: mem,
            self_memory: self_mem,
        };
        EVENTS.lock().push(ev);
    }
}

fn shapes_wanted() -> bool {
    RECORD_SHAPES.load(Ordering::Relaxed)
}

/// A forward op's range (from `record`), named after its backward node.
#[inline]
pub(crate) fn op_range(backward_name: &'static str, inputs: &[&Tensor]) -> Option<RangeGuard> {
    if !is_enabled() {
        return None;
    }
    let shapes = if shapes_wanted() {
        inputs.iter().map(|t| t.shape().to_vec()).collect()
    } else {
        Vec::new()
    };
    Some(RangeGuard::open(
        Cow::Borrowed(backward_name),
        EventKind::Op,
        shapes,
    ))
}

/// A backward node's evaluation in the engine.
#[inline]
pub(crate) fn backward_range(node: &Node) -> Option<RangeGuard> {
    if !is_enabled() {
        return None;
    }
    let shapes = if shapes_wanted() {
        node.input_meta().iter().map(|m| m.shape.to_vec()).collect()
    } else {
        Vec::new()
    };
    Some(RangeGuard::open(node.name(), EventKind::Backward, shapes))
}

/// A user range (`record_function(name)`); `None` when no session is on.
pub fn user_range(name: String) -> Option<RangeGuard> {
    if !is_enabled() {
        return None;
    }
    Some(RangeGuard::open(
        Cow::Owned(name),
        EventKind::User,
        Vec::new(),
    ))
}

/// torch's name for the forward op of a backward node: `MulBackward0` ->
/// `aten::mul`, `AddmmBackward0` -> `aten::addmm`, `NativeLayerNormBackward0`
/// -> `aten::native_layer_norm`. Other names are returned unchanged.
pub fn forward_op_name(backward_name: &str) -> String {
    let Some(pos) = backward_name.rfind("Backward") else {
        return backward_name.to_string();
    };
    let (stem, rest) = backward_name.split_at(pos);
    if stem.is_empty() || !rest["Backward".len()..].chars().all(|c| c.is_ascii_digit()) {
        return backward_name.to_string();
    }
    let mut out = String::from("aten::");
    for (i, c) in stem.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names() {
        assert_eq!(forward_op_name("MulBackward0"), "aten::mul");
        assert_eq!(forward_op_name("AddmmBackward0"), "aten::addmm");
        assert_eq!(
            forward_op_name("NativeLayerNormBackward0"),
            "aten::native_layer_norm"
        );
        assert_eq!(forward_op_name("SumBackward1"), "aten::sum");
        assert_eq!(forward_op_name("AccumulateGrad"), "AccumulateGrad");
    }
}
