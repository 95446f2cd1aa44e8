//! Ops composed of other differentiable ops (views, cat, index_select,
//! gather, mm, mul), so their gradients of every order follow:
//! meshgrid, atleast_{1,2,3}d, vstack/hstack/dstack/
//! column_stack, tensordot, kron, cross, diff, take_along_dim, rot90.

use super::to_i64;
use crate::tensor::layout::wrap_dim;
use crate::{bail, Result, Tensor};

impl Tensor {
    /// Reshaped to at least `n` (1, 2 or 3) dims, as torch's atleast_nd.
    pub fn atleast(&self, n: usize) -> Result<Tensor> {
        match atleast_shape(self.shape(), n)? {
            Some(shape) => self.reshape(&shape),
            None => Ok(self.clone()),
        }
    }

    /// `torch.tensordot`: contracts `dims_a` of self with `dims_b` of other.
    pub fn tensordot(&self, other: &Tensor, dims_a: &[i64], dims_b: &[i64]) -> Result<Tensor> {
        if dims_a.len() != dims_b.len() {
            bail!(runtime, "both dimension lists should have same length");
        }
        let ca: Vec<usize> = dims_a
            .iter()
            .map(|&d| wrap_dim(d, self.ndim()))
            .collect::<Result<_>>()?;
        let cb: Vec<usize> = dims_b
            .iter()
            .map(|&d| wrap_dim(d, other.ndim()))
            .collect::<Result<_>>()?;
        for (&i, &j) in ca.iter().zip(&cb) {
            if self.shape()[i] != other.shape()[j] {
                bail!(
                    runtime,
                    "contracted dimensions need to match, but first has size {} in dim {i} and second has size {} in dim {j}",
                    self.shape()[i],
                    other.shape()[j]
                );
            }
        }
        let free_a: Vec<usize> = (0..self.ndim()).filter(|d| !ca.contains(d)).collect();
        let free_b: Vec<usize> = (0..other.ndim()).filter(|d| !cb.contains(d)).collect();
        let size =
            |t: &Tensor, ds: &[usize]| ds.iter().map(|&d| t.shape()[d]).product::<usize>() as i64;
        let order_a: Vec<i64> = free_a.iter().chain(&ca).map(|&d| d as i64).collect();
        let order_b: Vec<i64> = cb.iter().chain(&free_b).map(|&d| d as i64).collect();
        let k = size(self, &ca);
        let a = self.permute(&order_a)?.reshape(&[size(self, &free_a), k])?;
        let b = other
            .permute(&order_b)?
            .reshape(&[k, size(other, &free_b)])?;
        let mut shape: Vec<i64> = free_a.iter().map(|&d| self.shape()[d] as i64).collect();
        shape.extend(free_b.iter().map(|&d| other.shape()[d] as i64));
        a.mm(&b)?.reshape(&shape)
    }

    /// The Kronecker product: block (i, j, ...) is self[i, j, ...] * other.
    pub fn kron(&self, other: &Tensor) -> Result<Tensor> {
        let n = self.ndim().max(other.ndim());
        let pad = |t: &Tensor| {
            let mut s = vec![1i64; n - t.ndim()];
            s.extend(to_i64(t.shape()));
            s
        };
        let (sa, sb) = (pad(self), pad(other));
        let interleave = |s: &[i64], first: bool| -> Vec<i64> {
            s.iter()
                .flat_map(|&d| if first { [d, 1] } else { [1, d] })
                .collect()
        };
        let a = self.reshape(&interleave(&sa, true))?;
        let b = other.reshape(&interleave(&sb, false))?;
        let shape: Vec<i64> = sa.iter().zip(&sb).map(|(x, y)| x * y).collect();
        a.mul(&b)?.reshape(&shape)
    }

    /// The cross product along `dim` (of size 3), the operands broadcast.
    pub fn cross(&self, other: &Tensor, dim: i64) -> Result<Tensor> {
        let shape = crate::tensor::layout::broadcast_shapes(self.shape(), other.shape())?;
        let d = wrap_dim(dim, shape.len())?;
        if self.ndim() != other.ndim() {
            bail!(
                runtime,
                "linalg.cross: inputs must have the same number of dimensions."
            );
        }
        if self.shape()[d] != 3 || other.shape()[d] != 3 {
            bail!(
                runtime,
                "linalg.cross: inputs dimension {d} must have length 3. Got {} and {}",
                self.shape()[d],
                other.shape()[d]
            );
        }
        let (a, b) = (
            self.expand(&to_i64(&shape))?,
            other.expand(&to_i64(&shape))?,
        );
        let at = |t: &Tensor, idx: [i64; 3]| {
            t.index_select(d as i64, &Tensor::from_vec(idx.to_vec(), &[3])?)
        };
        let (a1, a2) = (at(&a, [1, 2, 0])?, at(&a, [2, 0, 1])?);
        let (b1, b2) = (at(&b, [1, 2, 0])?, at(&b, [2, 0, 1])?);
        a1.mul(&b2)?.sub(&a2.mul(&b1)?)
    }

    /// The n-th forward difference along `dim`, after joining `prepend`
    /// and `append`.
    pub fn diff(
        &self,
        n: i64,
        dim: i64,
        prepend: Option<&Tensor>,
        append: Option<&Tensor>,
    ) -> Result<Tensor> {
        if n < 0 {
            bail!(runtime, "order must be non-negative but got {n}");
        }
        if self.ndim() == 0 {
            bail!(runtime, "diff expects input to be at least one-dimensional");
        }
        if self.dtype() == crate::DType::Bool {
            bail!(runtime, "ferrograd: diff of a bool tensor is not supported");
        }
        let d = wrap_dim(dim, self.ndim())? as i64;
        let parts: Vec<Tensor> = prepend
            .into_iter()
            .chain(std::iter::once(self))
            .chain(append)
            .cloned()
            .collect();
        let mut x = if parts.len() == 1 {
            self.clone()
        } else {
            Tensor::cat(&parts, d)?
        };
        for _ in 0..n {
            let len = x.shape()[d as usize];
            if len == 0 {
                break;
            }
            x = x.narrow(d, 1, len - 1)?.sub(&x.narrow(d, 0, len - 1)?)?;
        }
        Ok(x)
    }

    /// Values at `indices` along `dim` (the two broadcast on the other
    /// dims); with no dim, of the flattened tensors.
    pub fn take_along_dim(&self, indices: &Tensor, dim: Option<i64>) -> Result<Tensor> {
        let Some(dim) = dim else {
            return self.reshape(&[-1])?.gather(0, &indices.reshape(&[-1])?);
        };
        if self.ndim() != indices.ndim() {
            bail!(
                runtime,
                "torch.take_along_dim(): input and indices should have the same number of dimensions, but got {} dimensions for input, and {} dimensions for indices",
                self.ndim(),
                indices.ndim()
            );
        }
        let d = wrap_dim(dim, self.ndim())?;
        let mut ss = self.shape().to_vec();
        let mut si = indices.shape().to_vec();
        ss[d] = 1;
        si[d] = 1;
        let common = crate::tensor::layout::broadcast_shapes(&ss, &si)?;
        let with = |t: &Tensor| {
            let mut s = to_i64(&common);
            s[d] = t.shape()[d] as i64;
            t.expand(&s)
        };
        with(self)?.gather(d as i64, &with(indices)?)
    }

    /// Rotated by 90 degrees `k` times, from `dims[0]` towards `dims[1]`.
    pub fn rot90(&self, k: i64, dims: &[i64]) -> Result<Tensor> {
        if dims.len() != 2 {
            bail!(
                runtime,
                "expected total rotation dims == 2, but got dims = {}",
                dims.len()
            );
        }
        if self.ndim() < 2 {
            bail!(
                runtime,
                "expected total dims >= 2, but got total dims = {}",
                self.ndim()
            );
        }
        let (d0, d1) = (
            wrap_dim(dims[0], self.ndim())?,
            wrap_dim(dims[1], self.ndim())?,
        );
        if d0 == d1 {
            bail!(
                runtime,
                "expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
            );
        }
        let (d0, d1) = (d0 as i64, d1 as i64);
        match k.rem_euclid(4) {
            1 => self.flip(&[d1])?.transpose(d0, d1),
            2 => self.flip(&[d0, d1]),
            3 => self.flip(&[d0])?.transpose(d0, d1),
            _ => self.clone_tensor(),
        }
    }
}

/// `torch.meshgrid`: N-D grids from 1-D (or 0-D) tensors; `xy` indexing
/// swaps the roles of the first two.
pub fn meshgrid(tensors: &[Tensor], xy: bool) -> Result<Vec<Tensor>> {
    for t in tensors {
        if t.ndim() > 1 {
            bail!(
                runtime,
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t:?}"
            );
        }
    }
    let numels: Vec<usize> = tensors.iter().map(|t| t.numel()).collect();
    let (views, sizes) = meshgrid_plan(&numels, xy);
    tensors
        .iter()
        .zip(views)
        .map(|(t, view)| t.reshape(&view)?.expand(&sizes))
        .collect()
}

/// `meshgrid` of vectors of `numels` elements: each one's view (`-1` on
/// its axis, ones elsewhere) and the grid's size that it is expanded to.
pub fn meshgrid_plan(numels: &[usize], xy: bool) -> (Vec<Vec<i64>>, Vec<i64>) {
    let mut sizes: Vec<i64> = numels.iter().map(|&n| n as i64).collect();
    let swap = xy && numels.len() >= 2;
    if swap {
        sizes.swap(0, 1);
    }
    let views = (0..numels.len())
        .map(|i| {
            let axis = match (swap, i) {
                (true, 0) => 1,
                (true, 1) => 0,
                _ => i,
            };
            let mut view = vec![1i64; sizes.len()];
            view[axis] = -1;
            view
        })
        .collect();
    (views, sizes)
}

/// The shape `atleast(n)` reshapes a tensor of shape `s` to (None: it has
/// `n` dims or more and stays as it is).
pub fn atleast_shape(s: &[usize], n: usize) -> Result<Option<Vec<i64>>> {
    let s = to_i64(s);
    Ok(Some(match (n, s.len()) {
        (_, d) if d >= n => return Ok(None),
        (1, _) => vec![1],
        (2, 0) => vec![1, 1],
        (2, _) => vec![1, s[0]],
        (3, 0) => vec![1, 1, 1],
        (3, 1) => vec![1, s[0], 1],
        (3, _) => vec![s[0], s[1], 1],
        _ => bail!(runtime, "atleast: n must be 1, 2 or 3"),
    }))
}

/// Which of torch's stacking joins [`stack_kind`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackKind {
    /// `dim` 0 of atleast_2d.
    V,
    /// `dim` 1, or 0 when the inputs are 1-D (after atleast_1d).
    H,
    /// `dim` 2 of atleast_3d.
    D,
    /// `dim` 1, 0-D and 1-D inputs becoming columns.
    Column,
}

/// vstack, hstack, dstack or column_stack.
pub fn stack_kind(tensors: &[Tensor], kind: StackKind) -> Result<Tensor> {
    if tensors.is_empty() {
        let name = match kind {
            StackKind::V => "vstack",
            StackKind::H => "hstack",
            StackKind::D => "dstack",
            StackKind::Column => "column_stack",
        };
        bail!(runtime, "{name} expects a non-empty TensorList");
    }
    let shapes: Vec<&[usize]> = tensors.iter().map(|t| t.shape()).collect();
    let (reshapes, dim) = stack_kind_plan(&shapes, kind)?;
    let parts = tensors
        .iter()
        .zip(reshapes)
        .map(|(t, r)| match r {
            Some(shape) => t.reshape(&shape),
            None => Ok(t.clone()),
        })
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&parts, dim)
}

/// How [`stack_kind`] joins tensors of these shapes: each one's reshape
/// (None: as it is) and the dim of the `cat`.
pub fn stack_kind_plan(
    shapes: &[&[usize]],
    kind: StackKind,
) -> Result<(Vec<Option<Vec<i64>>>, i64)> {
    let reshapes = shapes
        .iter()
        .map(|s| match kind {
            StackKind::V => atleast_shape(s, 2),
            StackKind::D => atleast_shape(s, 3),
            StackKind::H => atleast_shape(s, 1),
            StackKind::Column if s.len() <= 1 => {
                Ok(Some(vec![s.iter().product::<usize>() as i64, 1]))
            }
            StackKind::Column => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    let first_rank = match (&reshapes[0], shapes[0]) {
        (Some(r), _) => r.len(),
        (None, s) => s.len(),
    };
    let dim = match kind {
        StackKind::V => 0,
        StackKind::D => 2,
        StackKind::H if first_rank == 1 => 0,
        StackKind::H | StackKind::Column => 1,
    };
    Ok((reshapes, dim))
}

impl Tensor {
    /// Each slice along `dim` (of the flattened tensor when None) repeated
    /// `repeats[i]` times (one count for all, or one per slice).
    pub fn repeat_interleave(&self, repeats: &[i64], dim: Option<i64>) -> Result<Tensor> {
        let (x, d) = match dim {
            Some(d) => (self.clone(), wrap_dim(d, self.ndim().max(1))?),
            None => (self.reshape(&[-1])?, 0),
        };
        let x = if x.ndim() == 0 { x.reshape(&[1])? } else { x };
        let n = x.shape()[d];
        if repeats.iter().any(|&r| r < 0) {
            bail!(runtime, "Repeats must be non-negative");
        }
        let counts: Vec<i64> = match repeats.len() {
            1 => vec![repeats[0]; n],
            len if len == n => repeats.to_vec(),
            len => bail!(
                runtime,
                "repeats must have the same size as input along dim, but got repeats.size(0) = {len} and input.size({d}) = {n}"
            ),
        };
        let index: Vec<i64> = counts
            .iter()
            .enumerate()
            .flat_map(|(i, &r)| std::iter::repeat_n(i as i64, r as usize))
            .collect();
        let len = index.len();
        x.index_select(d as i64, &Tensor::from_vec(index, &[len])?)
    }
}
