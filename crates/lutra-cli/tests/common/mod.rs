//! What the `lutra` program's integration tests share: a Lua script written to a
//! directory of its own, removed when the test is done with it.

use std::path::{Path, PathBuf};

/// A script file in a fresh directory under the system's temporary directory; the
/// directory goes when the value is dropped.
pub(crate) struct ScriptFile {
    dir: PathBuf,
    path: PathBuf,
}

impl ScriptFile {
    /// Writes `text` to `name` in a directory named after `test` and this process.
    pub(crate) fn new(test: &str, name: &str, text: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("lutra-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        Self { dir, path }
    }

    /// The script's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
