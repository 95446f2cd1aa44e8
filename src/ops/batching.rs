//! Batching rules: how each op maps over vmap's batch dims.
//!
//! A batched value (torch's BatchedTensorImpl; the binding is
//! `python/core/batched/`) is a physical tensor whose leading dims are the
//! batch dims of its vmap levels, one per level in increasing level order,
//! followed by the logical (per-sample) dims. Every rule below keeps that
//! form: it shifts dim arguments past the batch dims, prefixes shapes with
//! the batch sizes, aligns operands (missing levels and missing logical
//! dims become size-1 dims) and then runs the ordinary op once on the
//! physical tensors, so the math, and the autograd graph, are the op's own.
//! The op families' rules are listed per family here, as their derivatives
//! are in the family files; the unary and binary table ops take theirs
//! from their table rows (`table::BatchRule`). An op without a rule runs
//! vmap's per-slice fallback, which names it in a one-time warning.

use super::table::{rows, BatchRule};

/// What a rule does with an op's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Pointwise over its tensor arguments after broadcasting them
    /// (batch dims aligned to the front, logical dims right-aligned).
    Pointwise,
    /// Runs on the physical tensor with its arguments unchanged and returns
    /// an unbatched result (`new_zeros(shape)`, ...), or passes a flag
    /// through and returns self (`requires_grad_`).
    Plain,
    /// Returns self after running on the physical tensor.
    SelfInplace,
    /// A reduction over `dim` (argument `pos`, or keyword `dim`), all
    /// logical dims when it is absent or None: `all` says how.
    Reduce { pos: usize, all: AllDims },
    /// One dim argument at `pos` (keyword `dim`) with a default when
    /// absent, wrapped against the logical rank (`extra` more for
    /// `unsqueeze`) and shifted past the batch dims.
    AlongDim {
        pos: usize,
        default: Option<i64>,
        extra: usize,
    },
    /// Two dim arguments at positions 0 and 1 (transpose, movedim).
    TwoDims,
    /// `permute(*dims)`.
    Permute,
    /// A list of dims, each shifted (`flip(dims)`).
    DimList,
    /// `flatten(start_dim=0, end_dim=-1)`.
    Flatten,
    /// `view(*shape)` / `reshape(*shape)`: the batch sizes prefixed.
    Shape,
    /// `expand(*sizes)`: logical dims padded, batch sizes prefixed.
    Expand,
    /// `view_as`/`reshape_as`/`expand_as(other)`: the logical shape of other.
    AsOther,
    /// `squeeze(dim=None)`.
    Squeeze,
    /// `t()`.
    T,
    /// `__getitem__` with ints, slices, None, Ellipsis and at most one
    /// unbatched integer tensor.
    Index,
    /// `matmul` and its fixed-rank forms (the logical ranks they accept).
    Matmul(MatmulRanks),
    /// `diagonal(offset=0, dim1=0, dim2=1)`: both dims shifted.
    Diagonal,
    /// `gather(dim, index)`: self and index batched over the union of
    /// their levels (expanded), dim shifted.
    Gather,
    /// `trace()` of a matrix: the sum of its diagonal.
    Trace,
    /// An op on the last `k` dims that takes any leading dims as a batch
    /// (`det`, `tril`): its arguments unchanged, when the logical rank is
    /// at least `k`.
    Trailing(usize),
    /// An op that takes leading dims as a batch (or broadcasts them), its
    /// dim arguments made negative so that they count from the end: see
    /// [`DimsRule`].
    Dims(&'static DimsRule),
    /// `repeat(*sizes)` (`tile`: the sizes padded with leading ones first).
    Repeat { tile: bool },
    /// `diag(diagonal=0)`: a vector's diagonal matrix, a matrix's diagonal.
    Diag,
    /// `msort()`: sorted along the first logical dim.
    Msort,
    /// `addmm`/`addmv`/`baddbmm`/`addbmm(a, b, *, beta, alpha)`: the batched
    /// product (`bmm` summed over its first dim for `addbmm`), then
    /// `beta * self + alpha * product` once on the physical tensors.
    AddProduct(MatmulRanks),
    /// `inner(other)`: rows of both flattened, one batched `mm`, reshaped.
    Inner,
    /// `kron(other)` with `other` unbatched: self's batch dims stay leading
    /// (`other` is padded with size-1 dims there).
    Kron,
    /// `index_add`/`index_copy`/`index_fill(dim, index, source|value)`
    /// and `scatter_add(dim, index, src)`, and their in-place forms: self
    /// and the source expanded to the union of their levels (the index
    /// too for `scatter_add`, whose index has self's rank), dim shifted.
    IndexUpdate { scatter: bool },
    /// The in-place twin (`add_`) of a pointwise op: run on self's
    /// physical tensor, each other operand aligned to self's levels.
    PointwiseInplace,
    /// torch's `.item()`-like reads of a value: the error torch gives.
    Refuse(&'static str),
}

/// A [`Rule::Dims`] op: self and the tensor `operands` are aligned to the
/// union of their levels (broadcasting ops: size-1 dims where a level or a
/// leading logical dim is missing; others: every operand expanded to the
/// batch sizes, with self's logical rank), each dim argument is made
/// negative against the logical rank, and the op runs once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimsRule {
    pub dims: &'static [DimArg],
    /// Other tensor operands: (position after self, keyword).
    pub operands: &'static [(usize, &'static str)],
    /// How the operands' logical dims line up with self's.
    pub align: Align,
    /// The smallest logical rank of self (and of broadcast operands) the
    /// op accepts (else the per-slice run raises the op's error).
    pub min_rank: usize,
    /// The first operand is a right-hand side that `linalg.solve` takes
    /// for a (batch of) vector(s) when it has one dim, or self's dims but
    /// the last: those take the fallback (aligned, it would be a matrix).
    pub rhs_vectors: bool,
}

/// How a [`DimsRule`]'s operands line up with self. Every batch dim is
/// expanded to its size in each of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// They broadcast: each one aligned to the highest logical rank
    /// (size-1 leading dims where it has fewer).
    Broadcast,
    /// Each has self's logical rank (except when a dim argument's absence
    /// flattens them all).
    Same,
    /// Operand `i` has self's logical rank plus `offsets[i]`, its dims as
    /// they are (`lu_solve`'s pivots: one fewer).
    Ranks(&'static [i64]),
}

/// A dim argument of a [`DimsRule`]: position after self, keyword, and what
/// its absence (or None) means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimArg {
    pub pos: usize,
    pub kw: &'static str,
    pub absent: Absent,
}

/// What an absent (or None) dim argument stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    /// These logical dims (the op's default).
    Dims(&'static [i64]),
    /// Every logical dim (a reduction over all of them).
    All,
    /// Every logical dim of a vector or a matrix (`linalg.norm`); other
    /// ranks take the fallback.
    VectorOrMatrix,
    /// The logical dims flattened into one and the op run along it;
    /// `keep_shape`: the result reshaped back (`roll`).
    Flatten { keep_shape: bool },
    /// No default that a rule can give: the fallback.
    Fallback,
}

/// How a reduction with no dim reduces every logical dim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllDims {
    /// Passes the tuple of every logical dim as `dim`.
    Tuple,
    /// `max()`/`min()` with no dim: `amax`/`amin` over every logical dim.
    Amax,
    /// `argmax()`/`argmin()` with no dim: over the flattened logical dims.
    Flat,
}

/// The logical ranks `mm`/`bmm`/`mv`/`dot` accept (`matmul`: any >= 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatmulRanks {
    Any,
    Mm,
    Bmm,
    Mv,
    Dot,
}

/// torch's message for `.item()` (and `float()`, `int()`) on a batched value.
pub const ITEM: &str = "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere inside PyTorch internals, please file a bug report.";
/// torch's message for `bool()` of a batched value (data-dependent control flow).
pub const CONTROL_FLOW: &str = "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .";
/// torch's message for reading a batched value's data (`tolist`, `numpy`).
pub const DATA: &str = "Cannot access data pointer of Tensor that doesn't have storage";

const fn along(pos: usize, default: Option<i64>) -> Rule {
    Rule::AlongDim {
        pos,
        default,
        extra: 0,
    }
}

const fn reduce(pos: usize) -> Rule {
    Rule::Reduce {
        pos,
        all: AllDims::Tuple,
    }
}

/// Reductions (`reduce/`, `softmax.rs`, `sort.rs`): the dim shifts past the batch dims.
const REDUCE_RULES: &[(&str, Rule)] = &[
    ("sum", reduce(0)),
    ("nansum", reduce(0)),
    ("mean", reduce(0)),
    ("nanmean", reduce(0)),
    (
        "prod",
        Rule::Reduce {
            pos: 0,
            all: AllDims::Flat,
        },
    ),
    ("amax", reduce(0)),
    ("amin", reduce(0)),
    ("logsumexp", along(0, None)),
    ("std", reduce(0)),
    ("var", reduce(0)),
    ("norm", reduce(1)),
    ("count_nonzero", reduce(0)),
    (
        "max",
        Rule::Reduce {
            pos: 0,
            all: AllDims::Amax,
        },
    ),
    (
        "min",
        Rule::Reduce {
            pos: 0,
            all: AllDims::Amax,
        },
    ),
    (
        "argmax",
        Rule::Reduce {
            pos: 0,
            all: AllDims::Flat,
        },
    ),
    (
        "argmin",
        Rule::Reduce {
            pos: 0,
            all: AllDims::Flat,
        },
    ),
    ("softmax", along(0, None)),
    ("log_softmax", along(0, None)),
    ("cumsum", along(0, None)),
    ("cumprod", along(0, None)),
    ("logcumsumexp", along(0, None)),
    ("sort", along(0, Some(-1))),
    ("argsort", along(0, Some(-1))),
    ("topk", along(1, Some(-1))),
    ("kthvalue", along(1, Some(-1))),
];

/// Views and shape ops (`view.rs`, `shape.rs`, `join.rs`, `index/`).
const VIEW_RULES: &[(&str, Rule)] = &[
    ("view", Rule::Shape),
    ("reshape", Rule::Shape),
    ("expand", Rule::Expand),
    ("view_as", Rule::AsOther),
    ("reshape_as", Rule::AsOther),
    ("expand_as", Rule::AsOther),
    ("permute", Rule::Permute),
    ("transpose", Rule::TwoDims),
    ("swapaxes", Rule::TwoDims),
    ("swapdims", Rule::TwoDims),
    ("movedim", Rule::TwoDims),
    ("moveaxis", Rule::TwoDims),
    ("t", Rule::T),
    (
        "unsqueeze",
        Rule::AlongDim {
            pos: 0,
            default: None,
            extra: 1,
        },
    ),
    ("squeeze", Rule::Squeeze),
    ("flatten", Rule::Flatten),
    ("unflatten", along(0, None)),
    ("select", along(0, None)),
    ("narrow", along(0, None)),
    ("index_select", along(0, None)),
    ("unbind", along(0, Some(0))),
    ("chunk", along(1, Some(0))),
    ("split", along(1, Some(0))),
    ("flip", Rule::DimList),
    ("diagonal", Rule::Diagonal),
    ("gather", Rule::Gather),
    ("trace", Rule::Trace),
    ("__getitem__", Rule::Index),
];

/// Matrix products (`linalg.rs`, `addmm.rs`).
const MATMUL_RULES: &[(&str, Rule)] = &[
    ("matmul", Rule::Matmul(MatmulRanks::Any)),
    ("__matmul__", Rule::Matmul(MatmulRanks::Any)),
    ("__rmatmul__", Rule::Matmul(MatmulRanks::Any)),
    ("mm", Rule::Matmul(MatmulRanks::Mm)),
    ("bmm", Rule::Matmul(MatmulRanks::Bmm)),
    ("mv", Rule::Matmul(MatmulRanks::Mv)),
    ("dot", Rule::Matmul(MatmulRanks::Dot)),
    ("vdot", Rule::Matmul(MatmulRanks::Dot)),
];

/// Ops on the trailing matrix dims (`linalg.rs`, `decomp.rs`, `shape.rs`).
const TRAILING_RULES: &[(&str, Rule)] = &[
    ("det", Rule::Trailing(2)),
    ("logdet", Rule::Trailing(2)),
    ("slogdet", Rule::Trailing(2)),
    ("inverse", Rule::Trailing(2)),
    ("cholesky", Rule::Trailing(2)),
    ("cholesky_inverse", Rule::Trailing(2)),
    ("pinverse", Rule::Trailing(2)),
    ("matrix_power", Rule::Trailing(2)),
    ("matrix_exp", Rule::Trailing(2)),
    ("svd", Rule::Trailing(2)),
    ("qr", Rule::Trailing(2)),
    ("tril", Rule::Trailing(2)),
    ("triu", Rule::Trailing(2)),
];

const fn dim(pos: usize, kw: &'static str, absent: Absent) -> DimArg {
    DimArg { pos, kw, absent }
}

const fn dims_rule(dims: &'static [DimArg], min_rank: usize) -> DimsRule {
    DimsRule {
        dims,
        operands: &[],
        align: Align::Same,
        min_rank,
        rhs_vectors: false,
    }
}

/// Matrix operands, their batch dims broadcast (the solves).
const fn matrices(operands: &'static [(usize, &'static str)], rhs_vectors: bool) -> DimsRule {
    DimsRule {
        dims: &[],
        operands,
        align: Align::Broadcast,
        min_rank: 2,
        rhs_vectors,
    }
}

const LAST: Absent = Absent::Dims(&[-1]);
const MATRIX: Absent = Absent::Dims(&[-2, -1]);

/// Ops that take leading dims as a batch, their dims counted from the end
/// (`shape.rs`, `combine.rs`, `reduce.rs`, `decomp_more.rs`,
/// `activation.rs`); the `linalg.` and `special.` names are module
/// functions only.
const DIMS_RULES: &[(&str, DimsRule)] = &[
    (
        "roll",
        dims_rule(&[dim(1, "dims", Absent::Flatten { keep_shape: true })], 1),
    ),
    (
        "rot90",
        dims_rule(&[dim(1, "dims", Absent::Dims(&[0, 1]))], 2),
    ),
    (
        "diff",
        DimsRule {
            dims: &[dim(1, "dim", LAST)],
            operands: &[(2, "prepend"), (3, "append")],
            align: Align::Same,
            min_rank: 1,
            rhs_vectors: false,
        },
    ),
    (
        "take_along_dim",
        DimsRule {
            dims: &[dim(1, "dim", Absent::Flatten { keep_shape: false })],
            operands: &[(0, "indices")],
            align: Align::Same,
            min_rank: 1,
            rhs_vectors: false,
        },
    ),
    (
        "repeat_interleave",
        dims_rule(&[dim(1, "dim", Absent::Flatten { keep_shape: false })], 1),
    ),
    ("var_mean", dims_rule(&[dim(0, "dim", Absent::All)], 1)),
    ("std_mean", dims_rule(&[dim(0, "dim", Absent::All)], 1)),
    (
        "normalize",
        dims_rule(&[dim(1, "dim", Absent::Dims(&[1]))], 1),
    ),
    (
        "cross",
        DimsRule {
            dims: &[dim(1, "dim", Absent::Fallback)],
            operands: &[(0, "other")],
            align: Align::Same,
            min_rank: 1,
            rhs_vectors: false,
        },
    ),
    (
        "linalg.cross",
        DimsRule {
            dims: &[dim(1, "dim", LAST)],
            operands: &[(0, "other")],
            align: Align::Same,
            min_rank: 1,
            rhs_vectors: false,
        },
    ),
    (
        "linalg.vecdot",
        DimsRule {
            dims: &[dim(1, "dim", LAST)],
            operands: &[(0, "y")],
            align: Align::Broadcast,
            min_rank: 1,
            rhs_vectors: false,
        },
    ),
    ("linalg.matrix_norm", dims_rule(&[dim(1, "dim", MATRIX)], 2)),
    (
        "linalg.norm",
        dims_rule(&[dim(1, "dim", Absent::VectorOrMatrix)], 1),
    ),
    (
        "linalg.diagonal",
        dims_rule(
            &[
                dim(1, "dim1", Absent::Dims(&[-2])),
                dim(2, "dim2", Absent::Dims(&[-1])),
            ],
            2,
        ),
    ),
    ("linalg.vander", dims_rule(&[], 1)),
    ("linalg.solve", matrices(&[(0, "B")], true)),
    ("linalg.solve_ex", matrices(&[(0, "B")], true)),
    ("linalg.lstsq", matrices(&[(0, "B")], true)),
    ("linalg.solve_triangular", matrices(&[(0, "B")], false)),
    ("cholesky_solve", matrices(&[(0, "input2")], false)),
    ("triangular_solve", matrices(&[(0, "A")], false)),
    (
        "lu_unpack",
        DimsRule {
            operands: &[(0, "LU_pivots")],
            align: Align::Ranks(&[-1]),
            ..matrices(&[], false)
        },
    ),
    (
        "linalg.lu_solve",
        DimsRule {
            operands: &[(0, "pivots"), (1, "B")],
            align: Align::Ranks(&[-1, 0]),
            ..matrices(&[], false)
        },
    ),
];

/// Pointwise ops outside the unary/binary tables (`activation.rs`,
/// `ternary.rs`, `pointwise.rs`, `convert.rs`): their tensor arguments
/// broadcast.
const POINTWISE_RULES: &[&str] = &[
    "relu",
    "clone",
    "detach",
    "contiguous",
    "float",
    "double",
    "half",
    "long",
    "int",
    "bool",
    "to",
    "type_as",
    "where",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "masked_fill",
    "lerp",
    "addcmul",
    "addcdiv",
    "pow",
    "__add__",
    "__radd__",
    "__sub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__pow__",
    "__rpow__",
    "__neg__",
    "__abs__",
    "__invert__",
    "__rsub__",
    "__rtruediv__",
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__and__",
    "__or__",
    "__xor__",
    "__rand__",
    "__ror__",
    "__rxor__",
    "sign",
    "sigmoid",
    "tanh",
    "softplus",
    "nan_to_num",
    "isnan",
    "isinf",
    "isfinite",
    "logical_not",
    "square",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "abs",
    "neg",
    "exp",
    "log",
    "sin",
    "cos",
    "floor",
    "ceil",
    "trunc",
    "frac",
    "fix",
    "round",
    "deg2rad",
    "rad2deg",
    "logaddexp",
    "logaddexp2",
    "logit",
    "mvlgamma",
    "polygamma",
];

/// Methods that read nothing of the values: run on the physical tensor,
/// an unbatched result.
const PLAIN_RULES: &[&str] = &[
    "new_zeros",
    "new_ones",
    "new_full",
    "new_empty",
    "new_tensor",
    "is_floating_point",
    "is_complex",
    "element_size",
    "get_device",
    "is_contiguous",
];

/// The rule of the method or function `name`, if it has one.
pub fn rule(name: &str) -> Option<Rule> {
    if let Some((_, r)) = REDUCE_RULES
        .iter()
        .chain(VIEW_RULES)
        .chain(MATMUL_RULES)
        .chain(TRAILING_RULES)
        .find(|(n, _)| *n == name)
    {
        return Some(*r);
    }
    if let Some((_, r)) = DIMS_RULES.iter().find(|(n, _)| *n == name) {
        return Some(Rule::Dims(r));
    }
    match name {
        "repeat" => return Some(Rule::Repeat { tile: false }),
        "tile" => return Some(Rule::Repeat { tile: true }),
        "diag" => return Some(Rule::Diag),
        "msort" => return Some(Rule::Msort),
        "inner" => return Some(Rule::Inner),
        "index_add" | "index_copy" | "index_fill" | "index_add_" | "index_copy_"
        | "index_fill_" => return Some(Rule::IndexUpdate { scatter: false }),
        "scatter_add" | "scatter_add_" => return Some(Rule::IndexUpdate { scatter: true }),
        "kron" => return Some(Rule::Kron),
        "addmm" => return Some(Rule::AddProduct(MatmulRanks::Mm)),
        "addmv" => return Some(Rule::AddProduct(MatmulRanks::Mv)),
        "baddbmm" | "addbmm" => return Some(Rule::AddProduct(MatmulRanks::Bmm)),
        _ => {}
    }
    match name {
        "item" | "__float__" | "__int__" | "__index__" | "__complex__" => {
            return Some(Rule::Refuse(ITEM))
        }
        "__bool__" => return Some(Rule::Refuse(CONTROL_FLOW)),
        "tolist" | "numpy" | "data_ptr" => return Some(Rule::Refuse(DATA)),
        "requires_grad_" | "retain_grad" => return Some(Rule::SelfInplace),
        _ => {}
    }
    if POINTWISE_RULES.contains(&name) {
        return Some(Rule::Pointwise);
    }
    if PLAIN_RULES.contains(&name) {
        return Some(Rule::Plain);
    }
    // The in-place twin of a pointwise op: its rule checks that the write
    // cannot change what a fallback would rerun (see `python/core/batched/`).
    if let Some(base) = name.strip_suffix('_').filter(|b| !b.starts_with("__")) {
        if rule(base) == Some(Rule::Pointwise) {
            return Some(Rule::PointwiseInplace);
        }
    }
    // The unary and binary tables: every out-of-place name, alias and
    // out-of-place operator dunder of a row.
    for row in rows() {
        let pointwise = matches!(row.batch, BatchRule::Elementwise | BatchRule::Broadcast);
        if !pointwise {
            continue;
        }
        if row.name == name
            || row.aliases.contains(&name)
            || (row.dunders.contains(&name) && !name.starts_with("__i"))
        {
            return Some(Rule::Pointwise);
        }
    }
    None
}

/// Every name with a rule in the lists above (not the table rows).
pub fn listed() -> impl Iterator<Item = &'static str> {
    REDUCE_RULES
        .iter()
        .chain(VIEW_RULES)
        .chain(MATMUL_RULES)
        .chain(TRAILING_RULES)
        .map(|(n, _)| *n)
        .chain(DIMS_RULES.iter().map(|(n, _)| *n))
        .chain(POINTWISE_RULES.iter().copied())
        .chain(PLAIN_RULES.iter().copied())
}

/// The physical shape that aligns an operand with batch levels `have`
/// (sizes in `sizes`) to the union `all` of levels and to `rank` logical
/// dims: a size-1 dim for each level it lacks and for each missing leading
/// logical dim.
pub fn aligned_shape(
    have: &[u32],
    all: &[(u32, usize)],
    logical: &[usize],
    rank: usize,
) -> Vec<usize> {
    let mut shape = Vec::with_capacity(all.len() + rank);
    for (lvl, size) in all {
        shape.push(if have.contains(lvl) { *size } else { 1 });
    }
    shape.extend(std::iter::repeat_n(1, rank.saturating_sub(logical.len())));
    shape.extend_from_slice(logical);
    shape
}

/// The sorted union of levels of several operands.
pub fn union_levels<'a>(levels: impl Iterator<Item = &'a [(u32, usize)]>) -> Vec<(u32, usize)> {
    let mut all: Vec<(u32, usize)> = levels.flatten().copied().collect();
    all.sort_unstable();
    all.dedup_by_key(|(l, _)| *l);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_list_ops_have_rules() {
        assert_eq!(rule("sum"), Some(reduce(0)));
        assert_eq!(rule("exp"), Some(Rule::Pointwise));
        assert_eq!(rule("add"), Some(Rule::Pointwise));
        assert_eq!(rule("__radd__"), Some(Rule::Pointwise));
        assert_eq!(rule("add_"), Some(Rule::PointwiseInplace));
        assert_eq!(rule("__iadd__"), None);
        assert_eq!(rule("item"), Some(Rule::Refuse(ITEM)));
        assert_eq!(rule("no_such_op"), None);
        assert!(listed().all(|n| rule(n).is_some()));
    }

    #[test]
    fn alignment_inserts_missing_levels_and_dims() {
        let all = union_levels([&[(1, 3)][..], &[(2, 5)][..]].into_iter());
        assert_eq!(all, vec![(1, 3), (2, 5)]);
        assert_eq!(aligned_shape(&[2], &all, &[4], 2), vec![1, 5, 1, 4]);
        assert_eq!(aligned_shape(&[1, 2], &all, &[2, 4], 2), vec![3, 5, 2, 4]);
    }
}
