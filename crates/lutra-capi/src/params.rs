//! tinySTM's `stm_get_parameter`, `stm_set_parameter` and `stm_get_clock`.
//!
//! | name | written as | value |
//! |------|-----------|-------|
//! | `design` | `const char *` | `"wb-ctl"` or `"wb-etl"` |
//! | `contention_manager` | `const char *` | `"suicide"`, `"backoff"`, `"aggressive"`, `"timestamp"`, `"size_matters"`, `"priority"` (or `"custom"`) |
//! | `version` | `const char *` | Lutra's version |
//!
//! The strings are static: they stay valid for the life of the process.

use crate::boundary;
use crate::engine;
use crate::status::{CapiError, CapiResult};
use lutra_stm::{DesignKind, cm};
use std::ffi::{CStr, c_char, c_int, c_void};

/// The managers' names as C strings, in the order of [`cm::NAMES`].
const MANAGER_NAMES: [&CStr; 6] = [
    c"suicide",
    c"backoff",
    c"aggressive",
    c"timestamp",
    c"size_matters",
    c"priority",
];

const VERSION: &CStr =
    match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
        Ok(version) => version,
        Err(_) => panic!("the version contains a NUL byte"),
    };

fn design_name(design: DesignKind) -> &'static CStr {
    match design {
        DesignKind::WriteBackCtl => c"wb-ctl",
        DesignKind::WriteBackEtl => c"wb-etl",
    }
}

fn manager_name(name: &str) -> &'static CStr {
    cm::NAMES
        .iter()
        .position(|known| *known == name)
        .map_or(c"custom", |at| MANAGER_NAMES[at])
}

/// The parameter `name`, or `None` when unknown.
fn parameter(name: &str) -> CapiResult<Option<&'static CStr>> {
    let stm = engine::current()?;
    Ok(match name {
        "design" => Some(design_name(stm.config().design)),
        "contention_manager" => Some(manager_name(stm.config().manager.name())),
        "version" => Some(VERSION),
        _ => None,
    })
}

/// tinySTM's `stm_get_parameter`: writes the parameter `name` (see the module table,
/// all strings) to `*(const char **)val` and returns 1. Returns 0 with the thread's
/// last error set for an unknown name, NULL arguments, or no engine. May be called
/// from any thread once `stm_init` has run.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `val` NULL or a writable
/// `const char *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_get_parameter(name: *const c_char, val: *mut c_void) -> c_int {
    boundary::value(
        "stm_get_parameter",
        |_| 0,
        || {
            if name.is_null() || val.is_null() {
                return Err(CapiError::invalid("name and val must not be NULL"));
            }
            // SAFETY: `name` is a NUL-terminated string (contract).
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            let value = parameter(&name)?
                .ok_or_else(|| CapiError::invalid(format!("unknown parameter \"{name}\"")))?;
            // SAFETY: `val` points to a writable `const char *` (contract).
            unsafe { val.cast::<*const c_char>().write(value.as_ptr()) };
            Ok(1)
        },
    )
}

/// tinySTM's `stm_set_parameter`: Lutra has no parameter that can change while the
/// engine runs (choose them at `stm_init`), so this returns 0 and sets the thread's
/// last error (`LUTRA_EINVAL`).
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string (`val` is not read).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stm_set_parameter(name: *const c_char, val: *mut c_void) -> c_int {
    let _ = val;
    boundary::value(
        "stm_set_parameter",
        |_| 0,
        || {
            let name = if name.is_null() {
                "(null)".into()
            } else {
                // SAFETY: `name` is a NUL-terminated string (contract).
                unsafe { CStr::from_ptr(name) }.to_string_lossy()
            };
            Err(CapiError::invalid(format!(
                "parameter \"{name}\" cannot be set (choose the design and manager at stm_init)"
            )))
        },
    )
}

/// tinySTM's `stm_get_clock`: the global version clock (the number of update
/// commits so far), or 0 with the thread's last error set when the engine is not
/// initialized.
#[unsafe(no_mangle)]
pub extern "C" fn stm_get_clock() -> usize {
    boundary::value(
        "stm_get_clock",
        |_| 0,
        || Ok(engine::current()?.clock() as usize),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_manager_has_a_c_name() {
        for name in cm::NAMES {
            assert_eq!(manager_name(name).to_str().unwrap(), name);
        }
        assert_eq!(manager_name("mine"), c"custom");
        assert_eq!(VERSION.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
