//! The DOT text of a backward graph (Graphviz), as torchviz's `make_dot`
//! draws it: `ferrograd.autograd.graph.to_dot` from Python, and any Rust
//! program that wants to look at the graph it built.

use super::{AccumulateGrad, Node};
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// A shape as Python prints a tuple: `(3,)`, `(2, 4)`.
fn shape_str(s: &[usize]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}

/// A tensor's box: its name (if it has one) over its shape, escaped.
fn tensor_label(name: Option<&str>, t: &Tensor) -> String {
    match name {
        Some(n) => esc(&format!("{n}\n{}", shape_str(t.shape()))),
        None => esc(&shape_str(t.shape())),
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// The DOT text of the backward graph of `roots` (torchviz's `make_dot`
/// layout: roots in green, leaves in blue with their `params` name and
/// shape, saved tensors in orange with dashed edges when `show_saved`).
pub fn graph_to_dot(
    roots: &[(Tensor, Option<String>)],
    params: &HashMap<usize, String>,
    show_saved: bool,
) -> String {
    let mut out = String::from(
        "digraph {\n\tgraph [size=\"12,12\"]\n\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 shape=box style=filled]\n",
    );
    let mut seen: HashMap<usize, ()> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (i, (t, name)) in roots.iter().enumerate() {
        let id = format!("out{i}");
        let label = tensor_label(name.as_deref(), t);
        let _ = writeln!(out, "\t{id} [label=\"{label}\" fillcolor=darkolivegreen1]");
        if let Some(f) = t.grad_fn() {
            let _ = writeln!(out, "\tn{} -> {id}", key(&f));
            stack.push(f);
        }
    }
    while let Some(n) = stack.pop() {
        let k = key(&n);
        if seen.insert(k, ()).is_some() {
            continue;
        }
        match n.backward().as_any().downcast_ref::<AccumulateGrad>() {
            Some(acc) => {
                let v = &acc.variable();
                let name = params.get(&(Arc::as_ptr(&v.0) as usize));
                let label = tensor_label(name.map(String::as_str), v);
                let _ = writeln!(out, "\tn{k} [label=\"{label}\" fillcolor=lightblue]");
            }
            None => {
                let _ = writeln!(out, "\tn{k} [label=\"{}\"]", esc(&n.name()));
                if show_saved {
                    for (si, sname) in n.backward().saved_names().into_iter().enumerate() {
                        if let Some(Ok(t)) = n.backward().saved(sname, &n) {
                            let label = format!("{}\n{}", sname, shape_str(t.shape()));
                            let _ = writeln!(
                                out,
                                "\ts{k}_{si} [label=\"{}\" fillcolor=orange]",
                                esc(&label)
                            );
                            let _ = writeln!(out, "\ts{k}_{si} -> n{k} [dir=none style=dashed]");
                        }
                    }
                }
            }
        }
        for e in n.next_edges().iter().flatten() {
            let _ = writeln!(out, "\tn{} -> n{k}", key(&e.node));
            if !seen.contains_key(&key(&e.node)) {
                stack.push(e.node.clone());
            }
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_names_roots_ops_and_leaves() {
        let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        w.set_requires_grad(true).unwrap();
        let y = w.mul(&w).unwrap().sum().unwrap();
        let names = HashMap::from([(Arc::as_ptr(&w.0) as usize, "w".to_string())]);
        let dot = graph_to_dot(&[(y, Some("loss".into()))], &names, true);
        assert!(dot.starts_with("digraph {"), "{dot}");
        assert!(
            dot.contains("out0 [label=\"loss\\n()\" fillcolor=darkolivegreen1]"),
            "{dot}"
        );
        assert!(
            dot.contains("label=\"w\\n(3,)\" fillcolor=lightblue"),
            "{dot}"
        );
        assert!(dot.contains("SumBackward0"), "{dot}");
        assert!(dot.contains("MulBackward0"), "{dot}");
        assert!(
            dot.contains("fillcolor=orange"),
            "saved tensors shown: {dot}"
        );
        assert!(dot.ends_with("}\n"));
    }
}
