//! The runtime's own chunks as every new process state loads them: Lua 5.4 bytecode
//! without the names of local variables and upvalues.
//!
//! A new state loads the prelude and the other chunks from bytecode (`precompiled`);
//! loading interns every string in it, and the names of locals and upvalues (the
//! debug information that only error messages about those names and `debug.getlocal`
//! read) are most of its strings. They are dropped here; the chunk's source name
//! and its line information stay, so positions in errors and tracebacks, and the
//! checks that recognise the runtime's own frames by their source, are unchanged.
//!
//! The format is `ldump.c`'s (Lua 5.4): a header, the main function's upvalue count,
//! then each function as source, lines, sizes, code, constants, upvalues, nested
//! functions and debug information (line info, absolute line info, local variables,
//! upvalue names). Sizes are `dumpSize` varints: 7 bits a byte, most significant
//! first, the last byte marked with 0x80.
//!
//! # Invariants
//! - The rewrite copies every byte except the local-variable and upvalue-name lists,
//!   each replaced by an empty list; anything it does not recognise (another
//!   version, a truncated dump) gives `None`, and the caller keeps the full dump.

/// The header: signature, version, format, `LUAC_DATA`, three sizes, `LUAC_INT`,
/// `LUAC_NUM`.
const HEADER: usize = 4 + 1 + 1 + 6 + 3 + 8 + 8;

/// Lua 5.4's version byte in a dump.
const VERSION: u8 = 0x54;

/// Constant tags (`lobject.h`'s variant tags).
const NIL: u8 = 0x00;
const FALSE: u8 = 0x01;
const TRUE: u8 = 0x11;
const INTEGER: u8 = 0x03;
const FLOAT: u8 = 0x13;
const SHORT_STRING: u8 = 0x04;
const LONG_STRING: u8 = 0x14;

/// `dump` (from `string.dump` / `lua_dump` without stripping) without the names of
/// locals and upvalues; `None` if it is not a Lua 5.4 dump this reads.
pub(crate) fn without_local_names(dump: &[u8]) -> Option<Vec<u8>> {
    if dump.len() < HEADER + 1 || !dump.starts_with(b"\x1bLua") || dump[4] != VERSION {
        return None;
    }
    if dump[12] != 4 || dump[13] != 8 || dump[14] != 8 {
        return None;
    }
    let mut rewrite = Rewrite {
        from: dump,
        at: HEADER + 1,
        out: dump[..HEADER + 1].to_vec(),
    };
    rewrite.function()?;
    (rewrite.at == dump.len()).then_some(rewrite.out)
}

struct Rewrite<'a> {
    from: &'a [u8],
    at: usize,
    out: Vec<u8>,
}

impl Rewrite<'_> {
    /// Reads `count` bytes, copying them.
    fn copy(&mut self, count: usize) -> Option<()> {
        let end = self.at.checked_add(count)?;
        self.out.extend_from_slice(self.from.get(self.at..end)?);
        self.at = end;
        Some(())
    }

    /// Reads a `dumpSize` varint without copying it.
    fn size(&mut self) -> Option<usize> {
        let mut value: usize = 0;
        loop {
            let byte = *self.from.get(self.at)?;
            self.at += 1;
            value = value
                .checked_mul(128)?
                .checked_add(usize::from(byte & 0x7f))?;
            if byte & 0x80 != 0 {
                return Some(value);
            }
        }
    }

    /// Reads a varint, copying it.
    fn copy_size(&mut self) -> Option<usize> {
        let start = self.at;
        let value = self.size()?;
        self.out.extend_from_slice(&self.from[start..self.at]);
        Some(value)
    }

    /// Reads a string (its size plus one, 0 for none), copying it.
    fn copy_string(&mut self) -> Option<()> {
        let size = self.copy_size()?;
        self.copy(size.saturating_sub(1))
    }

    /// Reads a string without copying it.
    fn skip_string(&mut self) -> Option<()> {
        let size = self.size()?;
        let end = self.at.checked_add(size.saturating_sub(1))?;
        (end <= self.from.len()).then(|| self.at = end)
    }

    /// Writes an empty list.
    fn empty_list(&mut self) {
        self.out.push(0x80);
    }

    fn function(&mut self) -> Option<()> {
        self.copy_string()?; // source
        self.copy_size()?; // linedefined
        self.copy_size()?; // lastlinedefined
        self.copy(3)?; // numparams, is_vararg, maxstacksize
        let code = self.copy_size()?;
        self.copy(code.checked_mul(4)?)?;
        let constants = self.copy_size()?;
        for _ in 0..constants {
            let tag = *self.from.get(self.at)?;
            self.copy(1)?;
            match tag {
                NIL | FALSE | TRUE => {}
                INTEGER | FLOAT => self.copy(8)?,
                SHORT_STRING | LONG_STRING => self.copy_string()?,
                _ => return None,
            }
        }
        let upvalues = self.copy_size()?;
        self.copy(upvalues.checked_mul(3)?)?;
        let functions = self.copy_size()?;
        for _ in 0..functions {
            self.function()?;
        }
        let line_info = self.copy_size()?;
        self.copy(line_info)?;
        let absolute = self.copy_size()?;
        for _ in 0..absolute {
            self.copy_size()?;
            self.copy_size()?;
        }
        let locals = self.size()?;
        for _ in 0..locals {
            self.skip_string()?;
            self.size()?;
            self.size()?;
        }
        self.empty_list();
        let names = self.size()?;
        for _ in 0..names {
            self.skip_string()?;
        }
        self.empty_list();
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::without_local_names;
    use mlua::{Function, Lua};

    const SOURCE: &str = r#"
        local greeting, count = "hello", 3
        local function shout(text) return text:upper() .. ("!"):rep(count) end
        return function(fail)
          if fail then error("failed here") end
          return shout(greeting), 1.5, 2^53, nil, true, false, ("x"):rep(100)
        end
    "#;

    #[test]
    fn the_rewrite_runs_alike_and_keeps_positions_but_not_local_names() {
        // SAFETY: a test state; the debug library only reads names here.
        let lua = unsafe { Lua::unsafe_new() };
        let full = lua
            .load(SOURCE)
            .set_name("=sample")
            .into_function()
            .unwrap();
        let bytes = full.dump(false);
        let lean = without_local_names(&bytes).expect("a Lua 5.4 dump");
        assert!(lean.len() < bytes.len());
        let loaded = lua
            .load(&lean[..])
            .set_mode(mlua::chunk::ChunkMode::Binary)
            .into_function()
            .unwrap();
        let run: Function = loaded.call(()).unwrap();
        let (text, half, big): (String, f64, f64) = run.call(false).unwrap();
        assert_eq!((text.as_str(), half, big), ("HELLO!!!", 1.5, 2f64.powi(53)));
        let error = run.call::<()>(true).unwrap_err().to_string();
        assert!(error.contains("sample:5: failed here"), "{error}");
        let names: (Option<String>, Option<String>) = lua
            .load("local f = ...; return debug.getupvalue(f, 1), debug.getlocal(f, 1)")
            .call(run)
            .unwrap();
        assert_eq!(names.0.as_deref(), Some("(no name)"));
        assert_eq!(names.1, None);
    }

    #[test]
    fn anything_else_is_refused() {
        assert!(without_local_names(b"").is_none());
        assert!(without_local_names(b"\x1bLua\x53rest").is_none());
        let lua = Lua::new();
        let bytes = lua.load(SOURCE).into_function().unwrap().dump(false);
        for cut in [bytes.len() - 1, bytes.len() / 2, 40] {
            assert!(without_local_names(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        let stripped = lua.load(SOURCE).into_function().unwrap().dump(true);
        assert!(
            without_local_names(&stripped).is_some(),
            "a stripped dump rewrites to itself"
        );
    }
}
