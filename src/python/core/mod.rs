//! The Tensor class and what every binding file shares.

pub(crate) mod args;
pub(crate) mod batched;
pub(crate) mod bind;
pub(crate) mod data;
pub(crate) mod device;
pub(crate) mod dlpack;
pub(crate) mod dtype;
pub(crate) mod errors;
pub(crate) mod generator;
pub(crate) mod identity;
pub(crate) mod numpy;
pub(crate) mod repr;
pub(crate) mod safetensors_io;
pub(crate) mod storage_io;
pub(crate) mod tensor;
