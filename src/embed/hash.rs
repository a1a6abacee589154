//! A deterministic embedder for fast unit tests. Not a model: similar texts share words and
//! character trigrams, so it ranks near-duplicates well and paraphrases badly. Never the only
//! proof that search works.

use super::{Embedder, normalize};
use crate::error::Result;

/// Feature-hashing embedder (words and character trigrams, signed buckets).
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    id: String,
}

impl HashEmbedder {
    /// An embedder of `dim` dimensions (model id `hash-<dim>`).
    pub fn new(dim: usize) -> Self {
        HashEmbedder { dim, id: format!("hash-{dim}") }
    }
}

impl Default for HashEmbedder {
    /// 384 dimensions, like the real model.
    fn default() -> Self {
        Self::new(384)
    }
}

fn fnv(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf29ce484222325u64 ^ seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; self.dim];
                let lower = t.to_lowercase();
                let mut add = |feature: &[u8], weight: f32| {
                    let h = fnv(feature, 7);
                    let idx = (h % self.dim as u64) as usize;
                    let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
                    v[idx] += sign * weight;
                };
                for w in lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    add(w.as_bytes(), 1.0);
                    let chars: Vec<char> = format!("^{w}$").chars().collect();
                    for tri in chars.windows(3) {
                        add(tri.iter().collect::<String>().as_bytes(), 0.3);
                    }
                }
                normalize(&mut v);
                v
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::dot;

    #[test]
    fn deterministic_unit_and_lexically_sensible() {
        let e = HashEmbedder::default();
        let v = e.embed(&["the cat sat", "the cat sat", "quantum flux capacitor"]).unwrap();
        assert_eq!(v[0], v[1]);
        assert!((dot(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        let near = e.embed_one("a cat sat down").unwrap();
        assert!(dot(&near, &v[0]) > dot(&near, &v[2]));
    }
}
