//! Raw loops over buffers. No autograd here: ops call these for their
//! forward values and build history themselves.

pub mod binary;
pub mod copy;
pub mod dense;
pub mod elementwise;
pub mod fold;
pub mod index;
pub mod iter;
pub mod join;
pub mod lanes;
pub mod math;
pub mod matmul;
pub mod overlap;
pub mod prefetch;
pub mod reduce;
pub mod reduced;
#[cfg(target_arch = "x86_64")]
pub mod sgemm;
mod shared_out;
pub mod simd;
pub mod slices;
pub mod special_math;
pub mod transpose;
pub mod unary;
pub mod vmap;
pub mod window;

/// Elementwise work below this many elements stays on the calling thread.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// Matches `$dtype` against the listed dtypes, running `$body` with `$T`
/// bound to each one's element type; `$other => $rest` takes the others.
/// The `dispatch_*` macros below are its cases.
#[macro_export]
macro_rules! dispatch_dtypes {
    ($dtype:expr, $T:ident => $body:expr, [$($dt:ident: $ty:ty),*] $(, $other:pat => $rest:expr)?) => {
        match $dtype {
            $(
                $crate::buffer::DType::$dt => {
                    type $T = $ty;
                    $body
                }
            )*
            $($other => $rest,)?
        }
    };
}

/// Dispatches on a float dtype, binding `$T` to f32 or f64; float16 and
/// bfloat16 callers load into float32 first ([`Tensor::in_compute_dtype`]),
/// and fail with torch's "not implemented" where they do not.
///
/// [`Tensor::in_compute_dtype`]: crate::tensor::Tensor::in_compute_dtype
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtypes!($dtype, $T => $body, [F32: f32, F64: f64], other => {
            if other.is_reduced_float() {
                $crate::bail!(not_implemented, "not implemented for '{}'", other.scalar_type_name())
            }
            $crate::bail!(runtime, "expected a floating point tensor, got {}", other.name())
        })
    };
}

/// Dispatches on a dtype kernels compute in (every dtype but float16 and
/// bfloat16, which callers load into float32 first); binds `$T`.
#[macro_export]
macro_rules! dispatch_computed {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtypes!($dtype, $T => $body, [Bool: bool, U8: u8, I8: i8, I16: i16, I32: i32, I64: i64, F32: f32, F64: f64],
            other => $crate::bail!(internal, "{} reached a kernel that computes in float32", other.name()))
    };
}

/// Dispatches on any dtype, binding `$T` to its Rust element type.
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtypes!($dtype, $T => $body, [Bool: bool, U8: u8, I8: i8, I16: i16, I32: i32, I64: i64,
            F16: half::f16, BF16: half::bf16, F32: f32, F64: f64])
    };
}

/// Dispatches on an integer (not bool) dtype, binding `$T`; other dtypes
/// are a bug in the caller.
#[macro_export]
macro_rules! dispatch_ints {
    ($dtype:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtypes!($dtype, $T => $body, [U8: u8, I8: i8, I16: i16, I32: i32, I64: i64],
            other => unreachable!("{} is not an integer dtype", other.name()))
    };
}

/// Dispatches on a numeric (non-bool) dtype, binding `$T`; bool fails
/// with torch's "not implemented for 'Bool'" naming `$op`.
#[macro_export]
macro_rules! dispatch_numeric {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        $crate::dispatch_dtypes!($dtype, $T => $body, [U8: u8, I8: i8, I16: i16, I32: i32, I64: i64, F32: f32, F64: f64],
            other @ ($crate::buffer::DType::Bool | $crate::buffer::DType::F16 | $crate::buffer::DType::BF16) => {
                $crate::bail!(not_implemented, "\"{}\" not implemented for '{}'", $op, other.scalar_type_name())
            })
    };
}
