//! The backward engine.
//!
//! Discovery walks the graph once from the roots, gives every edge between
//! two participating nodes a fixed slot in its consumer, and counts each
//! node's incoming edges. Execution runs a node when its counter reaches
//! zero; producers write into their own slot, so no lock is contended, and a
//! node sums its slots in slot order: the result does not depend on which
//! thread ran what. Independent ready nodes are spawned on the pool; a chain
//! continues inline on the same thread.

use super::accumulate::{retain_into, AccumulateGrad};
use super::anomaly;
use super::grad_mode::GradModeGuard;
use super::node::{Edge, Node};
use crate::tensor::Tensor;
use crate::{bail, Error, Result};
use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// One backward request.
pub struct Request {
    /// Root edges with their initial gradients.
    pub roots: Vec<(Edge, Tensor)>,
    pub keep_graph: bool,
    pub create_graph: bool,
    /// Edges whose arriving gradients are captured and returned, in order.
    pub capture: Vec<Edge>,
    /// When false, only nodes that lead to `capture` edges or to
    /// `run_targets` execute (autograd.grad, backward(inputs=...)).
    pub run_all: bool,
    /// Nodes that must execute even when pruning (AccumulateGrad of leaf inputs).
    pub run_targets: Vec<Arc<Node>>,
}

struct NodeTask {
    node: Arc<Node>,
    execute: bool,
    pending: AtomicUsize,
    /// One slot per incoming edge, filled by its producer.
    slots: Vec<Mutex<Option<Tensor>>>,
    /// Which input (forward output number) each slot is a gradient for.
    slot_input_nr: Vec<usize>,
    /// For each next edge: the (task, slot) its gradient goes to.
    out: Vec<Option<(usize, usize)>>,
    /// (input_nr, capture index) pairs captured at this node.
    captures: Vec<(usize, usize)>,
}

struct GraphTask {
    tasks: Vec<NodeTask>,
    keep_graph: bool,
    create_graph: bool,
    /// Forward-AD levels suspended where the backward was started.
    fw_suspended: Vec<u64>,
    captured: Vec<Mutex<Option<Tensor>>>,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    info: Arc<super::multi_grad_hook::TaskInfo>,
    /// The ordered lane: communicating nodes ([`super::node::Backward::ordered`]) that
    /// execute, by decreasing sequence number, and each task's place in it.
    lane: Vec<usize>,
    lane_pos: Vec<Option<usize>>,
    lane_state: Mutex<Lane>,
}

/// Where the ordered lane stands: the next place allowed to run, and which
/// places are ready but waiting for their turn.
struct Lane {
    next: usize,
    parked: Vec<bool>,
}

impl GraphTask {
    /// Lets ready nodes through: a node of the ordered lane runs only at
    /// its turn, otherwise it waits (parked) until the node before it in
    /// the lane has finished. Nodes off the lane pass unchanged.
    fn admit(&self, mut ready: Vec<usize>) -> Vec<usize> {
        if self.lane.is_empty() {
            return ready;
        }
        let mut lane = self.lane_state.lock();
        ready.retain(|&i| match self.lane_pos[i] {
            Some(p) if p != lane.next => {
                lane.parked[p] = true;
                false
            }
            _ => true,
        });
        ready
    }

    /// After node `idx` ran: if it was on the lane, the turn passes to the
    /// next place, returned when that node is already waiting.
    fn lane_done(&self, idx: usize) -> Option<usize> {
        let p = self.lane_pos.get(idx).copied().flatten()?;
        let mut lane = self.lane_state.lock();
        lane.next = p + 1;
        let next = *self.lane.get(p + 1)?;
        std::mem::take(&mut lane.parked[p + 1]).then_some(next)
    }
}

fn key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Runs backward; returns the captured gradients (one per `capture` edge).
pub fn execute(req: Request) -> Result<Vec<Option<Tensor>>> {
    reset_interrupt_clock();
    let _no_autocast = super::autocast::suspend();
    let (task, ready) = build(&req)?;
    let ready = task.admit(ready);
    if !ready.is_empty() {
        let task = &task;
        crate::parallel::in_place_scope(|s| run_here(task, ready, s));
    }
    if let Some(e) = task.error.lock().take() {
        return Err(e);
    }
    Ok(task.captured.into_iter().map(|c| c.into_inner()).collect())
}

/// Discovery: which nodes take part, their slots and dependency counts.
fn build(req: &Request) -> Result<(GraphTask, Vec<usize>)> {
    // 1. Reachable nodes in DFS discovery order (deterministic).
    let mut index: HashMap<usize, usize> = HashMap::new();
    let mut nodes: Vec<Arc<Node>> = Vec::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (e, _) in req.roots.iter().rev() {
        stack.push(e.node.clone());
    }
    while let Some(n) = stack.pop() {
        if index.contains_key(&key(&n)) {
            continue;
        }
        index.insert(key(&n), nodes.len());
        for e in n.next_edges().iter().rev().flatten() {
            if !index.contains_key(&key(&e.node)) {
                stack.push(e.node.clone());
            }
        }
        nodes.push(n);
    }
    let count = nodes.len();

    // 2. Which nodes execute, and which receive gradients at all.
    let mut captures: Vec<Vec<(usize, usize)>> = vec![Vec::new(); count];
    for (ci, e) in req.capture.iter().enumerate() {
        if let Some(&i) = index.get(&key(&e.node)) {
            captures[i].push((e.input_nr, ci));
        }
    }
    let mut execute = vec![req.run_all; count];
    if !req.run_all {
        for t in &req.run_targets {
            if let Some(&i) = index.get(&key(t)) {
                execute[i] = true;
            }
        }
        // Children before parents: iterate to a fixed point over a
        // post-order (the graph is a DAG, one reverse pass suffices).
        for i in post_order(&nodes, &index).into_iter() {
            if execute[i] {
                continue;
            }
            execute[i] = nodes[i].next_edges().iter().flatten().any(|e| {
                let c = index[&key(&e.node)];
                execute[c] || !captures[c].is_empty()
            });
        }
    }
    let receives: Vec<bool> = (0..count)
        .map(|i| execute[i] || !captures[i].is_empty())
        .collect();

    // 3. Slots: roots first, then every edge from an executing node.
    let mut slot_input_nr: Vec<Vec<usize>> = vec![Vec::new(); count];
    let mut prefilled: Vec<Vec<Option<Tensor>>> = vec![Vec::new(); count];
    for (e, g) in &req.roots {
        let i = index[&key(&e.node)];
        slot_input_nr[i].push(e.input_nr);
        prefilled[i].push(Some(g.clone()));
    }
    let mut pending = vec![0usize; count];
    let mut out: Vec<Vec<Option<(usize, usize)>>> = vec![Vec::new(); count];
    for i in 0..count {
        if !execute[i] {
            continue;
        }
        out[i] = nodes[i]
            .next_edges()
            .iter()
            .map(|e| {
                let e = e.as_ref()?;
                let c = index[&key(&e.node)];
                if !receives[c] {
                    return None;
                }
                slot_input_nr[c].push(e.input_nr);
                prefilled[c].push(None);
                pending[c] += 1;
                Some((c, slot_input_nr[c].len() - 1))
            })
            .collect();
    }

    let info = super::multi_grad_hook::TaskInfo::new(
        (0..count).map(|i| (&nodes[i], execute[i], receives[i])),
    );
    // The ordered lane: communicating nodes that run, latest created first
    // (a node's inputs were made before it, so this order is topological).
    let mut lane: Vec<usize> = (0..count)
        .filter(|&i| {
            execute[i]
                && receives[i]
                && (pending[i] > 0 || !prefilled[i].is_empty())
                && nodes[i].backward().ordered()
        })
        .collect();
    lane.sort_by_key(|&i| (std::cmp::Reverse(nodes[i].sequence_nr()), i));
    let mut lane_pos = vec![None; count];
    for (p, &i) in lane.iter().enumerate() {
        lane_pos[i] = Some(p);
    }
    let mut ready = Vec::new();
    let mut tasks = Vec::with_capacity(count);
    for (i, node) in nodes.into_iter().enumerate() {
        if receives[i] && pending[i] == 0 && !prefilled[i].is_empty() {
            ready.push(i);
        }
        tasks.push(NodeTask {
            node,
            execute: execute[i],
            pending: AtomicUsize::new(pending[i]),
            slots: std::mem::take(&mut prefilled[i])
                .into_iter()
                .map(Mutex::new)
                .collect(),
            slot_input_nr: std::mem::take(&mut slot_input_nr[i]),
            out: std::mem::take(&mut out[i]),
            captures: std::mem::take(&mut captures[i]),
        });
    }
    let task = GraphTask {
        tasks,
        keep_graph: req.keep_graph,
        create_graph: req.create_graph,
        fw_suspended: super::forward::suspended(),
        captured: req.capture.iter().map(|_| Mutex::new(None)).collect(),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
        info,
        lane_state: Mutex::new(Lane {
            next: 0,
            parked: vec![false; lane.len()],
        }),
        lane,
        lane_pos,
    };
    Ok((task, ready))
}

/// Node indices with every node after all nodes reachable from it.
fn post_order(nodes: &[Arc<Node>], index: &HashMap<usize, usize>) -> Vec<usize> {
    let n = nodes.len();
    let mut order = Vec::with_capacity(n);
    let mut state = vec![0u8; n]; // 0 new, 1 open, 2 done
    for root in 0..n {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some((i, k)) = stack.pop() {
            let edges = nodes[i].next_edges();
            if let Some(next) = edges[k..].iter().position(|e| e.is_some()) {
                let k = k + next;
                stack.push((i, k + 1));
                let c = index[&key(&edges[k].as_ref().unwrap().node)];
                if state[c] == 0 {
                    state[c] = 1;
                    stack.push((c, 0));
                }
            } else {
                state[i] = 2;
                order.push(i);
            }
        }
    }
    order
}

/// Ready nodes in the order to run them: latest created first, sinks
/// (AccumulateGrad) after the rest, so a gradient shared with a sibling
/// node can be taken over instead of copied.
fn sort_ready(task: &GraphTask, ready: &mut [usize]) {
    ready.sort_by_key(|&i| {
        let seq = task.tasks[i].node.sequence_nr();
        (is_sink(task, i), std::cmp::Reverse(seq))
    });
}

/// Runs `idx`, then keeps running one ready successor inline and spawns the rest.
/// Gradient elements below which a ready node runs on the current thread
/// instead of being spawned: waking a worker costs more than running it.
const SPAWN_MIN_ELEMS: usize = 1 << 15;

/// A node that passes no gradient on (AccumulateGrad).
fn is_sink(task: &GraphTask, idx: usize) -> bool {
    task.tasks[idx]
        .node
        .next_edges()
        .iter()
        .all(Option::is_none)
}

/// The most gradient elements node `idx` takes or produces.
fn size(task: &GraphTask, idx: usize) -> usize {
    let node = &task.tasks[idx].node;
    let numel = |m: &super::node::InputMeta| m.shape.iter().product::<usize>();
    let takes: usize = node.input_meta().iter().map(numel).sum();
    let gives: usize = node
        .next_edges()
        .iter()
        .flatten()
        .filter_map(|e| e.node.input_meta().get(e.input_nr).map(numel))
        .sum();
    takes.max(gives)
}

/// Whether node `idx` is big enough to run on another thread: judged by the
/// gradients it takes and the ones it produces. A sink (AccumulateGrad)
/// never is: it takes its gradient over, or copies it once.
fn worth_spawning(task: &GraphTask, idx: usize) -> bool {
    !is_sink(task, idx) && size(task, idx) >= SPAWN_MIN_ELEMS && crate::parallel::num_threads() > 1
}

/// For a big node `idx`: queues for prefetching, while it runs, what the
/// nodes one and two edges after it saved (in that order). In a chain of
/// matmuls the next matmul's weight and input were saved in the forward
/// and have long left the cache; the GEMM brings them back between its
/// tiles (`kernels::prefetch`).
fn prefetch_ahead(task: &GraphTask, idx: usize) -> Option<crate::kernels::prefetch::Ahead> {
    if is_sink(task, idx) || size(task, idx) < SPAWN_MIN_ELEMS {
        return None;
    }
    let after = |i: usize| task.tasks[i].out.iter().flatten().map(|&(c, _)| c);
    let mut ranges = Vec::new();
    for c in after(idx) {
        task.tasks[c].node.backward().saved_ranges(&mut ranges);
    }
    for c in after(idx) {
        for d in after(c) {
            task.tasks[d].node.backward().saved_ranges(&mut ranges);
        }
    }
    Some(crate::kernels::prefetch::Ahead::new(ranges))
}

/// How a pending interrupt (Ctrl-C) is noticed: the Python bindings
/// install a check that raises KeyboardInterrupt when Python's SIGINT
/// handler has run. Without one (Rust programs) nothing is checked.
static INTERRUPT_CHECK: OnceLock<fn() -> Result<()>> = OnceLock::new();

thread_local! {
    /// When this thread last checked for an interrupt in this backward.
    static INTERRUPT_LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

thread_local! {
    /// `retain_graph` of the backward whose node runs on this thread now.
    static KEEP_GRAPH: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Marks this thread as running a node of a backward that does (or does
/// not) keep its graph, until dropped (nested backwards restore the outer).
struct KeepGraphGuard(Option<bool>);

impl KeepGraphGuard {
    fn enter(keep: bool) -> Self {
        KeepGraphGuard(KEEP_GRAPH.with(|k| k.replace(Some(keep))))
    }
}

impl Drop for KeepGraphGuard {
    fn drop(&mut self) {
        KEEP_GRAPH.with(|k| k.set(self.0));
    }
}

/// torch's `get_current_graph_task_keep_graph`: whether the backward
/// running a node on this thread keeps its graph; true outside backward.
pub fn current_keeps_graph() -> bool {
    KEEP_GRAPH.with(|k| k.get()).unwrap_or(true)
}

/// The longest a backward runs between two interrupt checks.
const INTERRUPT_EVERY: Duration = Duration::from_millis(20);

/// Installs the interrupt check (once; later calls change nothing).
pub fn set_interrupt_check(check: fn() -> Result<()>) {
    let _ = INTERRUPT_CHECK.set(check);
}

/// Runs the interrupt check between nodes, on the thread that called
/// backward (the one Python delivers signals to), at most every
/// [`INTERRUPT_EVERY`]. The error it returns stops the backward like a
/// failing node: nothing more runs, and a retained graph stays usable.
fn check_interrupt() -> Result<()> {
    use INTERRUPT_LAST as LAST;
    let Some(check) = INTERRUPT_CHECK.get() else {
        return Ok(());
    };
    if crate::parallel::pool().current_thread_index().is_some() {
        return Ok(());
    }
    let now = Instant::now();
    match LAST.with(|l| l.get()) {
        // The first check of a backward comes after it ran a while: short
        // ones never take the GIL for it.
        None => LAST.with(|l| l.set(Some(now))),
        Some(t) if now - t >= INTERRUPT_EVERY => {
            LAST.with(|l| l.set(Some(now)));
            return check();
        }
        Some(_) => {}
    }
    Ok(())
}

/// Starts the interrupt clock of a backward on this thread.
fn reset_interrupt_clock() {
    INTERRUPT_LAST.with(|l| l.set(None));
}

/// Runs `ready` from this thread: the first node, then the chain of nodes
/// it makes ready (inline); big independent nodes are spawned on the pool,
/// small ones are queued here and run when the chain ends.
fn run_here<'s>(task: &'s GraphTask, mut ready: Vec<usize>, scope: &rayon::Scope<'s>) {
    let mut queued: Vec<usize> = Vec::new();
    loop {
        sort_ready(task, &mut ready);
        let big = |r: &usize| worth_spawning(task, *r);
        // A big node runs here rather than a small one, which is then
        // spawned too: on this thread (the caller's, most often) the big
        // one's kernels split over the whole pool, and the small one's
        // branch goes on beside it. (A linear layer's weight branch would
        // otherwise send the rest of a network's backward to a worker.)
        let mut spawn_small = false;
        if ready.len() > 1 && !big(&ready[0]) {
            if let Some(pos) = ready.iter().position(big) {
                let r = ready.remove(pos);
                ready.insert(0, r);
                spawn_small = true;
            }
        }
        let spawned = |r: &usize| spawn_small || big(r);
        // Big nodes are spawned in the order the pool takes them back, so
        // that the latest created starts first, as on this thread: a worker
        // pops its own jobs last-in first-out; jobs from any other thread
        // (the caller of backward) go through a first-in first-out queue.
        let rest = &ready[ready.len().min(1)..];
        queued.extend(rest.iter().rev().filter(|r| !spawned(r)));
        if rest.iter().any(spawned) {
            let spawn = |&r: &usize| {
                if spawned(&r) {
                    scope.spawn(move |s| run_here(task, vec![r], s));
                }
            };
            if crate::parallel::pool().current_thread_index().is_none() {
                rest.iter().for_each(spawn);
            } else {
                rest.iter().rev().for_each(spawn);
            }
        }
        let Some(cur) = ready.first().copied().or_else(|| queued.pop()) else {
            return;
        };
        if task.failed.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = check_interrupt() {
            let mut slot = task.error.lock();
            if slot.is_none() {
                *slot = Some(e);
            }
            task.failed.store(true, Ordering::Release);
            return;
        }
        let ahead = prefetch_ahead(task, cur);
        let ran = run_node(task, cur);
        drop(ahead);
        ready = match ran {
            Ok(mut r) => {
                r.extend(task.lane_done(cur));
                task.admit(r)
            }
            Err(e) => {
                let e = match anomaly::is_enabled() {
                    true => anomaly::on_error(&task.tasks[cur].node, e),
                    false => e,
                };
                let mut slot = task.error.lock();
                if slot.is_none() {
                    *slot = Some(e);
                }
                task.failed.store(true, Ordering::Release);
                return;
            }
        };
    }
}

/// Sums slots into per-input gradients, runs hooks and the node, delivers
/// its outputs. Returns the nodes this made ready.
fn run_node(task: &GraphTask, idx: usize) -> Result<Vec<usize>> {
    let t = &task.tasks[idx];
    let node = &t.node;
    let _mode = GradModeGuard::new(task.create_graph);
    let _fw = super::forward::Suspend::new(task.fw_suspended.clone());
    let _task = super::multi_grad_hook::enter(&task.info);

    let mut grads: Vec<Option<Tensor>> = vec![None; node.num_inputs()];
    for (slot, &nr) in t.slots.iter().zip(&t.slot_input_nr) {
        if let Some(g) = slot.lock().take() {
            grads[nr] = Some(match grads[nr].take() {
                None => g,
                Some(acc) => acc.add(&g)?,
            });
        }
    }

    // As in torch: a node that executes has its gradients captured before
    // the tensor hooks run (they run as part of executing it); a node that
    // is only captured runs its tensor hooks first.
    if t.execute {
        for &(nr, ci) in &t.captures {
            *task.captured[ci].lock() = grads[nr].clone();
        }
    }
    run_tensor_pre_hooks(node, &mut grads)?;
    if !t.execute {
        for &(nr, ci) in &t.captures {
            *task.captured[ci].lock() = grads[nr].clone();
        }
        return Ok(Vec::new());
    }
    let _prof = super::profiler::backward_range(node);

    let pre: Vec<_> = node
        .hooks
        .lock()
        .pre
        .iter()
        .map(|(_, h)| h.clone())
        .collect();
    for h in pre {
        if let Some(new) = h(&grads)? {
            grads = new;
        }
    }
    let inputs_for_hooks = if node.hooks.lock().post.is_empty() {
        None
    } else {
        Some(grads.clone())
    };
    let backward = node.backward();
    let _keep = KeepGraphGuard::enter(task.keep_graph);
    let mut outputs = catch_unwind(AssertUnwindSafe(|| backward.apply(node, grads)))
        .unwrap_or_else(|p| {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(Error::internal(format!(
                "internal error in {}: {}",
                node.name(),
                msg
            )))
        })?;
    if let Some(inputs) = inputs_for_hooks {
        let post: Vec<_> = node
            .hooks
            .lock()
            .post
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for h in post {
            if let Some(new) = h(&outputs, &inputs)? {
                outputs = new;
            }
        }
    }
    if anomaly::is_enabled() {
        anomaly::check_outputs(node, &outputs)?;
    }
    if !task.keep_graph {
        backward.release_saved();
    }
    if outputs.len() != node.next_edges().len() {
        bail!(
            runtime,
            "function {} returned an incorrect number of gradients (expected {}, got {})",
            node.name(),
            node.next_edges().len(),
            outputs.len()
        );
    }

    let mut ready = Vec::new();
    for (i, g) in outputs.into_iter().enumerate() {
        let Some((c, slot)) = t.out[i] else { continue };
        let consumer = &task.tasks[c];
        let g = match g {
            Some(g) => Some(validate(
                node,
                i,
                g,
                &consumer.node,
                consumer.slot_input_nr[slot],
            )?),
            None => None,
        };
        *consumer.slots[slot].lock() = g;
        if consumer.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            ready.push(c);
        }
    }
    Ok(ready)
}

/// Tensor hooks and retain_grad for the outputs of `node`. The hooks of a
/// leaf (stored on the tensor) are the tensor hooks of its AccumulateGrad:
/// they run here, before the node's pre-hooks and before a capture.
fn run_tensor_pre_hooks(node: &Node, grads: &mut [Option<Tensor>]) -> Result<()> {
    let (mut hooks, retain): (Vec<_>, Vec<_>) = {
        let h = node.hooks.lock();
        (
            h.tensor_pre
                .iter()
                .map(|p| (p.output_nr, p.hook.clone()))
                .collect(),
            h.retain_grad.clone(),
        )
    };
    if let Some(acc) = node.as_any().downcast_ref::<AccumulateGrad>() {
        acc.variable()
            .peek_meta(|m| hooks.extend(m.hooks.iter().map(|(_, h)| (0, h.clone()))));
    }
    if hooks.is_empty() && retain.is_empty() {
        return Ok(());
    }
    for (nr, hook) in hooks {
        if let Some(new) = hook(grads[nr].as_ref())? {
            if grads[nr].is_none() {
                bail!(
                    runtime,
                    "can't replace a None gradient with a non-None value"
                );
            }
            grads[nr] = Some(new);
        }
    }
    for (nr, weak) in retain {
        if let (Some(g), Some(imp)) = (&grads[nr], weak.upgrade()) {
            retain_into(&Tensor(imp), g)?;
        }
    }
    Ok(())
}

/// Checks a gradient against the consumer's input metadata: sums a
/// broadcast gradient down to the input's shape, casts its dtype.
fn validate(
    producer: &Node,
    i: usize,
    g: Tensor,
    consumer: &Node,
    input_nr: usize,
) -> Result<Tensor> {
    let meta = &consumer.input_meta()[input_nr];
    let mut g = g;
    if g.shape() != &meta.shape[..] {
        if crate::tensor::layout::broadcast_shapes(&meta.shape, g.shape())
            .ok()
            .as_deref()
            != Some(g.shape())
        {
            bail!(
                runtime,
                "Function {} returned an invalid gradient at index {} - got {:?} but expected shape compatible with {:?}",
                producer.name(),
                i,
                g.shape(),
                &meta.shape[..]
            );
        }
        // torch's InputMetadata::reduce_grad (at::sum_to): a view of the
        // keepdim sum when leading dims are dropped, else a tensor of its own
        g = g.sum_to_size(&meta.shape)?;
    }
    if g.dtype() != meta.dtype {
        g = g.to_dtype(meta.dtype)?;
    }
    Ok(g)
}
