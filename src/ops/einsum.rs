//! `einsum`: Einstein summation, composed of differentiable ops (diagonal
//! for a label repeated in one operand, sum for a label no one needs any
//! more, and one batched matrix product per pair of operands, left to
//! right), so its gradients, and theirs, come from those ops' derivatives,
//! as in torch, where einsum is composite too.

use crate::tensor::Tensor;
use crate::{bail, Result};

/// A dimension's label: a letter (A-Z as 0-25, a-z as 26-51, torch's
/// order for the implicit output) or the i-th ellipsis dim (52 + i).
type Label = usize;
const ELLIPSIS_BASE: Label = 52;

/// One term of the equation: letters and at most one ellipsis.
#[derive(Debug)]
struct Term {
    letters_before: Vec<Label>,
    ellipsis: bool,
    letters_after: Vec<Label>,
}

fn letter(c: char) -> Option<Label> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(26 + c as usize - 'a' as usize),
        _ => None,
    }
}

fn letter_char(l: Label) -> char {
    if l < 26 {
        (b'A' + l as u8) as char
    } else {
        (b'a' + (l - 26) as u8) as char
    }
}

fn parse_term(s: &str, what: &str) -> Result<Term> {
    let mut t = Term {
        letters_before: vec![],
        ellipsis: false,
        letters_after: vec![],
    };
    let mut chars = s.chars().filter(|c| !c.is_whitespace()).peekable();
    while let Some(c) = chars.next() {
        if c == '.' {
            if t.ellipsis || chars.next() != Some('.') || chars.next() != Some('.') {
                bail!(
                    runtime,
                    "einsum(): found '.' for {what} that is not part of any ellipsis"
                );
            }
            t.ellipsis = true;
            continue;
        }
        let Some(l) = letter(c) else {
            bail!(runtime, "einsum(): invalid subscript given at index 0 in the equation string, subscripts must be in [a-zA-Z]");
        };
        if t.ellipsis {
            t.letters_after.push(l);
        } else {
            t.letters_before.push(l);
        }
    }
    Ok(t)
}

/// An operand with one label per dim.
struct Labeled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labeled {
    /// Takes the diagonal of every label that names two dims.
    fn diagonals(mut self) -> Result<Labeled> {
        while let Some((i, j)) = (0..self.labels.len()).find_map(|i| {
            (i + 1..self.labels.len())
                .find(|&j| self.labels[j] == self.labels[i])
                .map(|j| (i, j))
        }) {
            let (ni, nj) = (self.t.shape()[i], self.t.shape()[j]);
            if ni != nj {
                bail!(
                    runtime,
                    "einsum(): subscript {} is repeated for operand but the sizes don't match, {} != {}",
                    letter_char(self.labels[i]),
                    nj,
                    ni
                );
            }
            let l = self.labels[i];
            self.t = self.t.diagonal(0, i as i64, j as i64)?;
            self.labels.remove(j);
            self.labels.remove(i);
            self.labels.push(l);
        }
        Ok(self)
    }
    /// Sums out the labels `keep` rejects.
    fn sum_unneeded(self, keep: impl Fn(Label) -> bool) -> Result<Labeled> {
        let dims: Vec<i64> = (0..self.labels.len())
            .filter(|&i| !keep(self.labels[i]))
            .map(|i| i as i64)
            .collect();
        if dims.is_empty() {
            return Ok(self);
        }
        let labels = self.labels.iter().copied().filter(|&l| keep(l)).collect();
        Ok(Labeled {
            t: self.t.sum_dims(&dims, false, None)?,
            labels,
        })
    }
    /// The tensor with dims in `order` (all of its labels), each expanded
    /// to `sizes[label]`, reshaped to the products of the three groups.
    fn as_matrix(&self, groups: [&[Label]; 3], sizes: &[usize]) -> Result<Tensor> {
        let order: Vec<i64> = groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|l| self.labels.iter().position(|x| x == l).expect("own label") as i64)
            .collect();
        let full: Vec<i64> = groups
            .iter()
            .flat_map(|g| g.iter())
            .map(|&l| sizes[l] as i64)
            .collect();
        let t = self.t.permute(&order)?.expand(&full)?;
        let prod = |g: &[Label]| g.iter().map(|&l| sizes[l] as i64).product::<i64>();
        t.reshape(&[prod(groups[0]), prod(groups[1]), prod(groups[2])])
    }
}

/// `torch.einsum(equation, *operands)`.
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation, None),
    };
    let terms: Vec<Term> = lhs
        .split(',')
        .enumerate()
        .map(|(i, s)| parse_term(s, &format!("operand {i}")))
        .collect::<Result<_>>()?;
    if operands.is_empty() {
        bail!(runtime, "einsum(): must provide at least one operand");
    }
    if terms.len() > operands.len() {
        bail!(
            runtime,
            "einsum(): fewer operands were provided than specified in the equation"
        );
    }
    if terms.len() < operands.len() {
        bail!(
            runtime,
            "einsum(): more operands were provided than specified in the equation"
        );
    }
    // Each operand's labels; ellipsis dims are right-aligned across operands.
    let mut ellipsis_dims = 0;
    for (i, (term, t)) in terms.iter().zip(operands).enumerate() {
        let letters = term.letters_before.len() + term.letters_after.len();
        if term.ellipsis {
            if t.ndim() < letters {
                bail!(runtime, "einsum(): the number of subscripts in the equation ({letters}) is more than the number of dimensions ({}) for operand {i}", t.ndim());
            }
            ellipsis_dims = ellipsis_dims.max(t.ndim() - letters);
        } else if t.ndim() != letters {
            bail!(runtime, "einsum(): the number of subscripts in the equation ({letters}) does not match the number of dimensions ({}) for operand {i} and no ellipsis was given", t.ndim());
        }
    }
    let ellipsis = |n: usize| ELLIPSIS_BASE + ellipsis_dims - n..ELLIPSIS_BASE + ellipsis_dims;
    let mut ops: Vec<Labeled> = Vec::with_capacity(operands.len());
    for (term, t) in terms.iter().zip(operands) {
        let mut labels = term.letters_before.clone();
        if term.ellipsis {
            let n = t.ndim() - term.letters_before.len() - term.letters_after.len();
            labels.extend(ellipsis(n));
        }
        labels.extend(&term.letters_after);
        ops.push(
            Labeled {
                t: t.clone(),
                labels,
            }
            .diagonals()?,
        );
    }
    // The output's labels.
    let mut count = vec![0usize; ELLIPSIS_BASE];
    for term in &terms {
        for &l in term.letters_before.iter().chain(&term.letters_after) {
            count[l] += 1;
        }
    }
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let term = parse_term(r, "the output")?;
            let mut out = term.letters_before.clone();
            if term.ellipsis {
                out.extend(ellipsis(ellipsis_dims));
            }
            out.extend(&term.letters_after);
            for (i, &l) in out.iter().enumerate() {
                if l < ELLIPSIS_BASE && count[l] == 0 {
                    bail!(runtime, "einsum(): output subscript {} does not appear in the equation for any input operand", letter_char(l));
                }
                if out[..i].contains(&l) {
                    bail!(
                        runtime,
                        "einsum(): output subscript {} appears more than once in the output",
                        letter_char(l)
                    );
                }
            }
            out
        }
        None => ellipsis(ellipsis_dims)
            .chain((0..ELLIPSIS_BASE).filter(|&l| count[l] == 1))
            .collect(),
    };
    // Every label's size (broadcast from 1).
    let mut sizes = vec![1usize; ELLIPSIS_BASE + ellipsis_dims];
    for (i, op) in ops.iter().enumerate() {
        let first_ellipsis = op
            .labels
            .iter()
            .copied()
            .filter(|&l| l >= ELLIPSIS_BASE)
            .min();
        for (&l, &n) in op.labels.iter().zip(op.t.shape()) {
            if n != 1 {
                if sizes[l] != 1 && sizes[l] != n {
                    let prev = sizes[l];
                    match first_ellipsis {
                        Some(f) if l >= ELLIPSIS_BASE => bail!(runtime, "einsum(): dimension {} covered by ellipsis in operand {i}has size {n} which does not broadcast with previously seen ellipsis with size {prev} for the respective dimension", l - f),
                        _ => bail!(runtime, "einsum(): subscript {} has size {n} for operand {i} which does not broadcast with previously seen size {prev}", letter_char(l)),
                    }
                }
                sizes[l] = n;
            }
        }
    }
    // Contract left to right; a label is kept while the output or a later
    // operand names it.
    let mut ops = ops.into_iter();
    let first = ops.next().expect("at least one operand");
    let mut rest: Vec<Labeled> = ops.collect();
    let mut cur = first;
    while !rest.is_empty() {
        let next = rest.remove(0);
        let later = |l: Label| output.contains(&l) || rest.iter().any(|o| o.labels.contains(&l));
        cur = cur.sum_unneeded(|l| later(l) || next.labels.contains(&l))?;
        let next = next.sum_unneeded(|l| later(l) || cur.labels.contains(&l))?;
        let batch: Vec<Label> = cur
            .labels
            .iter()
            .copied()
            .filter(|&l| next.labels.contains(&l) && later(l))
            .collect();
        let contracted: Vec<Label> = cur
            .labels
            .iter()
            .copied()
            .filter(|&l| next.labels.contains(&l) && !later(l))
            .collect();
        let a_only: Vec<Label> = cur
            .labels
            .iter()
            .copied()
            .filter(|l| !next.labels.contains(l))
            .collect();
        let b_only: Vec<Label> = next
            .labels
            .iter()
            .copied()
            .filter(|l| !cur.labels.contains(l))
            .collect();
        let a = cur.as_matrix([&batch, &a_only, &contracted], &sizes)?;
        let b = next.as_matrix([&batch, &contracted, &b_only], &sizes)?;
        let shape: Vec<i64> = batch
            .iter()
            .chain(&a_only)
            .chain(&b_only)
            .map(|&l| sizes[l] as i64)
            .collect();
        let labels: Vec<Label> = batch
            .iter()
            .chain(&a_only)
            .chain(&b_only)
            .copied()
            .collect();
        cur = Labeled {
            t: a.bmm(&b)?.reshape(&shape)?,
            labels,
        };
    }
    let cur = cur.sum_unneeded(|l| output.contains(&l))?;
    let order: Vec<i64> = output
        .iter()
        .map(|l| {
            cur.labels
                .iter()
                .position(|x| x == l)
                .expect("output labels are kept") as i64
        })
        .collect();
    let out = cur.t.permute(&order)?;
    // Broadcast size-1 output dims the operands had at other sizes.
    let full: Vec<i64> = output.iter().map(|&l| sizes[l] as i64).collect();
    if out.shape().iter().zip(&full).any(|(&a, &b)| a as i64 != b) {
        return out.expand(&full);
    }
    Ok(out)
}
