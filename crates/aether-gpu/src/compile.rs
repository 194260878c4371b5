//! Kernel compilation with NVRTC, to CUBIN for the device's own architecture.
//!
//! CUBIN rather than PTX: loading a CUBIN takes about 0.08 ms, while PTX is JIT-compiled
//! by the driver at load (about 80 ms on the H200, GPU.md). `cudarc`'s `compile_ptx`
//! returns PTX only, so this drives NVRTC's C API directly.

use std::ffi::CString;

use cudarc::nvrtc::{result as nvrtc, sys};

use crate::error::DeviceError;

/// The NVRTC options every kernel is built with. Results must equal the CPU's, so no
/// fast-math (IEEE division, square root and denormals stay) and no fused multiply-add
/// contraction (`x * y + z` rounded once would differ from the CPU's two roundings).
fn options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "--device-as-default-execution-space".to_string(),
        "--fmad=false".to_string(),
        // Decimals wider than 18 digits are 128-bit integers on the device.
        "--device-int128".to_string(),
    ]
}

/// Whether NVRTC (`libnvrtc.so`) can be loaded: kernels compile without a GPU or its
/// driver, from NVRTC alone.
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to load the library by name; no NVRTC function is called.
    unsafe { sys::is_culib_present() }
}

/// The NVRTC version, as (major, minor).
pub fn nvrtc_version() -> Result<(i32, i32), DeviceError> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are to live locals; NVRTC was found present before any
    // caller reaches here (`device::discover` checks it first).
    let status = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if status == sys::nvrtcResult::NVRTC_SUCCESS {
        Ok((major, minor))
    } else {
        Err(DeviceError::Unavailable(format!(
            "NVRTC did not report its version ({status:?})"
        )))
    }
}

/// Compiles CUDA C++ `source` to a CUBIN for `arch` (such as `sm_90`).
///
/// `kernel` names the source in error messages and in NVRTC's log.
pub fn compile_cubin(source: &str, kernel: &str, arch: &str) -> Result<Vec<u8>, DeviceError> {
    let compile_error = |log: String| DeviceError::Compile {
        kernel: kernel.to_string(),
        arch: arch.to_string(),
        log,
    };
    let c_source =
        CString::new(source).map_err(|_| compile_error("source holds a NUL byte".into()))?;
    let c_name = CString::new(format!("{kernel}.cu"))
        .map_err(|_| compile_error("kernel name holds a NUL byte".into()))?;
    let program = nvrtc::create_program(&c_source, Some(&c_name))
        .map_err(|e| compile_error(format!("NVRTC could not create the program: {e:?}")))?;

    // SAFETY: `program` was created above and is destroyed exactly once, below.
    let compiled = unsafe { nvrtc::compile_program(program, &options(arch)) };
    let result = match compiled {
        Ok(()) => read_cubin(program).map_err(compile_error),
        Err(_) => Err(compile_error(program_log(program))),
    };
    // SAFETY: `program` is live and not used after this.
    let _ = unsafe { nvrtc::destroy_program(program) };
    result
}

/// The compiler's log for `program`, as text.
fn program_log(program: sys::nvrtcProgram) -> String {
    // SAFETY: `program` is a live program owned by the caller.
    match unsafe { nvrtc::get_program_log(program) } {
        Ok(log) => {
            let bytes: Vec<u8> = log
                .iter()
                .take_while(|c| **c != 0)
                .map(|c| *c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).trim().to_string()
        }
        Err(e) => format!("(no compiler log: {e:?})"),
    }
}

/// The CUBIN of a successfully compiled `program`.
fn read_cubin(program: sys::nvrtcProgram) -> Result<Vec<u8>, String> {
    let mut size = 0usize;
    // SAFETY: `program` is live and compiled; `size` is a live local.
    let status = unsafe { sys::nvrtcGetCUBINSize(program, &mut size) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
        return Err(format!(
            "NVRTC produced no CUBIN ({status:?}); is the architecture a real one (sm_XX)?"
        ));
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds exactly the `size` bytes NVRTC reported for this program.
    let status = unsafe { sys::nvrtcGetCUBIN(program, cubin.as_mut_ptr().cast()) };
    if status != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("NVRTC could not return the CUBIN ({status:?})"));
    }
    Ok(cubin)
}
