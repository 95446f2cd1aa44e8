//! Linear algebra: matrix products. `^T` swaps the last two dims (a view).
//!
//! | op                    | d/dself                 | d/dother                  |
//! |-----------------------|-------------------------|---------------------------|
//! | mm                    | grad @ other^T          | self^T @ grad             |
//! | bmm, batched matmul   | grad @ other^T          | self^T @ grad             |
//! | mv                    | outer(grad, vec)        | self^T @ grad             |
//! | dot                   | grad * other            | grad * self               |
//!
//! Batched matmul broadcasts batch dims; its gradients come back in the
//! broadcast shape and the engine sums them down to each input's shape.
//! `matmul` itself is composed of the ops above, following torch's rules
//! (1-D promotion and removal, folding `(..., k) @ (k, n)` into one mm); as
//! in torch its result is never a view: a reshaped or batched product is an
//! `_unsafe_view` (`UnsafeViewBackward0`, d/dself = grad reshaped back), a
//! 2-D @ batched product folded as torch folds it a contiguous copy of a
//! transpose (`CloneBackward0`), a
//! 1-D @ 2-D product is squeezed in place (`SqueezeBackward4`, version 1);
//! `outer` is a broadcast multiply.

use crate::autograd::autocast;
use crate::autograd::record;
use crate::kernels::matmul as kernel;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{Dims, Tensor};
use crate::{bail, Result};

fn shape_str(s: &[usize]) -> String {
    s.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

/// A matrix stored column by column (a transposed contiguous one), as
/// torch's mm backward tests it.
fn is_column_major(m: &Tensor) -> bool {
    let (sh, st) = (m.shape(), m.strides());
    sh.len() == 2 && st[0] == 1 && st[1] == sh[0] && sh[0] > 1
}

/// torch's `should_fold(tensor1, tensor2)` for a 2-D `small` times a
/// `large` of 3 or more dims: fold `large^T`'s batch dims into rows when
/// `small` requires grad (whatever the grad mode, as torch), `large` is
/// empty, or `large^T`'s batch dims fold without a copy.
fn fold_transposed(small: &Tensor, large: &Tensor) -> bool {
    if small.requires_grad() || large.numel() == 0 {
        return true;
    }
    let n = large.ndim();
    let (mut sh, mut st) = (large.shape().to_vec(), large.strides().to_vec());
    sh.swap(n - 1, n - 2);
    st.swap(n - 1, n - 2);
    (0..n - 2).all(|i| st[i] == st[i + 1] * sh[i + 1])
}

/// torch's `should_fold(tensor1, tensor2)` for a `large` of 3 or more dims
/// times a 1-D or 2-D `small`: fold `large`'s batch dims into rows when
/// `small` requires grad (whatever the grad mode, as torch), `large` is
/// empty, or its batch dims fold without a copy; else the product is a
/// broadcast batched one (an expanded `large` is not copied).
fn fold_self(large: &Tensor, small: &Tensor) -> bool {
    if small.requires_grad() || large.numel() == 0 {
        return true;
    }
    let (sh, st) = (large.shape(), large.strides());
    (0..large.ndim() - 2).all(|i| st[i] == st[i + 1] * sh[i + 1])
}

impl Tensor {
    /// Matrix product of two 2-D tensors.
    pub fn mm(&self, mat2: &Tensor) -> Result<Tensor> {
        if let Some(v) = autocast::lowered(&[self, mat2])? {
            return v[0].mm(&v[1]);
        }
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() != 2 {
            bail!(runtime, "self must be a matrix");
        }
        if mat2.ndim() != 2 {
            bail!(runtime, "mat2 must be a matrix");
        }
        if self.shape()[1] != mat2.shape()[0] {
            bail!(
                runtime,
                "mat1 and mat2 shapes cannot be multiplied ({} and {})",
                shape_str(self.shape()),
                shape_str(mat2.shape())
            );
        }
        if self.dtype() != mat2.dtype() {
            bail!(
                runtime,
                "expected m1 and m2 to have the same dtype, but got: {} != {}",
                self.dtype().cpp_type_name(),
                mat2.dtype().cpp_type_name()
            );
        }
        let rec = record("MmBackward0", &[self, mat2]);
        let out = Tensor::from(kernel::matmul(self, mat2)?);
        // As torch, each gradient reads the other operand's values and its
        // own operand's layout only (kept here, not unpacked): modifying
        // `mat2` in place leaves `mat2`'s gradient computable.
        let (a_col, b_col) = (is_column_major(self), is_column_major(mat2));
        rec.save("self", self)
            .save("mat2", mat2)
            .finish(out, move |c| {
                // As torch: a column-major operand gets a column-major gradient
                // (computed as the transpose of a row-major product), so a
                // weight used as `w.t()` gets a contiguous gradient.
                let g = c.grad();
                let da = if c.needs(0) {
                    let b = c.saved(1)?;
                    Some(if a_col {
                        b.mm(&g.t()?)?.t()?
                    } else {
                        g.mm(&b.t()?)?
                    })
                } else {
                    None
                };
                let db = if c.needs(1) {
                    let a = c.saved(0)?;
                    Some(if b_col {
                        g.t()?.mm(&a)?.t()?
                    } else {
                        a.t()?.mm(g)?
                    })
                } else {
                    None
                };
                Ok(vec![da, db])
            })
    }

    /// Batched matrix product of two 3-D tensors with equal batch sizes.
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        if let Some(v) = autocast::lowered(&[self, mat2])? {
            return v[0].bmm(&v[1]);
        }
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() != 3 {
            bail!(runtime, "batch1 must be a 3D tensor");
        }
        if mat2.ndim() != 3 {
            bail!(runtime, "batch2 must be a 3D tensor");
        }
        let (b, k) = (self.shape()[0], self.shape()[2]);
        if mat2.shape()[0] != b || mat2.shape()[1] != k {
            bail!(
                runtime,
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                b,
                k,
                mat2.shape()[0],
                mat2.shape()[1]
            );
        }
        self.batched_matmul(mat2)
    }

    /// `self @ other` for `self: [.., m, k]`, `other: [.., k, n]` (both at
    /// least 2-D) with broadcasting batch dims (BmmBackward0).
    fn batched_matmul(&self, other: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        let (na, nb) = (self.ndim(), other.ndim());
        let (sa, sb) = (self.shape(), other.shape());
        let batch = broadcast_shapes(&sa[..na - 2], &sb[..nb - 2])?;
        let (m, k, k2, n) = (sa[na - 2], sa[na - 1], sb[nb - 2], sb[nb - 1]);
        if k != k2 {
            let nbatch: usize = batch.iter().product();
            bail!(
                runtime,
                "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
                nbatch,
                k,
                nbatch,
                k2
            );
        }
        if self.dtype() != other.dtype() {
            bail!(
                runtime,
                "expected scalar type {} but found {}",
                self.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            );
        }
        let with = |a: usize, b: usize| -> Dims {
            let mut s = batch.clone();
            s.push(a);
            s.push(b);
            s
        };
        let a = self.broadcast_to_raw(&with(m, k))?;
        let b = other.broadcast_to_raw(&with(k, n))?;
        let rec = record("BmmBackward0", &[self, other]);
        let out = Tensor::from(kernel::matmul(&a, &b)?);
        rec.save("self", self).save("mat2", other).finish(out, |c| {
            let g = c.grad();
            let da = c.grad_for(0, || g.batched_matmul(&c.saved(1)?.transpose(-1, -2)?))?;
            let db = c.grad_for(1, || c.saved(0)?.transpose(-1, -2)?.batched_matmul(g))?;
            Ok(vec![da, db])
        })
    }

    /// Matrix-vector product.
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() != 2 || vec.ndim() != 1 {
            bail!(
                runtime,
                "vector + matrix @ vector expected, got 1, {}, {}",
                self.ndim(),
                vec.ndim()
            );
        }
        let (m, k) = (self.shape()[0], self.shape()[1]);
        if vec.shape()[0] != k {
            bail!(
                runtime,
                "size mismatch, got input ({}), mat ({}x{}), vec ({})",
                m,
                m,
                k,
                vec.shape()[0]
            );
        }
        if self.dtype() != vec.dtype() {
            let (v, s) = (
                vec.dtype().scalar_type_name(),
                self.dtype().scalar_type_name(),
            );
            bail!(
                runtime,
                "addmv input tensors must have the same dtype, but got {}, {}, and {}",
                v,
                s,
                v
            );
        }
        let col = vec.alias_with_layout(vec.layout().unsqueeze(1));
        let out = Tensor::from(kernel::matmul(self, &col)?);
        let rec = record("MvBackward0", &[self, vec]);
        let out = Tensor::from_storage(
            out.storage().clone(),
            crate::tensor::Layout::contiguous(&[m]),
        );
        rec.save("self", self).save("vec", vec).finish(out, |c| {
            let g = c.grad();
            let da = c.grad_for(0, || g.outer(&c.saved(1)?))?;
            let db = c.grad_for(1, || c.saved(0)?.t()?.mv(g))?;
            Ok(vec![da, db])
        })
    }

    /// Inner product of two 1-D tensors.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        crate::autograd::check_history_first(&[self])?;
        if self.ndim() != 1 || other.ndim() != 1 {
            bail!(
                runtime,
                "1D tensors expected, but got {}D and {}D tensors",
                self.ndim(),
                other.ndim()
            );
        }
        if self.dtype() != other.dtype() {
            bail!(
                runtime,
                "dot : expected both vectors to have same dtype, but found {} and {}",
                self.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            );
        }
        let (n, m) = (self.shape()[0], other.shape()[0]);
        if n != m {
            bail!(runtime, "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively", n, m, n, m);
        }
        let rec = record("DotBackward0", &[self, other]);
        let out = Tensor::from(kernel::dot(self, other)?);
        rec.save("self", self)
            .save("tensor", other)
            .finish(out, |c| {
                let g = c.grad();
                let da = c.grad_for(0, || g.mul(&c.saved(1)?))?;
                let db = c.grad_for(1, || g.mul(&c.saved(0)?))?;
                Ok(vec![da, db])
            })
    }

    /// Outer product of two 1-D tensors (dtypes promote, as torch).
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor> {
        for (name, t) in [("self", self), ("vec2", vec2)] {
            if t.ndim() != 1 {
                bail!(
                    runtime,
                    "outer: Expected 1-D argument {}, but got {}-D",
                    name,
                    t.ndim()
                );
            }
        }
        self.reshape(&[-1, 1])?.mul(vec2)
    }

    /// torch.matmul: dot, mv, mm or a batched product with broadcasting,
    /// by the operands' dims.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        if let Some(v) = autocast::lowered(&[self, other])? {
            return v[0].matmul(&v[1]);
        }
        let (da, db) = (self.ndim(), other.ndim());
        if da == 0 || db == 0 {
            bail!(
                runtime,
                "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
                da,
                db
            );
        }
        match (da, db) {
            (1, 1) => self.dot(other),
            (2, 1) => self.mv(other),
            (1, 2) => {
                // torch: mm(...).squeeze_(0), in place: not a view, version 1
                let r = self.unsqueeze(0)?.mm(other)?;
                let l = r.layout().squeeze_dim(0);
                let out = r.fresh_alias(l, "SqueezeBackward4")?;
                out.modified_by("squeeze_");
                Ok(out)
            }
            (2, 2) => self.mm(other),
            (_, 1) | (_, 2) if fold_self(self, other) => {
                // Fold the batch dims of self into the rows of one product.
                let k = self.shape()[da - 1] as i64;
                let mut shape: Vec<i64> =
                    self.shape()[..da - 1].iter().map(|&d| d as i64).collect();
                let rows = self.reshape(&[-1, k])?;
                let r = if db == 1 {
                    rows.mv(other)?
                } else {
                    shape.push(other.shape()[1] as i64);
                    rows.mm(other)?
                };
                r.unsafe_view(&shape)
            }
            (2, _) if fold_transposed(self, other) => {
                // torch's should_fold with the larger operand second:
                // (other^T folded @ self^T)^T, made contiguous (a copy:
                // CloneBackward0), so that self's gradient is one mm
                let t1 = other.transpose(-1, -2)?;
                let sizes = t1.shape();
                let mut shape: Vec<i64> = sizes[..db - 1].iter().map(|&d| d as i64).collect();
                let folded: i64 = shape.iter().product();
                shape.push(self.shape()[0] as i64);
                let r = t1
                    .reshape(&[folded, sizes[db - 1] as i64])?
                    .mm(&self.t()?)?;
                r.unsafe_view(&shape)?.transpose(-1, -2)?.contiguous()
            }
            _ => {
                let a = if da == 1 {
                    self.unsqueeze(0)?
                } else {
                    self.clone()
                };
                let b = if db == 1 {
                    other.unsqueeze(1)?
                } else {
                    other.clone()
                };
                let r = a.batched_matmul(&b)?;
                let n = r.ndim();
                let shape: Vec<i64> = (0..n)
                    .filter(|&i| !(da == 1 && i == n - 2 || db == 1 && i == n - 1))
                    .map(|i| r.shape()[i] as i64)
                    .collect();
                r.unsafe_view(&shape)
            }
        }
    }
}
