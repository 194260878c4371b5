//! How Arrow types appear in generated CUDA code.

use aether_gpu::layout::{DeviceForm, LayoutOptions, device_form_of};
use datafusion::arrow::datatypes::DataType;

use crate::reason::{PlacementReason, ReasonCode};

/// The CUDA representation of a value in generated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    /// A decimal held as a 64-bit integer with `scale` digits after the point
    /// (precision <= 18), as `DeviceForm::NarrowDecimal` uploads it.
    Dec64 {
        precision: u8,
        scale: i8,
    },
    /// A decimal held as a 128-bit integer.
    Dec128 {
        precision: u8,
        scale: i8,
    },
    /// A string as its `i32` code in the column's dictionary (`DeviceForm::DictionaryCodes`).
    StrCode,
}

impl CudaType {
    /// The type for values of `data_type`, or why there is none.
    pub fn of(data_type: &DataType) -> Result<Self, PlacementReason> {
        let unsupported = || {
            PlacementReason::new(
                ReasonCode::UnsupportedType,
                format!("expressions over {data_type} are not generated for the GPU yet"),
            )
        };
        Ok(match data_type {
            DataType::Boolean => Self::Bool,
            DataType::Int8 => Self::I8,
            DataType::Int16 => Self::I16,
            DataType::Int32 | DataType::Date32 => Self::I32,
            DataType::Int64 => Self::I64,
            DataType::Float32 => Self::F32,
            DataType::Float64 => Self::F64,
            DataType::Decimal128(precision, scale) => {
                match device_form_of(data_type, &LayoutOptions::default()) {
                    Ok(DeviceForm::NarrowDecimal) => Self::Dec64 {
                        precision: *precision,
                        scale: *scale,
                    },
                    _ => Self::Dec128 {
                        precision: *precision,
                        scale: *scale,
                    },
                }
            }
            _ => return Err(unsupported()),
        })
    }

    /// The C type name.
    pub fn c_name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::I8 => "signed char",
            Self::I16 => "short",
            Self::I32 | Self::StrCode => "int",
            Self::I64 | Self::Dec64 { .. } => "long long",
            Self::F32 => "float",
            Self::F64 => "double",
            Self::Dec128 { .. } => "__int128",
        }
    }

    /// The unsigned type of the same width, for wrapping integer arithmetic (signed
    /// overflow is undefined in C; Arrow and DataFusion wrap).
    pub fn unsigned_name(self) -> Option<&'static str> {
        match self {
            Self::I8 => Some("unsigned char"),
            Self::I16 => Some("unsigned short"),
            Self::I32 => Some("unsigned int"),
            Self::I64 => Some("unsigned long long"),
            _ => None,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64)
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Self::I8 | Self::I16 | Self::I32 | Self::I64)
    }

    pub fn decimal_scale(self) -> Option<i8> {
        match self {
            Self::Dec64 { scale, .. } | Self::Dec128 { scale, .. } => Some(scale),
            _ => None,
        }
    }

    /// The declared precision of a decimal type.
    pub fn decimal_precision(self) -> Option<u8> {
        match self {
            Self::Dec64 { precision, .. } | Self::Dec128 { precision, .. } => Some(precision),
            _ => None,
        }
    }

    /// Bytes per value in the device layout (booleans are bit-packed there).
    pub fn width(self) -> usize {
        match self {
            Self::Bool | Self::I8 => 1,
            Self::I16 => 2,
            Self::I32 | Self::F32 | Self::StrCode => 4,
            Self::I64 | Self::F64 | Self::Dec64 { .. } => 8,
            Self::Dec128 { .. } => 16,
        }
    }
}
