//! Arrow batches to the GPU and back: every supported type, with nulls, slices, empty
//! and single-row batches, extreme values and long strings, must come back identical.
//! Needs a GPU (`--include-ignored`); the layout logic alone is tested in CI by the
//! `layout` unit tests.

use std::sync::Arc;

use aether_gpu::random::XorShift64;
use aether_gpu::{DeviceBatch, DeviceOptions, GpuDevice, LayoutOptions};
use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int8Array,
    Int16Array, Int32Array, Int64Array, RecordBatch, StringArray, StringViewArray,
    TimestampMicrosecondArray,
};

fn gpu() -> Option<GpuDevice> {
    GpuDevice::discover(
        0,
        &DeviceOptions {
            kernel_cache_dir: None,
            ..DeviceOptions::default()
        },
    )
    .ok()
}

/// A batch of every supported type, `rows` long, with nulls and edge values.
#[expect(
    clippy::unwrap_used,
    reason = "a test helper building fixed, valid data"
)]
fn sample_batch(rows: usize, seed: u64) -> RecordBatch {
    let mut random = XorShift64::new(seed);
    let mut next = move || random.next_u64();
    let mut nullable = |i: usize| (next() % 7 != 0 || i == 0).then_some(i);
    let keep: Vec<Option<usize>> = (0..rows).map(&mut nullable).collect();
    let pick = |i: usize, v: i64| keep[i].map(|_| v);
    let long = "λ".repeat(3000);
    let flags = ["A", "N", "R"];
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, i as i64 % 256 - 128).map(|v| v as i8))
                    .collect::<Int8Array>(),
            ),
        ),
        (
            "i16",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, -(i as i64)).map(|v| v as i16))
                    .collect::<Int16Array>(),
            ),
        ),
        (
            "i32",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, i as i64 * 7919).map(|v| v as i32))
                    .collect::<Int32Array>(),
            ),
        ),
        (
            "i64",
            Arc::new(
                (0..rows)
                    .map(|i| {
                        pick(
                            i,
                            if i % 2 == 0 {
                                i64::MAX - i as i64
                            } else {
                                i64::MIN + i as i64
                            },
                        )
                    })
                    .collect::<Int64Array>(),
            ),
        ),
        (
            "f32",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, 0).map(|_| [f32::NAN, -0.0, f32::MIN_POSITIVE, 1.5][i % 4]))
                    .collect::<Float32Array>(),
            ),
        ),
        (
            "f64",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, 0).map(|_| [f64::INFINITY, -0.0, 1e-308, -2.5][i % 4]))
                    .collect::<Float64Array>(),
            ),
        ),
        (
            "bool",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, 0).map(|_| i % 3 == 0))
                    .collect::<BooleanArray>(),
            ),
        ),
        (
            "date",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, i as i64 - 719_162).map(|v| v as i32))
                    .collect::<Date32Array>(),
            ),
        ),
        (
            "ts",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, i as i64 * 1_000_003))
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("UTC"),
            ),
        ),
        (
            "dec15",
            Arc::new(
                (0..rows)
                    .map(|i| {
                        pick(i, 0).map(|_| {
                            (i as i128 * 104_729) % 1_000_000_000_000_000 - 500_000_000_000_000
                        })
                    })
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        (
            "dec38",
            Arc::new(
                (0..rows)
                    .map(|i| {
                        pick(i, 0).map(|_| {
                            if i % 2 == 0 {
                                i128::MAX / 1000
                            } else {
                                -(i as i128)
                            }
                        })
                    })
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(38, 4)
                    .unwrap(),
            ),
        ),
        (
            "utf8",
            Arc::new(
                (0..rows)
                    .map(|i| {
                        pick(i, 0).map(|_| {
                            if i % 5 == 0 {
                                long.clone()
                            } else {
                                format!("row {i}")
                            }
                        })
                    })
                    .collect::<StringArray>(),
            ),
        ),
        (
            "view",
            Arc::new(
                (0..rows)
                    .map(|i| {
                        pick(i, 0).map(|_| {
                            if i % 11 == 0 {
                                String::new()
                            } else {
                                format!("Customer#{i:09}")
                            }
                        })
                    })
                    .collect::<StringViewArray>(),
            ),
        ),
        (
            "flag",
            Arc::new(
                (0..rows)
                    .map(|i| pick(i, 0).map(|_| flags[i % 3]))
                    .collect::<StringViewArray>(),
            ),
        ),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

#[test]
#[ignore = "needs a GPU"]
fn batches_round_trip_through_the_gpu() {
    let device = gpu().expect("this test needs a GPU");
    let options = LayoutOptions::default();
    for rows in [0, 1, 2, 1000, 1 << 20] {
        let batch = sample_batch(rows, 42 + rows as u64);
        let on_gpu = DeviceBatch::upload(&device, "test", &batch, &options).unwrap();
        assert!(device.memory().used() >= on_gpu.device_bytes() as u64);
        let back = on_gpu.download(&device).unwrap();
        assert_eq!(back.schema(), batch.schema(), "{rows} rows");
        for (i, (got, want)) in back.columns().iter().zip(batch.columns()).enumerate() {
            assert_eq!(
                got.to_data(),
                want.to_data(),
                "{rows} rows, column {}",
                batch.schema().field(i).name()
            );
        }
        // Slices at odd offsets exercise the bitmap realignment.
        if rows > 3 {
            let slice = batch.slice(3, rows - 3);
            let back = DeviceBatch::upload(&device, "test", &slice, &options)
                .unwrap()
                .download(&device)
                .unwrap();
            for (got, want) in back.columns().iter().zip(slice.columns()) {
                assert_eq!(got.to_data(), want.to_data());
            }
        }
        drop(on_gpu);
    }
    assert_eq!(device.memory().used(), 0, "every reservation was released");
}

#[test]
#[ignore = "needs a GPU"]
fn uploads_beyond_the_budget_fail_with_a_gpu_out_of_memory_error() {
    let device = GpuDevice::discover(
        0,
        &DeviceOptions {
            kernel_cache_dir: None,
            alloc_fraction: 1e-9,
            ..DeviceOptions::default()
        },
    )
    .expect("this test needs a GPU");
    let batch = sample_batch(100_000, 7);
    let err = DeviceBatch::upload(&device, "scan", &batch, &LayoutOptions::default()).unwrap_err();
    assert!(err.to_string().starts_with("GPU out of memory"), "{err}");
    assert_eq!(device.memory().used(), 0);
}

/// The slab pool pins lazily up to its cap, lends nothing more (the caller gathers
/// into ordinary memory then), reuses given-back slabs once their copy is done, and
/// takes back slabs dropped without a copy.
#[test]
#[ignore = "needs a GPU"]
fn pinned_slabs_are_lent_up_to_the_cap_and_reused() {
    let device = GpuDevice::discover(
        0,
        &DeviceOptions {
            kernel_cache_dir: None,
            max_slabs: 3,
            slab_bytes: 1 << 20,
            ..DeviceOptions::default()
        },
    )
    .expect("this test needs a GPU");
    let slabs = device.slabs();
    assert_eq!(
        slabs.pinned_bytes(),
        0,
        "nothing is pinned before first use"
    );
    let mut lent: Vec<_> = (0..3).map(|_| slabs.acquire().unwrap().unwrap()).collect();
    assert_eq!(slabs.pinned_bytes(), 3 << 20);
    assert!(slabs.acquire().unwrap().is_none(), "the cap holds");
    // A slab filled, copied out asynchronously and given back with its event.
    let mut slab = lent.pop().unwrap();
    slab.as_mut_slice().fill(7);
    // SAFETY: the slab goes back to the pool only with an event recorded after the copy.
    let on_gpu = unsafe {
        aether_gpu::DeviceBuffer::upload_async(&device, "test", &slab.as_mut_slice()[..4096])
    }
    .unwrap();
    let copied = device.stream().record_event(None).unwrap();
    slabs.release(slab, Some(copied));
    let again = slabs
        .acquire()
        .unwrap()
        .expect("the given-back slab is lent again");
    assert_eq!(
        on_gpu.download(&device).unwrap().as_slice(),
        &[7u8; 4096][..]
    );
    // Dropped without release (a failed query), a slab still returns to the pool.
    drop(lent.pop());
    assert!(slabs.acquire().unwrap().is_some());
    assert_eq!(slabs.pinned_bytes(), 3 << 20, "no slab pinned twice");
    drop(again);
}
