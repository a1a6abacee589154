//! The root of a convdex data directory: one sub-directory per collection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde::{Deserialize, Serialize};

use crate::collection::{Collection, CollectionMeta, CollectionOptions};
use crate::embed::{EmbedOptions, Embedder, FastEmbedder};
use crate::error::{Error, Result};

/// Options of an [`Index`]. Every field documents its default.
#[derive(Clone, Default)]
pub struct Options {
    /// The embedder. Default: `None`, which loads [`FastEmbedder`] with [`Options::embed`] the
    /// first time a collection is opened.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Options for the default embedder. Default: [`EmbedOptions::default`].
    pub embed: EmbedOptions,
    /// Options for every collection. Default: [`CollectionOptions::default`].
    pub collection: CollectionOptions,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("embedder", &self.embedder.as_ref().map(|e| e.model_id().to_string()))
            .field("embed", &self.embed)
            .field("collection", &self.collection)
            .finish()
    }
}

impl Options {
    /// Sets [`Options::embedder`].
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }
    /// Sets [`Options::collection`].
    pub fn collection(mut self, options: CollectionOptions) -> Self {
        self.collection = options;
        self
    }
}

/// A collection's identity, as listed by [`Index::collections`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CollectionInfo {
    /// Tenant name.
    pub tenant: String,
    /// Project name.
    pub project: String,
    /// `<tenant>_<project>_conversations`.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
}

/// A data directory holding collections.
pub struct Index {
    root: PathBuf,
    options: Options,
    embedder: OnceLock<Arc<dyn Embedder>>,
    open: Mutex<HashMap<String, Weak<Collection>>>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("root", &self.root).field("options", &self.options).finish_non_exhaustive()
    }
}

/// Lower-cases and validates a tenant or project name (`[a-z0-9][a-z0-9_-]*`, ≤ 64 bytes).
pub fn validate_name(what: &'static str, name: &str) -> Result<String> {
    let lower = name.to_lowercase();
    let err = |reason| Error::InvalidName { what, name: name.to_string(), reason };
    if lower.is_empty() {
        return Err(err("it is empty"));
    }
    if lower.len() > 64 {
        return Err(err("it is longer than 64 bytes"));
    }
    let mut chars = lower.chars();
    let first = chars.next().expect("non-empty");
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(err("it must start with a letter or digit"));
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(err("it contains a character other than a-z, 0-9, `_` and `-`"));
    }
    Ok(lower)
}

/// `<tenant>_<project>_conversations` for already-validated names.
pub fn collection_name(tenant: &str, project: &str) -> String {
    format!("{tenant}_{project}_conversations")
}

const IDENTITY_FILE: &str = "collection.json";

impl Index {
    /// Opens (creating if needed) a data directory.
    pub fn open(root: impl AsRef<Path>, options: Options) -> Result<Index> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
        let embedder = OnceLock::new();
        if let Some(e) = &options.embedder {
            let _ = embedder.set(e.clone());
        }
        Ok(Index { root, options, embedder, open: Mutex::new(HashMap::new()) })
    }

    /// The data directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The options this index was opened with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether this process holds the named collection open.
    pub(crate) fn is_open(&self, name: &str) -> bool {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).get(name).and_then(Weak::upgrade).is_some()
    }

    /// The embedder, loading the default model on first use.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let e: Arc<dyn Embedder> = Arc::new(FastEmbedder::with_options(self.options.embed.clone())?);
        Ok(self.embedder.get_or_init(|| e).clone())
    }

    /// Opens (creating if needed) the collection of `tenant` and `project`. Names are
    /// lower-cased and validated. The same collection is shared within a process.
    pub fn collection(&self, tenant: &str, project: &str) -> Result<Arc<Collection>> {
        self.collection_with(tenant, project, None)
    }

    /// Like [`Index::collection`], recording the project's path on creation.
    pub fn collection_with(&self, tenant: &str, project: &str, project_path: Option<&str>) -> Result<Arc<Collection>> {
        let tenant = validate_name("tenant", tenant)?;
        let project = validate_name("project", project)?;
        let name = collection_name(&tenant, &project);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = open.get(&name).and_then(Weak::upgrade) {
            return Ok(c);
        }
        let dir = self.root.join(&name);
        let meta = CollectionMeta {
            tenant: tenant.clone(),
            project: project.clone(),
            project_path: project_path.map(str::to_string),
            last_indexed_at_ms: None,
        };
        let coll = Arc::new(Collection::open(&dir, &name, meta, self.embedder()?, self.options.collection.clone())?);
        let identity = dir.join(IDENTITY_FILE);
        if !identity.exists() {
            let info = CollectionInfo { tenant, project, name: name.clone(), dir: PathBuf::new() };
            let text = serde_json::to_string(&info).map_err(|e| Error::io(&identity, std::io::Error::other(e)))?;
            std::fs::write(&identity, text).map_err(|e| Error::io(&identity, e))?;
        }
        open.insert(name, Arc::downgrade(&coll));
        Ok(coll)
    }

    /// The collections in this data directory, sorted by name.
    pub fn collections(&self) -> Result<Vec<CollectionInfo>> {
        let mut out = Vec::new();
        let rd = std::fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, e))?;
        for entry in rd.flatten() {
            let dir = entry.path();
            let Ok(text) = std::fs::read_to_string(dir.join(IDENTITY_FILE)) else { continue };
            let Ok(mut info) = serde_json::from_str::<CollectionInfo>(&text) else { continue };
            if !dir.join("data.redb").exists() {
                continue;
            }
            info.dir = dir;
            out.push(info);
        }
        out.sort();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        assert_eq!(validate_name("project", "ConvDex").unwrap(), "convdex");
        assert_eq!(validate_name("project", "my_proj-2").unwrap(), "my_proj-2");
        for bad in ["", "..", "a/b", "a b", "_x", "-x", "é", "a.b", &"x".repeat(65)] {
            let err = validate_name("project", bad).unwrap_err();
            assert!(matches!(err, Error::InvalidName { .. }), "{bad}: {err}");
        }
    }
}
