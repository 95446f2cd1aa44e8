//! A tensor as text, a port of torch's `_tensor_str.py`: the same number
//! formatting (4 decimals, scientific notation for wide or extreme ranges,
//! `1.` for integer-valued floats), line wrapping at 80 columns,
//! summarization with `...` above 1000 elements, and the `dtype=`,
//! `size=`, `grad_fn=`/`requires_grad=` suffixes. `Display` of a
//! [`Tensor`] prints what torch's `repr` prints; the options are
//! process-wide ([`set_print_options`], torch's `set_printoptions`).

use crate::buffer::Element;
use crate::tensor::StorageData;
use crate::{bail, DType, Result, Tensor};
use parking_lot::Mutex;

/// torch's print options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintOptions {
    /// Digits after the decimal point.
    pub precision: usize,
    /// Above this many elements the tensor is summarized.
    pub threshold: f64,
    /// Entries kept at each end of a summarized dim.
    pub edgeitems: usize,
    /// Characters per line before wrapping.
    pub linewidth: usize,
    /// Scientific notation: always, never, or torch's choice (`None`).
    pub sci_mode: Option<bool>,
}

impl PrintOptions {
    /// torch's defaults (the `"default"` profile).
    pub const DEFAULT: PrintOptions = PrintOptions {
        precision: 4,
        threshold: 1000.0,
        edgeitems: 3,
        linewidth: 80,
        sci_mode: None,
    };

    /// `self` reset to torch's profile `name` (`"default"`, `"short"`,
    /// `"full"`); `sci_mode` is kept, as torch keeps it.
    pub fn with_profile(self, name: &str) -> Result<PrintOptions> {
        let base = PrintOptions {
            sci_mode: self.sci_mode,
            ..PrintOptions::DEFAULT
        };
        Ok(match name {
            "default" => base,
            "short" => PrintOptions {
                precision: 2,
                edgeitems: 2,
                ..base
            },
            "full" => PrintOptions {
                threshold: f64::INFINITY,
                ..base
            },
            other => bail!(
                value,
                "unknown print profile '{other}': expected 'default', 'short' or 'full'"
            ),
        })
    }
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions::DEFAULT
    }
}

static PRINT_OPTIONS: Mutex<PrintOptions> = Mutex::new(PrintOptions::DEFAULT);

/// The print options in force.
pub fn print_options() -> PrintOptions {
    *PRINT_OPTIONS.lock()
}

/// Sets the print options of the process (torch's `set_printoptions`).
pub fn set_print_options(opts: PrintOptions) {
    *PRINT_OPTIONS.lock() = opts;
}

impl std::fmt::Display for Tensor {
    /// What torch's `repr` prints: `tensor([1., 2.], requires_grad=True)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&repr_with_prefix(self, "tensor("))
    }
}

/// One element, read from storage.
#[derive(Clone, Copy)]
enum El {
    B(bool),
    I(i64),
    F(f64),
}

/// Read access to a tensor's elements by storage offset.
enum Data<'a> {
    B(&'a [bool]),
    /// Any integer dtype.
    I(&'a StorageData),
    F16(&'a [half::f16]),
    BF16(&'a [half::bf16]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl Data<'_> {
    fn get(&self, off: usize) -> El {
        match self {
            Data::B(s) => El::B(s[off]),
            Data::I(s) => {
                crate::dispatch_ints!(s.dtype(), T => El::I(s.as_slice::<T>()[off].to_i64()))
            }
            Data::F32(s) => El::F(s[off] as f64),
            Data::F16(s) => El::F(s[off].to_f64()),
            Data::BF16(s) => El::F(s[off].to_f64()),
            Data::F64(s) => El::F(s[off]),
        }
    }
}

/// A strided n-d region of the storage.
#[derive(Clone, Copy)]
struct View<'a> {
    shape: &'a [usize],
    strides: &'a [usize],
    offset: usize,
}

impl View<'_> {
    fn sub(&self, i: usize) -> View<'_> {
        View {
            shape: &self.shape[1..],
            strides: &self.strides[1..],
            offset: self.offset + i * self.strides[0],
        }
    }
}

/// The element offsets torch's `get_summarized_data` keeps: only the
/// `edgeitems` leading and trailing entries of long dims.
fn summarized(v: View<'_>, opts: &PrintOptions, summarize: bool, out: &mut Vec<usize>) {
    let e = opts.edgeitems;
    match v.shape.len() {
        0 => out.push(v.offset),
        1 => {
            let n = v.shape[0];
            let idx: Vec<usize> = if summarize && n > 2 * e {
                // self[:e] + self[-e:] (with e == 0, self[-0:] is everything)
                let tail = if e == 0 { 0..n } else { n - e..n };
                (0..e).chain(tail).collect()
            } else {
                (0..n).collect()
            };
            out.extend(idx.into_iter().map(|i| v.offset + i * v.strides[0]));
        }
        _ => {
            let n = v.shape[0];
            if summarize && e == 0 {
                return;
            }
            let rows: Vec<usize> = if summarize && n > 2 * e {
                (0..e).chain(n - e..n).collect()
            } else {
                (0..n).collect()
            };
            for i in rows {
                summarized(v.sub(i), opts, summarize, out);
            }
        }
    }
}

/// Python's `"{:.{p}f}".format(v)`.
fn py_fixed(v: f64, p: usize) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:.p$}")
    }
}

/// Python's `"{:.{p}e}".format(v)`: at least two exponent digits, signed.
fn py_sci(v: f64, p: usize) -> String {
    if !v.is_finite() {
        return py_fixed(v, p);
    }
    let s = format!("{v:.p$e}");
    let (mant, exp) = s.split_once('e').expect("{:e} output has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    format!(
        "{mant}e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    )
}

/// torch's `_Formatter`: decides int mode / scientific mode and the column
/// width from the (summarized) values.
struct Formatter {
    floating: bool,
    int_mode: bool,
    sci_mode: bool,
    max_width: usize,
    precision: usize,
}

impl Formatter {
    fn new(vals: &[El], floating: bool, opts: &PrintOptions) -> Formatter {
        let mut f = Formatter {
            floating,
            int_mode: true,
            sci_mode: false,
            max_width: 1,
            precision: opts.precision,
        };
        if !floating {
            for &v in vals {
                f.max_width = f.max_width.max(plain(v).len());
            }
            return f;
        }
        let nz: Vec<f64> = vals
            .iter()
            .filter_map(|v| match *v {
                El::F(x) if x.is_finite() && x != 0.0 => Some(x),
                _ => None,
            })
            .collect();
        if nz.is_empty() {
            return f;
        }
        let min = nz.iter().fold(f64::INFINITY, |m, x| m.min(x.abs()));
        let max = nz.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        f.int_mode = nz.iter().all(|x| *x == x.ceil());
        f.sci_mode = opts
            .sci_mode
            .unwrap_or(max / min > 1000.0 || max > 1.0e8 || min < 1.0e-4);
        let p = f.precision;
        for &x in &nz {
            let w = if f.sci_mode {
                py_sci(x, p).len()
            } else if f.int_mode {
                py_fixed(x, 0).len() + 1
            } else {
                py_fixed(x, p).len()
            };
            f.max_width = f.max_width.max(w);
        }
        f
    }

    fn format(&self, v: El) -> String {
        let s = match v {
            El::F(x) if self.floating => {
                if self.sci_mode {
                    py_sci(x, self.precision)
                } else if self.int_mode {
                    let mut s = py_fixed(x, 0);
                    if x.is_finite() {
                        s.push('.');
                    }
                    s
                } else {
                    py_fixed(x, self.precision)
                }
            }
            other => plain(other),
        };
        pad(s, self.max_width)
    }
}

fn pad(s: String, width: usize) -> String {
    if s.len() >= width {
        s
    } else {
        format!("{}{}", " ".repeat(width - s.len()), s)
    }
}

/// Python's `f"{value}"` for a bool or int element.
fn plain(v: El) -> String {
    match v {
        El::B(true) => "True".into(),
        El::B(false) => "False".into(),
        El::I(i) => i.to_string(),
        El::F(x) => x.to_string(),
    }
}

/// What the text of every slice needs: the elements, their formatter,
/// whether long dims are summarized, and the options.
struct Printer<'a> {
    data: &'a Data<'a>,
    fmt: &'a Formatter,
    summarize: bool,
    opts: &'a PrintOptions,
}

impl Printer<'_> {
    /// `item(i)` for each of `n` entries, or, summarized, for the
    /// `edgeitems` at each end with `gap` between them.
    fn entries(&self, n: usize, gap: &str, item: impl Fn(usize) -> String) -> Vec<String> {
        let e = self.opts.edgeitems;
        if self.summarize && n > 2 * e {
            (0..e)
                .map(&item)
                .chain(std::iter::once(gap.to_string()))
                .chain((n - e..n).map(&item))
                .collect()
        } else {
            (0..n).map(item).collect()
        }
    }

    fn vector(&self, v: View<'_>, indent: usize) -> String {
        let element_length = (self.fmt.max_width + 2) as i64;
        let per_line = ((self.opts.linewidth as i64 - indent as i64).div_euclid(element_length))
            .max(1) as usize;
        let items = if self.summarize && self.opts.edgeitems == 0 {
            vec!["...".into()]
        } else {
            self.entries(v.shape[0], " ...", |i| {
                self.fmt.format(self.data.get(v.offset + i * v.strides[0]))
            })
        };
        let lines: Vec<String> = items.chunks(per_line).map(|c| c.join(", ")).collect();
        format!(
            "[{}]",
            lines.join(&format!(",\n{}", " ".repeat(indent + 1)))
        )
    }

    fn slice(&self, v: View<'_>, indent: usize) -> String {
        match v.shape.len() {
            0 => self.fmt.format(self.data.get(v.offset)),
            1 => self.vector(v, indent),
            dim => {
                let slices = self.entries(v.shape[0], "...", |i| self.slice(v.sub(i), indent + 1));
                let sep = format!(",{}{}", "\n".repeat(dim - 1), " ".repeat(indent + 1));
                format!("[{}]", slices.join(&sep))
            }
        }
    }
}

/// torch's `_tensor_str`: the bracketed values.
fn tensor_str(t: &Tensor, indent: usize, opts: &PrintOptions) -> String {
    if t.numel() == 0 {
        return "[]".into();
    }
    let summarize = t.numel() as f64 > opts.threshold;
    let st = t.storage().read();
    let data = match &*st {
        StorageData::Bool(b) => Data::B(b),
        StorageData::F32(b) => Data::F32(b),
        StorageData::F16(b) => Data::F16(b),
        StorageData::BF16(b) => Data::BF16(b),
        StorageData::F64(b) => Data::F64(b),
        ints => Data::I(ints),
    };
    let view = View {
        shape: t.shape(),
        strides: t.strides(),
        offset: t.storage_offset(),
    };
    let mut offs = Vec::new();
    summarized(view, opts, summarize, &mut offs);
    let vals: Vec<El> = offs.iter().map(|&o| data.get(o)).collect();
    let fmt = Formatter::new(&vals, t.dtype().is_floating(), opts);
    let printer = Printer {
        data: &data,
        fmt: &fmt,
        summarize,
        opts,
    };
    printer.slice(view, indent)
}

/// Python's `str(tuple(shape))`.
fn tuple_str(shape: &[usize]) -> String {
    match shape {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// torch's `_add_suffixes`.
fn add_suffixes(s: String, suffixes: &[String], indent: usize, linewidth: usize) -> String {
    let mut out = s;
    // torch: len(tensor_str) - tensor_str.rfind("\n") + 1 (rfind is -1 when
    // there is no newline).
    let mut last_line_len = out.len() as i64 - out.rfind('\n').map_or(-1, |p| p as i64) + 1;
    for suffix in suffixes {
        let l = suffix.len() as i64;
        if last_line_len + l + 2 > linewidth as i64 {
            out.push_str(&format!(",\n{}{}", " ".repeat(indent), suffix));
            last_line_len = (indent as i64) + l;
        } else {
            out.push_str(", ");
            out.push_str(suffix);
            last_line_len += l + 2;
        }
    }
    out.push(')');
    out
}

/// The full repr, with `prefix` ("tensor(" or "MySubclass(").
pub fn repr_with_prefix(t: &Tensor, prefix: &str) -> String {
    let opts = print_options();
    let indent = prefix.chars().count();
    let mut suffixes = Vec::new();
    let default_float = crate::tensor::dtype::default_float();
    let body = if t.numel() == 0 {
        if t.ndim() != 1 {
            suffixes.push(format!("size={}", tuple_str(t.shape())));
        }
        if t.dtype() != default_float {
            suffixes.push(format!("dtype=ferrograd.{}", t.dtype().name()));
        }
        "[]".to_string()
    } else {
        if opts.edgeitems == 0 {
            suffixes.push(format!("size={}", tuple_str(t.shape())));
        }
        let has_default =
            matches!(t.dtype(), DType::I64 | DType::Bool) || t.dtype() == default_float;
        if !has_default {
            suffixes.push(format!("dtype=ferrograd.{}", t.dtype().name()));
        }
        tensor_str(t, indent, &opts)
    };
    if let Some(node) = t.grad_fn() {
        suffixes.push(format!("grad_fn=<{}>", node.name()));
    } else if t.requires_grad() {
        suffixes.push("requires_grad=True".into());
    }
    add_suffixes(format!("{prefix}{body}"), &suffixes, indent, opts.linewidth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_prints_torchs_repr() {
        let t = Tensor::from_vec(vec![1.0f32, 2.5, -3.0], &[3]).unwrap();
        assert_eq!(t.to_string(), "tensor([ 1.0000,  2.5000, -3.0000])");
        let i = Tensor::from_vec(vec![1i64, 20, 3, 4], &[2, 2]).unwrap();
        assert_eq!(i.to_string(), "tensor([[ 1, 20],\n        [ 3,  4]])");
        let d = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
        assert_eq!(d.to_string(), "tensor([1., 2.], dtype=ferrograd.float64)");
    }

    #[test]
    fn profiles_keep_sci_mode_and_reject_unknown_names() {
        let o = PrintOptions {
            sci_mode: Some(true),
            precision: 7,
            ..PrintOptions::DEFAULT
        };
        let short = o.with_profile("short").unwrap();
        assert_eq!(
            (short.precision, short.edgeitems, short.sci_mode),
            (2, 2, Some(true))
        );
        assert!(o.with_profile("full").unwrap().threshold.is_infinite());
        assert!(o.with_profile("long").is_err());
    }
}
