//! The prost messages and tonic service generated from `proto/spark/connect/*.proto`.
#![allow(
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations,
    clippy::clone_on_ref_ptr
)]

tonic::include_proto!("spark.connect");
