//! Graph nodes: a backward function plus the edges to the nodes that
//! produced its inputs. Nodes are immutable once built, except for hooks,
//! metadata and the saved tensors their backward releases.

use super::TensorHook;
use crate::tensor::{DType, Dims, Tensor, TensorImpl};
use crate::Result;
use parking_lot::Mutex;
use std::any::Any;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// Points at input `input_nr` of `node` (that node's forward output number).
#[derive(Clone)]
pub struct Edge {
    pub node: Arc<Node>,
    pub input_nr: usize,
}

/// What a node does on the backward pass.
/// A non-tensor value a node keeps from its forward call, shown in Python
/// as torch's `_saved_<name>` attributes.
#[derive(Clone, Debug, PartialEq)]
pub enum SavedAttr {
    Int(i64),
    Ints(Vec<i64>),
    Bool(bool),
    Float(f64),
    Str(&'static str),
    None,
}

impl From<i64> for SavedAttr {
    fn from(v: i64) -> Self {
        SavedAttr::Int(v)
    }
}
impl From<usize> for SavedAttr {
    fn from(v: usize) -> Self {
        SavedAttr::Int(v as i64)
    }
}
impl From<bool> for SavedAttr {
    fn from(v: bool) -> Self {
        SavedAttr::Bool(v)
    }
}
impl From<f64> for SavedAttr {
    fn from(v: f64) -> Self {
        SavedAttr::Float(v)
    }
}
impl From<&'static str> for SavedAttr {
    fn from(v: &'static str) -> Self {
        SavedAttr::Str(v)
    }
}
impl From<&[i64]> for SavedAttr {
    fn from(v: &[i64]) -> Self {
        SavedAttr::Ints(v.to_vec())
    }
}
impl From<&[usize]> for SavedAttr {
    fn from(v: &[usize]) -> Self {
        SavedAttr::Ints(v.iter().map(|&d| d as i64).collect())
    }
}
impl From<crate::tensor::Scalar> for SavedAttr {
    fn from(v: crate::tensor::Scalar) -> Self {
        use crate::tensor::Scalar;
        match v {
            Scalar::Bool(b) => SavedAttr::Bool(b),
            Scalar::Int(i) => SavedAttr::Int(i),
            Scalar::Float(f) => SavedAttr::Float(f),
        }
    }
}
impl<T: Into<SavedAttr>> From<Option<T>> for SavedAttr {
    fn from(v: Option<T>) -> Self {
        v.map_or(SavedAttr::None, Into::into)
    }
}

pub trait Backward: Send + Sync + 'static {
    fn name(&self) -> Cow<'static, str>;
    /// Gradients w.r.t. the forward outputs in (`None` = zero), gradients
    /// w.r.t. the forward inputs out, one per `next_edges` entry.
    fn apply(&self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;
    /// Frees saved tensors after a backward without `retain_graph`.
    fn release_saved(&self) {}
    /// Names and values of saved tensors, for `_saved_*` inspection.
    fn saved_names(&self) -> Vec<&'static str> {
        Vec::new()
    }
    fn saved(&self, _name: &str, _node: &Node) -> Option<Result<Tensor>> {
        None
    }
    /// The non-tensor arguments the node keeps (torch's `_saved_dim`,
    /// `_saved_keepdim`, `_saved_self_sym_sizes`, ...), by name.
    fn saved_attrs(&self) -> &[(&'static str, SavedAttr)] {
        &[]
    }
    /// Byte ranges of the memory its saved tensors occupy, for the engine
    /// to prefetch while the node before it runs (`kernels::prefetch`).
    fn saved_ranges(&self, _out: &mut Vec<(usize, usize)>) {}
    /// Whether the node communicates with other processes (a collective in
    /// a custom Function's backward). The engine runs such nodes one at a
    /// time in one fixed order, by decreasing sequence number (creation
    /// order reversed, a topological order of the backward), while the
    /// other nodes run freely: every process that built the same graph
    /// then issues its collectives in the same order and none deadlocks.
    fn ordered(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any;
}

/// Shape and dtype of one forward output: the gradient arriving for that
/// output is checked against (and summed/cast to) it.
#[derive(Clone, Debug)]
pub struct InputMeta {
    pub shape: Dims,
    pub dtype: DType,
}

/// A pre-hook on the gradient of one forward output (tensor.register_hook on
/// a non-leaf).
pub(crate) struct TensorPreHook {
    pub id: u64,
    pub output_nr: usize,
    pub hook: TensorHook,
}

/// A node-level hook (register_prehook / register_hook on grad_fn).
pub type PreHook =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
pub type PostHook = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;

#[derive(Default)]
pub(crate) struct Hooks {
    pub tensor_pre: Vec<TensorPreHook>,
    pub retain_grad: Vec<(usize, Weak<TensorImpl>)>,
    pub pre: Vec<(u64, PreHook)>,
    pub post: Vec<(u64, PostHook)>,
}

pub struct Node {
    backward: Option<Box<dyn Backward>>,
    pub(crate) next_edges: Vec<Option<Edge>>,
    /// One entry per forward output of the op (per gradient this node takes).
    pub(crate) input_meta: Vec<InputMeta>,
    pub(crate) sequence_nr: u64,
    pub(crate) hooks: Mutex<Hooks>,
    /// Free-form per-node data for the bindings (the Python `metadata` dict).
    pub metadata: Mutex<Option<Box<dyn Any + Send + Sync>>>,
    /// What anomaly mode captured when the node was created (the forward
    /// traceback, for the bindings); `None` when it was off.
    pub anomaly: Option<super::anomaly::AnomalyPayload>,
}

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(1);

/// A process-unique id for hook handles.
pub fn next_hook_id() -> u64 {
    NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

thread_local! {
    static SEQUENCE_NR: Cell<u64> = const { Cell::new(0) };
}

fn next_sequence_nr() -> u64 {
    SEQUENCE_NR.with(|s| {
        let v = s.get();
        s.set(v + 1);
        v
    })
}

impl Node {
    pub fn new(
        backward: Box<dyn Backward>,
        next_edges: Vec<Option<Edge>>,
        input_meta: Vec<InputMeta>,
    ) -> Node {
        Node {
            backward: Some(backward),
            next_edges,
            input_meta,
            sequence_nr: next_sequence_nr(),
            hooks: Mutex::default(),
            metadata: Mutex::new(None),
            anomaly: super::anomaly::capture(),
        }
    }
    pub fn backward(&self) -> &dyn Backward {
        self.backward.as_deref().expect("node used after drop")
    }
    pub fn name(&self) -> Cow<'static, str> {
        self.backward().name()
    }
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next_edges
    }
    pub fn num_inputs(&self) -> usize {
        self.input_meta.len()
    }
    pub fn input_meta(&self) -> &[InputMeta] {
        &self.input_meta
    }
    pub fn sequence_nr(&self) -> u64 {
        self.sequence_nr
    }
    pub fn as_any(&self) -> &dyn Any {
        self.backward().as_any()
    }
    pub(crate) fn add_retain_grad(&self, output_nr: usize, t: Weak<TensorImpl>) {
        self.hooks.lock().retain_grad.push((output_nr, t));
    }
    /// Drops the retain_grad entry of tensor `t` (its output `output_nr`).
    pub(crate) fn remove_retain_grad(&self, output_nr: usize, t: &Arc<TensorImpl>) {
        self.hooks
            .lock()
            .retain_grad
            .retain(|(nr, w)| *nr != output_nr || w.as_ptr() != Arc::as_ptr(t));
    }
    pub(crate) fn add_tensor_pre_hook(&self, id: u64, output_nr: usize, hook: TensorHook) {
        self.hooks.lock().tensor_pre.push(TensorPreHook {
            id,
            output_nr,
            hook,
        });
    }
    pub fn add_pre_hook(&self, hook: PreHook) -> u64 {
        let id = next_hook_id();
        self.hooks.lock().pre.push((id, hook));
        id
    }
    pub fn add_post_hook(&self, hook: PostHook) -> u64 {
        let id = next_hook_id();
        self.hooks.lock().post.push((id, hook));
        id
    }
    /// Removes a hook of any kind by id; true if one was removed.
    pub fn remove_hook(&self, id: u64) -> bool {
        let mut h = self.hooks.lock();
        let before = h.tensor_pre.len() + h.pre.len() + h.post.len();
        h.tensor_pre.retain(|x| x.id != id);
        h.pre.retain(|x| x.0 != id);
        h.post.retain(|x| x.0 != id);
        before != h.tensor_pre.len() + h.pre.len() + h.post.len()
    }
}

// Dropping a long chain of nodes would recurse once per node (node -> edge ->
// node ...) and overflow the stack. Instead the outermost drop on a thread
// drains a queue of node parts iteratively; nested drops only enqueue.
type NodeParts = (Vec<Option<Edge>>, Option<Box<dyn Backward>>);
thread_local! {
    static DROP_QUEUE: RefCell<Vec<NodeParts>> = const { RefCell::new(Vec::new()) };
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

impl Drop for Node {
    fn drop(&mut self) {
        let parts = (std::mem::take(&mut self.next_edges), self.backward.take());
        if DRAINING.with(|d| d.get()) {
            DROP_QUEUE.with(|q| q.borrow_mut().push(parts));
            return;
        }
        DRAINING.with(|d| d.set(true));
        drop(parts);
        while let Some(p) = DROP_QUEUE.with(|q| q.borrow_mut().pop()) {
            drop(p);
        }
        DRAINING.with(|d| d.set(false));
    }
}
