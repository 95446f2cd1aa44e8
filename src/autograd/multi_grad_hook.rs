//! What a hook can ask about the backward it runs in (torch's
//! `_current_graph_task_id` / `_will_engine_execute_node`), and
//! `register_multi_grad_hook` built on it.

use super::accumulate::AccumulateGrad;
use super::node::{next_hook_id, Node};
use crate::tensor::Tensor;
use crate::{bail, Result};
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One running backward: its id and the nodes whose tensor hooks it runs.
pub struct TaskInfo {
    pub id: u64,
    runs_hooks_of: HashSet<usize>,
}

static NEXT_TASK_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static CURRENT: RefCell<Vec<Arc<TaskInfo>>> = const { RefCell::new(Vec::new()) };
}

impl TaskInfo {
    /// `nodes` with, for each, whether it executes and whether it receives
    /// a gradient (hooks of a leaf run only when its AccumulateGrad
    /// executes; tensor pre-hooks of other nodes whenever they receive one).
    pub(crate) fn new<'a>(nodes: impl Iterator<Item = (&'a Arc<Node>, bool, bool)>) -> Arc<Self> {
        let runs_hooks_of = nodes
            .filter(|(n, execute, receives)| {
                if n.backward().as_any().is::<AccumulateGrad>() {
                    *execute
                } else {
                    *receives
                }
            })
            .map(|(n, _, _)| Arc::as_ptr(n) as usize)
            .collect();
        Arc::new(TaskInfo {
            id: NEXT_TASK_ID.fetch_add(1, Ordering::Relaxed),
            runs_hooks_of,
        })
    }
    /// Whether this backward runs the tensor hooks of `node`.
    pub fn will_execute(&self, node: &Arc<Node>) -> bool {
        self.runs_hooks_of.contains(&(Arc::as_ptr(node) as usize))
    }
}

/// Marks `info` as the current backward on this thread until dropped.
pub(crate) struct TaskGuard;

pub(crate) fn enter(info: &Arc<TaskInfo>) -> TaskGuard {
    CURRENT.with(|c| c.borrow_mut().push(info.clone()));
    TaskGuard
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| {
            c.borrow_mut().pop();
        });
    }
}

/// The backward running on this thread, if any.
pub fn current_task() -> Option<Arc<TaskInfo>> {
    CURRENT.with(|c| c.borrow().last().cloned())
}

/// `mode` of [`register_multi_grad_hook`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MultiGradMode {
    /// Called once per backward with every gradient (None where not
    /// computed), after the last one this backward computes.
    All,
    /// Called once per backward with the first gradient computed.
    Any,
}

pub type MultiGradFn = Arc<dyn Fn(Vec<Option<Tensor>>) -> Result<()> + Send + Sync>;

/// Handle of a multi-grad hook: the (tensor, hook id) pairs to remove.
pub struct MultiGradHandle {
    hooks: Vec<(Tensor, u64)>,
}

impl MultiGradHandle {
    pub fn remove(&self) {
        for (t, id) in &self.hooks {
            t.remove_hook(*id);
        }
    }
}

#[derive(Default)]
struct PerTask {
    count: usize,
    expected: usize,
    buffer: Vec<Option<Tensor>>,
    ran: bool,
}

/// torch's `autograd.graph.register_multi_grad_hook`. For `Any`, `f` gets a
/// one-element vector.
pub fn register_multi_grad_hook(
    tensors: &[Tensor],
    f: MultiGradFn,
    mode: MultiGradMode,
) -> Result<MultiGradHandle> {
    let mut nodes = Vec::with_capacity(tensors.len());
    for t in tensors {
        t.check_view_history()?;
        match t.gradient_edge() {
            // Weak: a hook stored on a tensor must not keep its node (and so
            // its graph, or the tensor itself) alive. A leaf's accumulator
            // may be remade: it is looked up again through the tensor.
            Some(e) => nodes.push((Arc::downgrade(&e.node), Arc::downgrade(&t.0))),
            None => bail!(
                runtime,
                "register_multi_grad_hook: every tensor must require grad"
            ),
        }
    }
    let n = tensors.len();
    let nodes = Arc::new(nodes);
    let state: Arc<Mutex<HashMap<u64, PerTask>>> = Arc::default();
    let mut hooks = Vec::with_capacity(n);
    for (i, t) in tensors.iter().enumerate() {
        let (nodes, state, f) = (nodes.clone(), state.clone(), f.clone());
        let hook: crate::autograd::TensorHook = Arc::new(move |g: Option<&Tensor>| {
            let Some(task) = current_task() else {
                bail!(
                    runtime,
                    "expected this hook to be called inside a backward call"
                );
            };
            let call = {
                let mut st = state.lock();
                let s = st.entry(task.id).or_default();
                match mode {
                    MultiGradMode::Any => {
                        if s.ran {
                            None
                        } else {
                            s.ran = true;
                            Some(vec![g.cloned()])
                        }
                    }
                    MultiGradMode::All => {
                        if s.count == 0 {
                            s.expected = nodes
                                .iter()
                                .filter(|(node, tensor)| {
                                    let node = node
                                        .upgrade()
                                        .or_else(|| Tensor(tensor.upgrade()?).grad_accumulator());
                                    node.is_some_and(|n| task.will_execute(&n))
                                })
                                .count();
                            s.buffer = vec![None; n];
                        }
                        s.count += 1;
                        s.buffer[i] = g.cloned();
                        if s.count >= s.expected {
                            st.remove(&task.id).map(|s| s.buffer)
                        } else {
                            None
                        }
                    }
                }
            };
            if let Some(args) = call {
                f(args)?;
            }
            Ok(None)
        });
        let id = next_hook_id();
        t.add_hook(id, hook);
        hooks.push((t.clone(), id));
    }
    Ok(MultiGradHandle { hooks })
}
