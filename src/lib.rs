//! ferrograd: a CPU autograd engine with a PyTorch-compatible API.
//!
//! ```
//! use ferrograd::{DType, Tensor};
//! let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap().requires_grad_(true).unwrap();
//! let y = x.mul(&x).unwrap().sum().unwrap();
//! y.backward().unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![2.0, 4.0, 6.0]);
//! ```

pub mod autograd;
pub mod buffer;
pub mod error;
pub mod kernels;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod parallel;
pub mod tensor;

#[cfg(feature = "python")]
mod python;

pub use error::{Error, ErrorKind, Result};
pub use parallel::{num_threads, set_num_threads};
pub use tensor::random::{manual_seed, Generator};
pub use tensor::{DType, Scalar, Tensor};
