//! Layout: shape, strides (in elements) and offset into the storage.
//! Every view op is a pure function from one layout to another.

use crate::{bail, Result};
use smallvec::SmallVec;

pub type Dims = SmallVec<[usize; 6]>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: Dims,
    pub strides: Dims,
    pub offset: usize,
}

/// Row-major strides of a dense tensor of `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides: Dims = smallvec::smallvec![0; shape.len()];
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        // Saturates only when the shape holds a 0 (numel 0, so the strides
        // address nothing): a non-empty shape's numel was checked to fit.
        acc = acc.saturating_mul(shape[i].max(1));
    }
    strides
}

/// Wraps a possibly negative dim into `0..ndim` (torch's maybe_wrap_dim).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        bail!(
            index,
            "Dimension out of range (expected to be in range of [{}, {}], but got {})",
            -n,
            n - 1,
            dim
        );
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// Broadcast two shapes by numpy rules.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Dims> {
    let n = a.len().max(b.len());
    let mut out: Dims = smallvec::smallvec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            bail!(
                runtime,
                "The size of tensor a ({}) must match the size of tensor b ({}) at non-singleton dimension {}",
                da,
                db,
                i
            );
        };
    }
    Ok(out)
}

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

impl Layout {
    /// The layout with these sizes, strides (in elements) and offset.
    pub fn strided(shape: &[usize], strides: &[usize], offset: usize) -> Self {
        Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
        }
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    /// Dense row-major (torch's is_contiguous; size-1 dims ignore strides,
    /// and an empty tensor is contiguous whatever its strides).
    pub fn is_contiguous(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1;
        for i in (0..self.shape.len()).rev() {
            if self.shape[i] == 1 {
                continue;
            }
            if self.strides[i] != expected {
                return false;
            }
            expected *= self.shape[i];
        }
        true
    }
    /// Contiguous and starting at the front of its storage region.
    pub fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        if self.is_contiguous() {
            Some(self.offset..self.offset + self.numel())
        } else {
            None
        }
    }
    /// Last storage index touched + 1 (the offset for empty tensors).
    pub fn storage_extent(&self) -> usize {
        self.offset + Layout::span(&self.shape, &self.strides)
    }
    /// Elements a view of `shape` and (non-negative) `strides` spans from
    /// its first element: the last index it touches + 1, 0 when empty.
    pub fn span(shape: &[usize], strides: &[usize]) -> usize {
        if shape.contains(&0) {
            return 0;
        }
        1 + shape
            .iter()
            .zip(strides)
            .map(|(&d, &s)| (d - 1) * s)
            .sum::<usize>()
    }

    pub fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        if d0 == d1 {
            // Also a 0-d tensor's `t()`: dim 0 wraps to a dim it lacks.
            return l;
        }
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }
    pub fn permute(&self, dims: &[usize]) -> Result<Layout> {
        let n = self.ndim();
        if dims.len() != n {
            bail!(runtime, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}", n, dims.len());
        }
        let mut seen = vec![false; n];
        for &d in dims {
            if seen[d] {
                bail!(runtime, "permute(): duplicate dims are not allowed.");
            }
            seen[d] = true;
        }
        Ok(Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        })
    }
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Layout> {
        if start
            .checked_add(len)
            .is_none_or(|end| end > self.shape[dim])
        {
            bail!(
                runtime,
                "start ({}) + length ({}) exceeds dimension size ({}).",
                start,
                len,
                self.shape[dim]
            );
        }
        let mut l = self.clone();
        l.shape[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        Ok(l)
    }
    /// A strided slice `start..stop` by `step` along `dim` (step >= 1).
    pub fn slice(&self, dim: usize, start: usize, stop: usize, step: usize) -> Layout {
        let mut l = self.clone();
        let len = if stop > start {
            (stop - start).div_ceil(step)
        } else {
            0
        };
        l.shape[dim] = len;
        if len > 0 {
            l.offset += start * self.strides[dim];
        }
        l.strides[dim] *= step;
        l
    }
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.clone();
        l.offset += index * self.strides[dim];
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let stride = if dim < self.ndim() {
            self.strides[dim] * self.shape[dim]
        } else {
            1
        };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }
    pub fn squeeze_dim(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        // (A 0-d tensor's dim 0 wraps to a dim it lacks: nothing to drop.)
        if l.shape.get(dim) == Some(&1) {
            l.shape.remove(dim);
            l.strides.remove(dim);
        }
        l
    }
    /// Broadcast to `shape` with 0 strides (torch's expand).
    pub fn expand(&self, shape: &[usize]) -> Result<Layout> {
        let n = shape.len();
        if n < self.ndim() {
            bail!(
                runtime,
                "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
                n,
                self.ndim()
            );
        }
        let lead = n - self.ndim();
        let mut strides: Dims = smallvec::smallvec![0; n];
        for i in (0..n).rev() {
            if i < lead {
                // A new dim: stride 0 when it repeats, else (size 1) torch's
                // size x stride of the next dim (inferExpandGeometry), so
                // that `t[None]` and `t.expand(1, ...)` have the same strides.
                strides[i] = match (shape[i], shape.get(i + 1)) {
                    (1, Some(&next)) => next.saturating_mul(strides[i + 1]),
                    _ => 0,
                };
                continue;
            }
            let (d, s) = (self.shape[i - lead], self.strides[i - lead]);
            if d == shape[i] {
                strides[i] = s;
            } else if d == 1 {
                strides[i] = 0;
            } else {
                bail!(
                    runtime,
                    "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {}.  Target sizes: {:?}.  Tensor sizes: {:?}",
                    shape[i],
                    d,
                    i,
                    shape,
                    &self.shape[..]
                );
            }
        }
        // Kernels size buffers by the element count: it must not wrap.
        let numel = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        if numel.is_none_or(|n| n > i64::MAX as usize) {
            bail!(runtime, "numel: integer multiplication overflow");
        }
        Ok(Layout {
            shape: shape.into(),
            strides,
            offset: self.offset,
        })
    }
    /// Strides for viewing this layout as `shape` without a copy, if possible
    /// (torch's computeStride). `None` means a copy is needed.
    pub fn view_strides(&self, shape: &[usize]) -> Option<Dims> {
        let old_n = self.numel();
        if old_n == 0 || self.ndim() == 0 {
            return Some(contiguous_strides(shape));
        }
        let mut new_strides: Dims = smallvec::smallvec![0; shape.len()];
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *self.strides.last().unwrap();
        let mut tensor_numel = 1;
        let mut view_numel = 1;
        for tensor_d in (0..self.ndim()).rev() {
            tensor_numel *= self.shape[tensor_d];
            if tensor_d == 0
                || (self.shape[tensor_d - 1] != 1
                    && self.strides[tensor_d - 1] != tensor_numel * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return None;
                }
                if tensor_d > 0 {
                    chunk_base_stride = self.strides[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return None;
        }
        Some(new_strides)
    }
}

/// Resolves a shape with at most one `-1` against `numel` (torch's infer_size).
pub fn infer_shape(shape: &[i64], numel: usize) -> Result<Dims> {
    let mut out: Dims = Dims::new();
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        if d == -1 {
            if infer.is_some() {
                bail!(runtime, "only one dimension can be inferred");
            }
            infer = Some(i);
            out.push(1);
        } else if d < 0 {
            bail!(runtime, "invalid shape dimension {}", d);
        } else {
            known = match known.checked_mul(d as usize) {
                Some(k) => k,
                None => bail!(runtime, "numel: integer multiplication overflow"),
            };
            out.push(d as usize);
        }
    }
    let fmt = || {
        format!(
            "[{}]",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match infer {
        Some(i) => {
            if known == 0 || !numel.is_multiple_of(known) {
                bail!(
                    runtime,
                    "shape '{}' is invalid for input of size {}",
                    fmt(),
                    numel
                );
            }
            out[i] = numel / known;
        }
        None => {
            if known != numel {
                bail!(
                    runtime,
                    "shape '{}' is invalid for input of size {}",
                    fmt(),
                    numel
                );
            }
        }
    }
    Ok(out)
}

/// Visits the storage offsets of a strided layout in row-major order. The
/// innermost dimension is a tight loop; the outer ones advance an odometer.
#[inline]
pub fn for_each_offset(
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    mut f: impl FnMut(usize),
) {
    let n = shape.len();
    if n == 0 {
        f(offset);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let (inner, inner_stride) = (shape[n - 1], strides[n - 1]);
    let mut idx: Dims = smallvec::smallvec![0; n];
    let mut base = offset;
    loop {
        let mut o = base;
        for _ in 0..inner {
            f(o);
            o += inner_stride;
        }
        // advance the odometer over dims 0..n-1
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            base -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Like `for_each_offset` for two operands sharing one shape.
#[inline]
pub fn for_each_offset2(
    shape: &[usize],
    sa: &[usize],
    oa: usize,
    sb: &[usize],
    ob: usize,
    mut f: impl FnMut(usize, usize),
) {
    let n = shape.len();
    if n == 0 {
        f(oa, ob);
        return;
    }
    if shape.contains(&0) {
        return;
    }
    let inner = shape[n - 1];
    let (ia, ib) = (sa[n - 1], sb[n - 1]);
    let mut idx: Dims = smallvec::smallvec![0; n];
    let (mut ba, mut bb) = (oa, ob);
    loop {
        let (mut a, mut b) = (ba, bb);
        for _ in 0..inner {
            f(a, b);
            a += ia;
            b += ib;
        }
        let mut d = n - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            ba += sa[d];
            bb += sb[d];
            if idx[d] < shape[d] {
                break;
            }
            ba -= sa[d] * shape[d];
            bb -= sb[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Calls `f(a, b, c)` with the offsets of three operands over `shape`, in
/// row-major order.
pub fn for_each_offset3(
    shape: &[usize],
    strides: &[Dims; 3],
    bases: [usize; 3],
    mut f: impl FnMut(usize, usize, usize),
) {
    let n = shape.len();
    if shape.contains(&0) {
        return;
    }
    if n == 0 {
        return f(bases[0], bases[1], bases[2]);
    }
    let inner = shape[n - 1];
    let step = [strides[0][n - 1], strides[1][n - 1], strides[2][n - 1]];
    let mut idx: Dims = smallvec::smallvec![0; n];
    let mut base = bases;
    loop {
        let mut o = base;
        for _ in 0..inner {
            f(o[0], o[1], o[2]);
            for k in 0..3 {
                o[k] += step[k];
            }
        }
        let mut dd = n - 1;
        loop {
            if dd == 0 {
                return;
            }
            dd -= 1;
            idx[dd] += 1;
            for k in 0..3 {
                base[k] += strides[k][dd];
            }
            if idx[dd] < shape[dd] {
                break;
            }
            for k in 0..3 {
                base[k] -= strides[k][dd] * shape[dd];
            }
            idx[dd] = 0;
        }
    }
}
