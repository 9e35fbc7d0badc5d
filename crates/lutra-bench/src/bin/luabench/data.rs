//! The input files of the search and word-count runs, generated once per size and
//! kept under `target/bench/lua-data/` (deterministic: the same size gives the same
//! bytes, so an existing file is reused).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

const LEVELS: [&str; 5] = ["INFO", "INFO", "DEBUG", "WARN", "ERROR"];
const PATHS: [&str; 6] = [
    "/api/v1/users",
    "/api/v2/orders",
    "/static/app.js",
    "/api/v1/login",
    "/health",
    "/api/v2/cart",
];
const USERS: [&str; 5] = ["alice", "bob", "carol", "admin", "dave"];
const WORDS: [&str; 24] = [
    "the",
    "of",
    "and",
    "process",
    "channel",
    "worker",
    "transaction",
    "commit",
    "abort",
    "retry",
    "lock",
    "elision",
    "guild",
    "fiber",
    "thread",
    "core",
    "memory",
    "table",
    "string",
    "number",
    "send",
    "receive",
    "select",
    "yield",
];

/// A log file of about `lines` lines (an access log; the search strings of
/// `search.lua` occur on a few percent of lines), copied `copies` times: the paths.
pub(crate) fn log_files(dir: &Path, lines: usize, copies: usize) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let first = dir.join(format!("access-{lines}-1.log"));
    if !first.exists() {
        write_log(&first, lines)?;
    }
    let mut paths = vec![first.clone()];
    for copy in 2..=copies {
        let path = dir.join(format!("access-{lines}-{copy}.log"));
        if !path.exists() {
            std::fs::copy(&first, &path)?;
        }
        paths.push(path);
    }
    Ok(paths)
}

fn write_log(path: &Path, lines: usize) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut out = BufWriter::new(std::fs::File::create(&tmp)?);
    let mut rng = fastrand::Rng::with_seed(1);
    for i in 0..lines {
        let level = LEVELS[rng.usize(..LEVELS.len())];
        let status = match rng.u32(..100) {
            0 => 503,
            1..=3 => 404,
            _ => 200,
        };
        let note = if rng.u32(..200) == 0 {
            " timeout after 30s"
        } else {
            ""
        };
        writeln!(
            out,
            "2024-03-{:02}T{:02}:{:02}:{:02} {level:<5} req={i} user={} path={} status={status} ms={}{note}",
            1 + i % 28,
            rng.u32(..24),
            rng.u32(..60),
            rng.u32(..60),
            USERS[rng.usize(..USERS.len())],
            PATHS[rng.usize(..PATHS.len())],
            rng.u32(..900),
        )?;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(tmp, path)
}

/// `count` text documents of about `words` words each (a skewed vocabulary plus
/// numbered rare words, so documents differ in distinct words): the paths.
pub(crate) fn text_files(dir: &Path, count: usize, words: usize) -> io::Result<Vec<PathBuf>> {
    let dir = dir.join(format!("docs-{count}x{words}"));
    std::fs::create_dir_all(&dir)?;
    let mut paths = Vec::with_capacity(count);
    for index in 0..count {
        let path = dir.join(format!("doc{index:03}.txt"));
        if !path.exists() {
            write_text(&path, index as u64, words)?;
        }
        paths.push(path);
    }
    Ok(paths)
}

fn write_text(path: &Path, seed: u64, words: usize) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut out = BufWriter::new(std::fs::File::create(&tmp)?);
    let mut rng = fastrand::Rng::with_seed(seed + 100);
    let rare = 200 + seed as u32 * 37;
    for i in 0..words {
        let word = WORDS[rng.usize(..WORDS.len()).min(rng.usize(..WORDS.len()))];
        if rng.u32(..10) == 0 {
            write!(out, "{word}{}", rng.u32(..rare))?;
        } else {
            out.write_all(word.as_bytes())?;
        }
        out.write_all(if i % 12 == 11 { b".\n" } else { b" " })?;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(tmp, path)
}
