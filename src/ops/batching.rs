//! Batching rules: how each op maps over vmap's batch dims.
//!
//! A batched value (torch's BatchedTensorImpl; the binding is
//! `python/core/batched.rs`) is a physical tensor whose leading dims are the
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
    /// torch's `.item()`-like reads of a value: the error torch gives.
    Refuse(&'static str),
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
    // The unary and binary tables: every out-of-place name, alias and
    // out-of-place operator dunder of a row. In-place twins are left to the
    // fallback (a rule runs before the fallback could rerun the function,
    // so nothing may be written before it).
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
        assert_eq!(rule("add_"), None);
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
