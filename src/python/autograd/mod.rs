//! Autograd from Python: custom Functions, hooks, graph nodes, the engine's
//! entry points, anomaly mode, the profiler and forward AD.

pub(crate) mod anomaly;
pub(crate) mod body;
pub(crate) mod engine;
pub(crate) mod forward_ad;
pub(crate) mod function;
pub(crate) mod graph;
pub(crate) mod hooks;
pub(crate) mod node;
pub(crate) mod profiler;
pub(crate) mod stash;
