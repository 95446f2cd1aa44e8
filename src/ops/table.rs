//! The op table: one row per op declared in a family table (`unary.rs`,
//! `trig.rs`, `special.rs`). The Python bindings, the type stubs, the API
//! docs and the registry tests read these rows (`_C._op_table()`), so a new
//! table entry reaches all of them.

/// How an op's arguments and dtypes look (which binding shape it gets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// One tensor in, one out, computed in a floating dtype.
    UnaryFloat,
}

/// How an op maps over a batch dimension (the hook `vmap` reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRule {
    /// Each output element depends on the same-index input element: the
    /// batch dim passes through unchanged.
    Elementwise,
}

/// One op of a family table.
#[derive(Clone, Copy, Debug)]
pub struct OpRow {
    /// The op's name: `Tensor::name`, `ferrograd.name`, `Tensor.name`.
    pub name: &'static str,
    /// Its in-place twin's name.
    pub inplace: &'static str,
    /// Other names of the op (NumPy's `arc*`), each with a `_` twin.
    pub aliases: &'static [&'static str],
    /// The autograd node it records (torch's name).
    pub node: &'static str,
    /// Its docstring.
    pub doc: &'static str,
    /// Where the op is smooth: the sample domain of the registry tests.
    pub domain: &'static str,
    pub kind: OpKind,
    pub batch: BatchRule,
}

/// Every row of every family table.
pub fn rows() -> impl Iterator<Item = &'static OpRow> {
    [super::unary::ROWS, super::trig::ROWS, super::special::ROWS]
        .into_iter()
        .flatten()
}
