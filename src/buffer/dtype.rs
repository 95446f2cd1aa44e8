//! Element types and torch's type-promotion rules.

use super::storage::{Buf, StorageData};
use std::fmt::Debug;

/// The element type of a tensor, ordered by promotion rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// The default floating dtype's index in [`DType::ALL`] (see
/// [`default_float`]); float32 at start.
static DEFAULT_FLOAT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(8);
const _: () = assert!(matches!(DType::ALL[8], DType::F32));

/// The default floating dtype (torch.get_default_dtype()): what Python
/// floats, float-producing ops on integer tensors and the creation
/// functions use. Process-wide, as in torch.
pub fn default_float() -> DType {
    DType::ALL[DEFAULT_FLOAT.load(std::sync::atomic::Ordering::Relaxed) as usize]
}

/// torch.set_default_dtype: a floating dtype only.
pub fn set_default_float(dtype: DType) -> crate::Result<()> {
    if !dtype.is_floating() {
        crate::bail!(
            type_error,
            "only floating-point types are supported as the default type"
        );
    }
    let index = DType::ALL
        .iter()
        .position(|&d| d == dtype)
        .expect("every dtype is in ALL");
    DEFAULT_FLOAT.store(index as u8, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// A floating dtype's limits, by torch.finfo's names: `eps` (the gap
/// above 1), `max` (`min` is `-max`), `tiny` (the smallest normal) and
/// `resolution` (about 10^-digits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatLimits {
    pub eps: f64,
    pub max: f64,
    pub tiny: f64,
    pub resolution: f64,
}

impl DType {
    /// Every dtype, in promotion-rank order.
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];
    /// The dtype named `name` (torch's name without the module: "int32").
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }
    /// torch's ScalarType name for error messages ("Float", "Long").
    pub fn scalar_type_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
        }
    }
    /// The C type name c10's conversion errors use ("uint8_t", "float").
    pub fn c10_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8_t",
            DType::I8 => "int8_t",
            DType::I16 => "int16_t",
            DType::I32 => "int32_t",
            DType::I64 => "int64_t",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    /// torch's legacy tensor type name ("FloatTensor", "IntTensor").
    pub fn legacy_tensor_name(self) -> &'static str {
        match self {
            DType::Bool => "BoolTensor",
            DType::U8 => "ByteTensor",
            DType::I8 => "CharTensor",
            DType::I16 => "ShortTensor",
            DType::I32 => "IntTensor",
            DType::I64 => "LongTensor",
            DType::F16 => "HalfTensor",
            DType::BF16 => "BFloat16Tensor",
            DType::F32 => "FloatTensor",
            DType::F64 => "DoubleTensor",
        }
    }
    /// torch's C++ type name for error messages ("float", "long int").
    pub fn cpp_type_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "unsigned char",
            DType::I8 => "signed char",
            DType::I16 => "short int",
            DType::I32 => "int",
            DType::I64 => "long int",
            DType::F16 => "c10::Half",
            DType::BF16 => "c10::BFloat16",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }
    pub fn is_floating(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    /// float16 and bfloat16: stored in 2 bytes, computed in float32.
    pub fn is_reduced_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
    /// The dtype kernels compute in (torch's opmath type): float16 and
    /// bfloat16 load into float32, the rest compute as they are stored.
    pub fn compute(self) -> DType {
        if self.is_reduced_float() {
            DType::F32
        } else {
            self
        }
    }
    pub fn itemsize(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }
    /// The category torch promotes by: bool < integral < floating.
    pub fn category(self) -> u8 {
        match self {
            DType::Bool => 0,
            DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => 1,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => 2,
        }
    }
    /// The smallest and largest value of an integer dtype (iinfo).
    pub fn int_bounds(self) -> Option<(i64, i64)> {
        Some(match self {
            DType::U8 => (0, u8::MAX as i64),
            DType::I8 => (i8::MIN as i64, i8::MAX as i64),
            DType::I16 => (i16::MIN as i64, i16::MAX as i64),
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            DType::I64 => (i64::MIN, i64::MAX),
            _ => return None,
        })
    }
    /// The machine limits of a floating dtype (finfo), `None` for others.
    pub fn float_limits(self) -> Option<FloatLimits> {
        use half::{bf16, f16};
        let (eps, max, tiny, resolution) = match self {
            DType::F32 => (
                f32::EPSILON as f64,
                f32::MAX as f64,
                f32::MIN_POSITIVE as f64,
                1e-6,
            ),
            DType::F64 => (f64::EPSILON, f64::MAX, f64::MIN_POSITIVE, 1e-15),
            DType::F16 => (
                f16::EPSILON.to_f64(),
                f16::MAX.to_f64(),
                f16::MIN_POSITIVE.to_f64(),
                1e-3,
            ),
            DType::BF16 => (
                bf16::EPSILON.to_f64(),
                bf16::MAX.to_f64(),
                bf16::MIN_POSITIVE.to_f64(),
                1e-2,
            ),
            _ => return None,
        };
        Some(FloatLimits {
            eps,
            max,
            tiny,
            resolution,
        })
    }
    /// Integer dtypes (not bool).
    pub fn is_integral(self) -> bool {
        self.category() == 1
    }
    /// Signed dtypes: all but bool and uint8.
    pub fn is_signed(self) -> bool {
        !matches!(self, DType::Bool | DType::U8)
    }
    /// Promotion of two tensors of the same priority class: the higher
    /// rank, except that uint8 with int8 needs int16 to hold both ranges.
    pub fn promote(a: DType, b: DType) -> DType {
        match (a, b) {
            (DType::U8, DType::I8) | (DType::I8, DType::U8) => DType::I16,
            (DType::F16, DType::BF16) | (DType::BF16, DType::F16) => DType::F32,
            _ => a.max(b),
        }
    }
    /// The dtype floating ops compute in: floats stay, others become float32.
    pub fn to_floating(self) -> DType {
        if self.is_floating() {
            self
        } else {
            default_float()
        }
    }
}

/// A Python-style number: the wrapped-number operand of tensor ⊕ scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    /// The value as an element of `T`, converted as `full` converts it
    /// (integers exactly into int64, everything else through float64).
    pub fn cast<T: Element>(self) -> T {
        match (T::DTYPE, self) {
            (DType::I64, Scalar::Int(i)) => T::from_i64(i),
            _ => T::from_f64(self.to_f64()),
        }
    }
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as i64 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    /// The dtype a bare scalar of this kind becomes (torch.tensor(3.0) etc.).
    pub fn dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => default_float(),
        }
    }
    pub fn category(self) -> u8 {
        self.dtype().category()
    }
    /// The value converted to `dt`, or torch's error when it does not fit
    /// (c10's `checked_convert`, which fill, full, masked_fill, clamp and
    /// the like apply): a finite float beyond float32's range; for integer
    /// dtypes a NaN or a float outside the type's range, or an integer
    /// outside it (uint8 takes -255..=255: negative integers wrap).
    pub fn checked_to(self, dt: DType) -> crate::Result<Scalar> {
        let overflow = match (dt, self) {
            (_, Scalar::Bool(_))
            | (DType::Bool | DType::F64 | DType::F16 | DType::BF16, _)
            | (DType::F32, Scalar::Int(_)) => false,
            (DType::F32, Scalar::Float(f)) => f.is_finite() && f.abs() > f32::MAX as f64,
            (DType::I64, Scalar::Float(f)) => !(f >= -(2f64.powi(63)) && f < 2f64.powi(63)),
            (int, Scalar::Float(f)) => {
                let (lo, hi) = int.int_bounds().expect("an integer dtype");
                !(f >= lo as f64 && f <= hi as f64)
            }
            (DType::U8, Scalar::Int(i)) => !(-255..=255).contains(&i),
            (int, Scalar::Int(i)) => {
                let (lo, hi) = int.int_bounds().expect("an integer dtype");
                !(lo..=hi).contains(&i)
            }
        };
        if overflow {
            crate::bail!(
                runtime,
                "value cannot be converted to type {} without overflow",
                dt.c10_name()
            );
        }
        let v = self.to_f64();
        Ok(match dt {
            DType::Bool => Scalar::Bool(v != 0.0 || v.is_nan()),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Scalar::Float(v),
            _ => Scalar::Int(match self {
                Scalar::Int(i) => i,
                _ => v as i64,
            }),
        })
    }
}

impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float(v)
    }
}
impl From<f32> for Scalar {
    fn from(v: f32) -> Self {
        Scalar::Float(v as f64)
    }
}
impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int(v)
    }
}
impl From<i32> for Scalar {
    fn from(v: i32) -> Self {
        Scalar::Int(v as i64)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}

/// torch's result type of `tensor ⊕ scalar`: the scalar only wins when it is
/// of a higher category, and then gives that category's default dtype.
pub fn result_type_scalar(t: DType, s: Scalar) -> DType {
    if s.category() > t.category() {
        s.dtype()
    } else {
        t
    }
}

/// torch's result type of two tensors: dimensioned tensors outrank 0-dim
/// ones, which are promoted like scalars of their category.
pub fn result_type(a: DType, a_dim0: bool, b: DType, b_dim0: bool) -> DType {
    match (a_dim0, b_dim0) {
        (false, true) | (true, false) => {
            let (t, s) = if a_dim0 { (b, a) } else { (a, b) };
            if s.category() > t.category() {
                s
            } else {
                t
            }
        }
        _ => DType::promote(a, b),
    }
}

/// A Rust type that can be the element of a tensor.
pub trait Element: Copy + Send + Sync + Debug + PartialOrd + Default + 'static {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
    fn to_bool(self) -> bool;
    fn from_bool(v: bool) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    /// This type's buffer inside storage data, if the storage holds this type.
    fn slice(d: &StorageData) -> Option<&[Self]>;
    fn slice_mut(d: &mut StorageData) -> Option<&mut [Self]>;
    fn wrap(v: Vec<Self>) -> StorageData;
    /// Storage data around `b` (owned or borrowed memory).
    fn wrap_buf(b: Buf<Self>) -> StorageData;
    /// The owned vector inside `d`, when `d` is an owned buffer of `Self`.
    fn into_vec(d: StorageData) -> std::result::Result<Vec<Self>, StorageData>;
    /// Appends the value's little-endian bytes (bool: one byte, 0 or 1).
    fn put_le(self, out: &mut Vec<u8>);
    /// The value from its little-endian bytes (exactly `itemsize` of them).
    fn read_le(b: &[u8]) -> Self;
}

macro_rules! impl_storage_access {
    ($variant:ident) => {
        #[inline(always)]
        fn slice(d: &StorageData) -> Option<&[Self]> {
            match d {
                StorageData::$variant(b) => Some(b),
                _ => None,
            }
        }
        #[inline(always)]
        fn slice_mut(d: &mut StorageData) -> Option<&mut [Self]> {
            match d {
                StorageData::$variant(b) => Some(b),
                _ => None,
            }
        }
        fn wrap(v: Vec<Self>) -> StorageData {
            StorageData::$variant(Buf::Owned(v))
        }
        fn wrap_buf(b: Buf<Self>) -> StorageData {
            StorageData::$variant(b)
        }
        fn into_vec(d: StorageData) -> std::result::Result<Vec<Self>, StorageData> {
            match d {
                StorageData::$variant(Buf::Owned(v)) => Ok(v),
                other => Err(other),
            }
        }
    };
}

macro_rules! impl_num_element {
    ($t:ty, $dt:expr, $variant:ident) => {
        impl_num_element!($t, $dt, $variant, |v| v as $t);
    };
    ($t:ty, $dt:expr, $variant:ident, |$v:ident| $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            impl_storage_access!($variant);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64($v: f64) -> Self {
                $from_f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self != (0 as $t)
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                v as i64 as $t
            }
            #[inline(always)]
            fn zero() -> Self {
                0 as $t
            }
            #[inline(always)]
            fn one() -> Self {
                1 as $t
            }
            #[inline(always)]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes())
            }
            #[inline(always)]
            fn read_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("itemsize bytes"))
            }
        }
    };
}
impl_num_element!(f32, DType::F32, F32);
impl_num_element!(f64, DType::F64, F64);
impl_num_element!(i64, DType::I64, I64);
// Floats become narrow integers through int64, wrapping out-of-range values
// as torch's CPU casts do (300.0 -> uint8 44, -1.0 -> uint8 255).
impl_num_element!(i32, DType::I32, I32, |v| v as i64 as i32);
impl_num_element!(i16, DType::I16, I16, |v| v as i64 as i16);
impl_num_element!(i8, DType::I8, I8, |v| v as i64 as i8);
impl_num_element!(u8, DType::U8, U8, |v| v as i64 as u8);

// float16 and bfloat16 convert through float32, as c10's Half and BFloat16
// constructors do (a float64 value is first rounded to float32).
macro_rules! impl_half_element {
    ($t:ty, $dt:expr, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            impl_storage_access!($variant);
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self.to_f32() as i64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f32(v as f32)
            }
            #[inline(always)]
            fn to_bool(self) -> bool {
                self.to_f32() != 0.0
            }
            #[inline(always)]
            fn from_bool(v: bool) -> Self {
                if v {
                    <$t>::ONE
                } else {
                    <$t>::ZERO
                }
            }
            #[inline(always)]
            fn zero() -> Self {
                <$t>::ZERO
            }
            #[inline(always)]
            fn one() -> Self {
                <$t>::ONE
            }
            #[inline(always)]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes())
            }
            #[inline(always)]
            fn read_le(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("itemsize bytes"))
            }
        }
    };
}
impl_half_element!(half::f16, DType::F16, F16);
impl_half_element!(half::bf16, DType::BF16, BF16);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    impl_storage_access!(Bool);
    fn to_f64(self) -> f64 {
        self as i64 as f64
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn to_bool(self) -> bool {
        self
    }
    fn from_bool(v: bool) -> Self {
        v
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn put_le(self, out: &mut Vec<u8>) {
        out.push(self as u8)
    }
    fn read_le(b: &[u8]) -> Self {
        b[0] != 0
    }
}

/// Floating element types: the math the differentiable kernels need.
pub trait Float:
    Element
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::iter::Sum
{
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn exp_m1(self) -> Self;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
    fn max_val(self, o: Self) -> Self;
    fn min_val(self, o: Self) -> Self;
}

macro_rules! impl_float {
    ($t:ty) => {
        impl Float for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                <$t>::exp_m1(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            /// NaN-propagating maximum, as torch's `maximum`; on a tie
            /// (0.0 and -0.0) `self`, as torch's scalar loop
            /// (`std::max(a, b)`) and its clamp.
            #[inline(always)]
            fn max_val(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if self < o {
                    o
                } else {
                    self
                }
            }
            /// NaN-propagating minimum; on a tie `self` (`std::min(a, b)`).
            #[inline(always)]
            fn min_val(self, o: Self) -> Self {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if o < self {
                    o
                } else {
                    self
                }
            }
        }
    };
}
impl_float!(f32);
impl_float!(f64);
