//! What the examples share: the PTX corpus they measure (the first
//! argument that is not an option, else `GPUCHECK_CORPUS`, else `../shared/corpus/ptx`), its
//! `.ptx` files in name order; a clear exit when there is none.

use std::path::PathBuf;

pub fn corpus_files() -> Vec<PathBuf> {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .or_else(|| std::env::var("GPUCHECK_CORPUS").ok())
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/ptx").into());
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("error: no PTX corpus at {dir}: name a folder of .ptx files, or set GPUCHECK_CORPUS");
        std::process::exit(2);
    };
    let mut files: Vec<_> = entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "ptx")).collect();
    files.sort();
    files
}
