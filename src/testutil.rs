//! Fixtures shared by tests and benches (feature `testing`): a seeded RNG and clustered
//! synthetic vectors.

/// A small seeded RNG (xorshift64*), so tests and benches print and reuse their seed.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Standard normal (Box–Muller).
    pub fn gauss(&mut self) -> f32 {
        let u1 = self.uniform().max(1e-7);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
    }
}

/// Seeded clustered unit vectors: `clusters` random centres, each point a centre plus noise of
/// 1.2× the centre's scale. Closer to real sentence embeddings than uniform noise, which no ANN
/// index handles well.
pub fn clustered_vectors(n: usize, dim: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed.max(1));
    let centres: Vec<Vec<f32>> = (0..clusters).map(|_| (0..dim).map(|_| rng.gauss()).collect()).collect();
    (0..n)
        .map(|_| {
            let c = &centres[(rng.next_u64() % clusters as u64) as usize];
            let mut v: Vec<f32> = c.iter().map(|x| x + 1.2 * rng.gauss()).collect();
            crate::embed::normalize(&mut v);
            v
        })
        .collect()
}

/// The process's ONNX Runtime environment, loading the library at `runtime` if no embedder has
/// yet: ONNX Runtime allows one per process, so a reference implementation run beside convdex
/// (fastembed in `tests/integration/embed.rs` and `benches/embed.rs`) must share it.
pub fn onnx_environment(runtime: &std::path::Path) -> crate::Result<ort::environment::Environment> {
    crate::embed::onnx_environment(runtime)
        .map_err(|reason| crate::Error::Runtime { path: runtime.to_path_buf(), reason })
}
