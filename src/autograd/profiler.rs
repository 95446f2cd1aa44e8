//! The autograd profiler (`torch.autograd.profiler.profile`).
//!
//! While a session is on, every forward op (from `record(...)` to its
//! `finish`), every backward node the engine evaluates and every user range
//! (`record_function`) becomes an [`Event`]: name, start and duration in
//! nanoseconds, the thread it ran on and, with `record_shapes`, its input
//! shapes. Self time (duration less the time of ranges nested in it on the
//! same thread) is computed here when a range closes. When no session is on,
//! each instrumentation point costs one relaxed atomic load.

use super::node::Node;
use crate::tensor::Tensor;
use crate::{Error, Result};
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
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static RECORD_SHAPES: AtomicBool = AtomicBool::new(false);
/// Incremented by every `start`; a range only reports into its own session.
static SESSION: AtomicU64 = AtomicU64::new(0);
static NEXT_TID: AtomicU64 = AtomicU64::new(1);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static EPOCH: OnceLock<Instant> = OnceLock::new();

thread_local! {
    static TID: Cell<u64> = const { Cell::new(0) };
    /// Child time accumulated by each open range on this thread.
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
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

/// Starts a session (clearing earlier events).
pub fn start(record_shapes: bool) -> Result<()> {
    if is_enabled() {
        return Err(Error::runtime(
            "Profiler is already enabled: nested profile() sessions are not supported.",
        ));
    }
    epoch();
    EVENTS.lock().clear();
    RECORD_SHAPES.store(record_shapes, Ordering::Relaxed);
    SESSION.fetch_add(1, Ordering::AcqRel);
    ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// Ends the session and returns its events, sorted by start time.
pub fn stop() -> Vec<Event> {
    ENABLED.store(false, Ordering::Release);
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
}

impl RangeGuard {
    fn open(name: Cow<'static, str>, kind: EventKind, shapes: Vec<Vec<usize>>) -> RangeGuard {
        let depth = STACK.with(|s| {
            let mut s = s.borrow_mut();
            s.push(0);
            s.len() - 1
        });
        RangeGuard {
            name,
            kind,
            session: SESSION.load(Ordering::Acquire),
            shapes,
            depth,
            start: Instant::now(),
        }
    }
}

impl Drop for RangeGuard {
    fn drop(&mut self) {
        let end = Instant::now();
        let dur = end.duration_since(self.start).as_nanos() as u64;
        let child = STACK.with(|s| {
            let mut s = s.borrow_mut();
            let child = s.get(self.depth).copied().unwrap_or(0);
            s.truncate(self.depth);
            if let Some(parent) = s.last_mut() {
                *parent += dur;
            }
            child
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
