//! The op table: one row per op declared in a family table (the unary
//! tables of `unary.rs`, `trig.rs`, `special.rs`; the binary tables of
//! `arith.rs`, `trig.rs`, `special.rs`). The Python bindings, the type stubs, the API
//! docs and the registry tests read these rows (`_C._op_table()`), so a new
//! table entry reaches all of them.

/// How an op's arguments and dtypes look (which binding shape it gets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// One tensor in, one out, computed in a floating dtype.
    UnaryFloat,
    /// Two operands (a tensor and a tensor or number), broadcast, with
    /// this dtype rule.
    Binary(DtypeRule),
}

/// How a binary op's dtypes are computed (see `ops::arith`).
#[allow(non_camel_case_types)] // the rules' names in the tables
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtypeRule {
    /// In the promoted dtype (bool operands computed in int64).
    numeric,
    /// In the promoted floating dtype.
    float,
    /// Compared in the promoted dtype, a bool result.
    compare,
    /// On the operands' truth values, a bool result.
    logical,
    /// On bool and int64 operands, in their promoted dtype.
    bitwise,
}

/// How an op maps over a batch dimension (the hook `vmap` reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRule {
    /// Each output element depends on the same-index input element: the
    /// batch dim passes through unchanged.
    Elementwise,
    /// Elementwise after broadcasting the operands: the batch dims of both
    /// are moved to the front and broadcast.
    Broadcast,
}

impl OpKind {
    /// The kind's name in `_C._op_table()` (what the stub generator and the
    /// docs group by).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::UnaryFloat => "unary_float",
            OpKind::Binary(DtypeRule::numeric) => "binary_numeric",
            OpKind::Binary(DtypeRule::float) => "binary_float",
            OpKind::Binary(DtypeRule::compare) => "compare",
            OpKind::Binary(DtypeRule::logical) => "logical",
            OpKind::Binary(DtypeRule::bitwise) => "bitwise",
        }
    }
}

impl BatchRule {
    /// The rule's name in `_C._op_table()`.
    pub fn name(self) -> &'static str {
        match self {
            BatchRule::Elementwise => "elementwise",
            BatchRule::Broadcast => "broadcast",
        }
    }
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
    /// The Python binding's shape: `unary`, or a binary table's `plain`,
    /// `alpha` or `written` (see `ops::arith`).
    pub form: &'static str,
    /// The operator dunders bound from the entry (`__add__`, `__radd__`, ...).
    pub dunders: &'static [&'static str],
}

/// Every row of every family table.
pub fn rows() -> impl Iterator<Item = &'static OpRow> {
    [
        super::unary::ROWS,
        super::trig::ROWS,
        super::special::ROWS,
        super::special_more::ROWS,
        super::arith::BINARY_ROWS,
        super::trig::BINARY_ROWS,
        super::special::BINARY_ROWS,
        super::compare::COMPARE_ROWS,
    ]
    .into_iter()
    .flatten()
}
