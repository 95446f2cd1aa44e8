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
pub mod prefetch;
pub mod reduce;
#[cfg(target_arch = "x86_64")]
pub mod sgemm;
mod shared_out;
pub mod slices;
pub mod special_math;
pub mod transpose;
pub mod unary;
pub mod vmap;
pub mod window;

/// Elementwise work below this many elements stays on the calling thread.
pub const PAR_THRESHOLD: usize = 1 << 15;

/// Dispatches on a float dtype, binding `$T` to f32 or f64.
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::buffer::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::buffer::DType::F64 => {
                type $T = f64;
                $body
            }
            other => $crate::bail!(
                runtime,
                "expected a floating point tensor, got {}",
                other.name()
            ),
        }
    };
}

/// Dispatches on any dtype, binding `$T` to its Rust element type.
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::buffer::DType::Bool => {
                type $T = bool;
                $body
            }
            $crate::buffer::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::buffer::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::buffer::DType::F64 => {
                type $T = f64;
                $body
            }
        }
    };
}

/// Dispatches on a numeric (non-bool) dtype, binding `$T`; bool fails
/// with torch's "not implemented for 'Bool'" naming `$op`.
#[macro_export]
macro_rules! dispatch_numeric {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::buffer::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::buffer::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::buffer::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::buffer::DType::Bool => {
                $crate::bail!(not_implemented, "\"{}\" not implemented for 'Bool'", $op)
            }
        }
    };
}
